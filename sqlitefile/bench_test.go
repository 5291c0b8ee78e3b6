package sqlitefile_test

import (
	"context"
	"testing"

	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
	"github.com/anarchon/anarchon/sqlitebackend"
)

// rawTable is the bare claims table of the benchmarks in be's file.
func rawTable(be *sqlitebackend.Backend) sqlbackendtest.RawTable {
	db := be.DB()
	return sqlbackendtest.RawTable{
		Create: func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, `CREATE TABLE raw_claims (job TEXT NOT NULL, slot INTEGER NOT NULL, token TEXT NOT NULL, PRIMARY KEY (job, slot))`)
			return err
		},
		Insert: func(ctx context.Context, job string, slot int64, token string) (int64, error) {
			res, err := db.ExecContext(ctx, `INSERT INTO raw_claims (job, slot, token) VALUES (?, ?, ?) ON CONFLICT (job, slot) DO NOTHING`, job, slot, token)
			if err != nil {
				return 0, err
			}
			return res.RowsAffected()
		},
	}
}

// BenchmarkClaimVsRawInsert measures anarchon's plain claim against the
// bare INSERT … ON CONFLICT DO NOTHING it is built on, on the same file in
// the same run, alternating them, and reports the ratio (claim/raw).
func BenchmarkClaimVsRawInsert(b *testing.B) {
	be := open(b, 1)[0]
	sqlbackendtest.ClaimVsRawInsert(b, be, rawTable(be))
}

// BenchmarkLeaseClaimVsRawInsert does the same for the lease claim (one
// BEGIN IMMEDIATE transaction).
func BenchmarkLeaseClaimVsRawInsert(b *testing.B) {
	be := open(b, 1)[0]
	sqlbackendtest.LeaseClaimVsRawInsert(b, be, rawTable(be))
}

// BenchmarkFinishResult times FinishResult (one BEGIN IMMEDIATE
// transaction) against Finish followed by SaveResult (two) on the same
// file in the same run, alternating them, each after a won lease claim of
// its own slot, and reports the ratio (one/two).
func BenchmarkFinishResult(b *testing.B) {
	sqlbackendtest.FinishResult(b, open(b, 1)[0])
}
