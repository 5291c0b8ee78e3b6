package pgbackend_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/pgbackend"
	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
)

// rawTable is the bare claims table of the benchmarks in be's schema.
func rawTable(be *pgbackend.Backend, schema string) sqlbackendtest.RawTable {
	pool := be.Pool()
	raw := `"` + schema + `".raw_claims`
	return sqlbackendtest.RawTable{
		Create: func(ctx context.Context) error {
			_, err := pool.Exec(ctx, `CREATE TABLE `+raw+` (job TEXT NOT NULL, slot BIGINT NOT NULL, token TEXT NOT NULL, PRIMARY KEY (job, slot))`)
			return err
		},
		Insert: func(ctx context.Context, job string, slot int64, token string) (int64, error) {
			tag, err := pool.Exec(ctx, `INSERT INTO `+raw+` (job, slot, token) VALUES ($1, $2, $3) ON CONFLICT (job, slot) DO NOTHING`, job, slot, token)
			return tag.RowsAffected(), err
		},
	}
}

// BenchmarkClaimVsRawInsert measures anarchon's plain claim against the
// bare INSERT … ON CONFLICT DO NOTHING it is built on, on the same server
// and pool in the same run, alternating them, and reports the ratio
// (claim/raw).
func BenchmarkClaimVsRawInsert(b *testing.B) {
	schema := freshSchema(b)
	be := open(b, 1, 2, schema)[0]
	sqlbackendtest.ClaimVsRawInsert(b, be, rawTable(be, schema))
}

// BenchmarkLeaseClaimVsRawInsert does the same for the lease claim (one
// transaction with an advisory lock and a row lock).
func BenchmarkLeaseClaimVsRawInsert(b *testing.B) {
	schema := freshSchema(b)
	be := open(b, 1, 2, schema)[0]
	sqlbackendtest.LeaseClaimVsRawInsert(b, be, rawTable(be, schema))
}

// BenchmarkClaimBatch measures batches of 256 plain claims (256 jobs, a
// new slot each) on one server (sqlbackendtest.ClaimBatch): a batch that
// wins every slot, the same slots again under another token from a second
// backend, and the raw operation, one INSERT … SELECT FROM unnest(…) ON
// CONFLICT DO NOTHING of the 256 new rows.
func BenchmarkClaimBatch(b *testing.B) {
	bes, raw := batchBench(b)
	sqlbackendtest.ClaimBatch(b, bes[0], bes[1], raw)
}

// BenchmarkClaimRunsBatch does the same with lease claims
// (sqlbackendtest.ClaimRunsBatch): the losing batch meets the winner's
// live leases.
func BenchmarkClaimRunsBatch(b *testing.B) {
	bes, raw := batchBench(b)
	sqlbackendtest.ClaimRunsBatch(b, bes[0].Runs().(anarchon.RunBatchClaimer), bes[1].Runs().(anarchon.RunBatchClaimer), raw)
}

// BenchmarkClaimRunsHistory measures a batch of 256 lease claims under
// overlap skip, when each job keeps no settled run and when it keeps 100
// (the default HistorySize), against the raw batch insert
// (sqlbackendtest.ClaimRunsHistory): the overlap check finds the job's
// live runs through the index runs_live, whatever the history.
func BenchmarkClaimRunsHistory(b *testing.B) {
	for _, h := range []int{0, 100} {
		b.Run("history="+strconv.Itoa(h), func(b *testing.B) {
			bes, raw := batchBench(b)
			sqlbackendtest.ClaimRunsHistory(b, bes[0].Runs().(sqlbackendtest.HistoryRuns), h, raw)
		})
	}
}

// batchBench opens two initialised backends on a fresh schema with a bare
// claims table, and returns them with the raw operation of a batch: one
// INSERT … SELECT FROM unnest(…) ON CONFLICT DO NOTHING of
// sqlbackendtest.BatchSize new rows.
func batchBench(b *testing.B) ([]*pgbackend.Backend, func(ctx context.Context, slot int64) error) {
	schema := freshSchema(b)
	bes := open(b, 2, 2, schema)
	ctx := b.Context()
	for _, be := range bes {
		if err := be.Init(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if err := rawTable(bes[0], schema).Create(ctx); err != nil {
		b.Fatal(err)
	}
	n := sqlbackendtest.BatchSize
	jobs, slots, tokens := make([]string, n), make([]int64, n), make([]string, n)
	for k := range jobs {
		jobs[k], tokens[k] = "j"+strconv.Itoa(k), "t"
	}
	return bes, func(ctx context.Context, slot int64) error {
		for k := range slots {
			slots[k] = slot
		}
		_, err := bes[0].Pool().Exec(ctx, `INSERT INTO "`+schema+`".raw_claims (job, slot, token)
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[]) ON CONFLICT (job, slot) DO NOTHING`, jobs, slots, tokens)
		return err
	}
}
