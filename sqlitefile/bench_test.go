package sqlitefile_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
	"github.com/anarchon/anarchon/sqlitebackend"
)

// rawInsert is the raw operation a plain claim is measured against: an
// insert of a new (job, slot) row that does nothing if the row exists.
const rawInsert = `INSERT INTO raw_claims (job, slot, token) VALUES (?, ?, ?) ON CONFLICT (job, slot) DO NOTHING`

// rawTable is the bare claims table of the benchmarks in be's file.
func rawTable(be *sqlitebackend.Backend) sqlbackendtest.RawTable {
	db := be.DB()
	return sqlbackendtest.RawTable{
		Create: func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, `CREATE TABLE raw_claims (job TEXT NOT NULL, slot INTEGER NOT NULL, token TEXT NOT NULL, PRIMARY KEY (job, slot))`)
			return err
		},
		Insert: func(ctx context.Context, job string, slot int64, token string) (int64, error) {
			res, err := db.ExecContext(ctx, rawInsert, job, slot, token)
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

// BenchmarkClaimBatch measures batches of 256 plain claims (256 jobs, a
// new slot each) on one file (sqlbackendtest.ClaimBatch): a batch that
// wins every slot, the same slots again under another token, and the raw
// operation, 256 prepared INSERT … ON CONFLICT DO NOTHING of new rows in
// one BEGIN IMMEDIATE transaction.
func BenchmarkClaimBatch(b *testing.B) {
	be := open(b, 1)[0]
	ctx := b.Context()
	if err := be.Init(ctx); err != nil {
		b.Fatal(err)
	}
	db := be.DB()
	if err := rawTable(be).Create(ctx); err != nil {
		b.Fatal(err)
	}
	sqlbackendtest.ClaimBatch(b, be, be, func(ctx context.Context, slot int64) error {
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return err
		}
		st, err := c.PrepareContext(ctx, rawInsert)
		if err != nil {
			return err
		}
		defer st.Close()
		for k := range sqlbackendtest.BatchSize {
			if _, err := st.ExecContext(ctx, "j"+strconv.Itoa(k), slot, "t"); err != nil {
				return err
			}
		}
		_, err = c.ExecContext(ctx, "COMMIT")
		return err
	})
}
