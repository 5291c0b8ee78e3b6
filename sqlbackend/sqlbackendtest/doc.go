// Package sqlbackendtest holds the checks and benchmarks that every
// backend built on package sqlbackend runs the same way (PostgreSQL in
// module pgbackend, SQLite in module sqlitefile), so that each lives in one
// place. It depends on the standard library, package testing and the root
// module only, so both backend modules can import it from their tests.
//
// # Usage
//
// A backend's test gives each check an [Open] that returns n handles on one
// fresh database — n separate clients, like n processes of an application:
//
//	func TestHistoryRecords(t *testing.T) {
//		sqlbackendtest.HistoryRecords(t, func(t testing.TB, n int) []anarchon.Backend {
//			return sqlbackendtest.Backends(open(t, n))
//		})
//	}
//
// Benchmarks take one backend and, where they compare with a bare insert,
// a [RawTable] written in the backend's SQL.
//
// # Sections
//
//   - History records of lease runs that a takeover ends: [HistoryRecords].
//   - Concurrent schema creation: [ConcurrentMigration].
//   - Benchmarks against a bare INSERT … ON CONFLICT DO NOTHING:
//     [ClaimVsRawInsert], [LeaseClaimVsRawInsert].
//   - FinishResult against Finish followed by SaveResult: [FinishResult].
package sqlbackendtest

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/anarchon/anarchon"
)

// Open returns n handles on one fresh database, closed (and the database
// removed, where it must be) when t ends. It fails t if it cannot.
type Open func(t testing.TB, n int) []anarchon.Backend

// Backends converts a slice of concrete backends, such as the
// []*pgbackend.Backend of a test helper, to the []anarchon.Backend an
// [Open] returns.
func Backends[B anarchon.Backend](bs []B) []anarchon.Backend {
	out := make([]anarchon.Backend, len(bs))
	for i, b := range bs {
		out[i] = b
	}
	return out
}

// runs returns b's run store, failing t if b has no leases.
func runs(t testing.TB, b anarchon.Backend) anarchon.RunStore {
	t.Helper()
	lb, ok := b.(anarchon.LeaseBackend)
	if !ok {
		t.Fatalf("%T is not an anarchon.LeaseBackend", b)
	}
	return lb.Runs()
}

// randHex returns 2n random hexadecimal digits.
func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
