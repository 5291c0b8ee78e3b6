package sqlitefile_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
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
	be, raw := batchBench(b)
	sqlbackendtest.ClaimBatch(b, be, be, raw)
}

// BenchmarkClaimRunsBatch does the same with lease claims
// (sqlbackendtest.ClaimRunsBatch): the losing batch meets the winner's
// live leases.
func BenchmarkClaimRunsBatch(b *testing.B) {
	be, raw := batchBench(b)
	rb := be.Runs().(anarchon.RunBatchClaimer)
	sqlbackendtest.ClaimRunsBatch(b, rb, rb, raw)
}

// BenchmarkClaimRunsHistory measures a batch of 256 lease claims under
// overlap skip, when each job keeps no settled run and when it keeps 100
// (the default HistorySize), against the raw batch insert
// (sqlbackendtest.ClaimRunsHistory): the overlap check finds the job's
// live runs through the index runs_live, whatever the history.
func BenchmarkClaimRunsHistory(b *testing.B) {
	for _, h := range []int{0, 100} {
		b.Run("history="+strconv.Itoa(h), func(b *testing.B) {
			be, raw := batchBench(b)
			sqlbackendtest.ClaimRunsHistory(b, be.Runs().(sqlbackendtest.HistoryRuns), h, raw)
		})
	}
}

// batchBench opens an initialised backend on a new file with a bare
// claims table, and returns it with the raw operation of a batch: 256
// prepared INSERT … ON CONFLICT DO NOTHING of new rows in one BEGIN
// IMMEDIATE transaction.
func batchBench(b *testing.B) (*sqlitebackend.Backend, func(ctx context.Context, slot int64) error) {
	be := open(b, 1)[0]
	ctx := b.Context()
	if err := be.Init(ctx); err != nil {
		b.Fatal(err)
	}
	db := be.DB()
	if err := rawTable(be).Create(ctx); err != nil {
		b.Fatal(err)
	}
	return be, func(ctx context.Context, slot int64) error {
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
	}
}

// BenchmarkResultBatch measures a batch of 256 plain results, one each of
// 256 jobs whose histories are full (100 records, the default size), so
// that every result trims a record and a run: a burst's results in a
// long-running service. Each iteration claims a new slot of every job
// (untimed), saves their results with one anarchon.ResultBatcher call
// (result-us, µs per result), and inserts 256 result rows of the same
// shape into a bare table with prepared statements in one BEGIN IMMEDIATE
// transaction, the raw operation (raw-us); result/raw is the median of
// each iteration's ratio.
func BenchmarkResultBatch(b *testing.B) {
	be, _ := batchBench(b)
	ctx := b.Context()
	db := be.DB()
	if _, err := db.ExecContext(ctx, `CREATE TABLE raw_results (job TEXT NOT NULL, token TEXT NOT NULL, slot INTEGER NOT NULL,
		instance TEXT NOT NULL, status TEXT NOT NULL, saved_at INTEGER NOT NULL, PRIMARY KEY (job, token))`); err != nil {
		b.Fatal(err)
	}
	const n = sqlbackendtest.BatchSize
	slot0 := time.Now().Truncate(time.Second).Add(-48 * time.Hour).UnixMilli()
	round := func(r int) (in []anarchon.ClaimInput, res []anarchon.SaveResultInput) {
		for k := range n {
			c := anarchon.ClaimInput{Job: "j" + strconv.Itoa(k), Slot: slot0 + int64(r)*1000, Token: "t" + strconv.Itoa(r), InstanceID: "a"}
			in = append(in, c)
			res = append(res, anarchon.SaveResultInput{Job: c.Job, Result: anarchon.StoredResult{
				Slot: c.Slot, Token: c.Token, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}})
		}
		return in, res
	}
	save := func(r int) time.Duration {
		in, res := round(r)
		if _, err := be.ClaimBatch(ctx, in); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		errs, err := be.SaveResults(ctx, res)
		d := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range errs {
			if e != nil {
				b.Fatal(e)
			}
		}
		return d
	}
	raw := func(r int) time.Duration {
		t0 := time.Now()
		c, err := db.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			b.Fatal(err)
		}
		st, err := c.PrepareContext(ctx, `INSERT INTO raw_results (job, token, slot, instance, status, saved_at) VALUES (?, ?, ?, ?, ?, ?)`)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		for k := range n {
			if _, err := st.ExecContext(ctx, "j"+strconv.Itoa(k), "t"+strconv.Itoa(r), slot0+int64(r)*1000, "a", "success", slot0); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	const full = anarchon.DefaultHistorySize
	for r := range full {
		save(r)
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 / n }
	var saved, rawUs, ratio []float64
	for r := full; b.Loop(); r++ {
		s, w := us(save(r)), us(raw(r))
		saved, rawUs, ratio = append(saved, s), append(rawUs, w), append(ratio, s/w)
	}
	b.ReportMetric(sqlbackendtest.Median(saved), "result-us")
	b.ReportMetric(sqlbackendtest.Median(rawUs), "raw-us")
	b.ReportMetric(sqlbackendtest.Median(ratio), "result/raw")
}
