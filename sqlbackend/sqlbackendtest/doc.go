// Package sqlbackendtest holds the checks and benchmarks that every
// backend built on package sqlbackend runs the same way (PostgreSQL in
// module pgbackend, SQLite in module sqlitefile, MySQL and MariaDB in
// module mysqlbackend), so that each lives in one place. It depends on
// the standard library, package testing and the root module only, so
// every backend module can import it from its tests.
//
// # Usage
//
// A backend's test gives each check an [Open] that returns n handles on one
// fresh database — n separate clients, like n processes of an application:
//
//	func TestConcurrentMigration(t *testing.T) {
//		sqlbackendtest.ConcurrentMigration(t, func(t testing.TB, n int) []anarchon.Backend {
//			return sqlbackendtest.Backends(open(t, n))
//		})
//	}
//
// Benchmarks take one backend and, where they compare with a bare insert,
// a [RawTable] written in the backend's SQL.
//
// # Sections
//
//   - Concurrent schema creation: [ConcurrentMigration]; a database made
//     by an older version brought up to date: [OldSchema].
//   - OS processes racing for the same slots: [MultiProcessRace], whose
//     children run [RaceChild].
//   - The test server's environment variable, skipped without it (failed
//     under CI=true): [ServerEnv].
//   - Statements per claim, counted by a [Counter] around the backend's
//     connection: [ClaimRoundTrips].
//   - Benchmarks against a bare INSERT … ON CONFLICT DO NOTHING:
//     [ClaimVsRawInsert], [LeaseClaimVsRawInsert].
//   - FinishResult against Finish followed by SaveResult: [FinishResult].
package sqlbackendtest

import (
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

// finisher returns b's run store as an anarchon.ResultFinisher, failing t
// if it is not one.
func finisher(t testing.TB, b anarchon.Backend) anarchon.ResultFinisher {
	t.Helper()
	f, ok := runs(t, b).(anarchon.ResultFinisher)
	if !ok {
		t.Fatalf("the run store of %T is not an anarchon.ResultFinisher", b)
	}
	return f
}
