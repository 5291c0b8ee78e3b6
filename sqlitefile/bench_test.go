package sqlitefile_test

import (
	"context"
	"slices"
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
// new slot each) on one file: a batch that wins every slot (won-us), the
// same slots again under another token (lost-us), and the raw operation,
// 256 prepared INSERT … ON CONFLICT DO NOTHING of new rows in one BEGIN
// IMMEDIATE transaction (raw-us), each in µs per claim, medians over the
// iterations; won/raw is the median of each iteration's ratio.
func BenchmarkClaimBatch(b *testing.B) {
	const n = 256
	be := open(b, 1)[0]
	ctx := b.Context()
	if err := be.Init(ctx); err != nil {
		b.Fatal(err)
	}
	db := be.DB()
	if err := rawTable(be).Create(ctx); err != nil {
		b.Fatal(err)
	}
	raw := func(slot int64) {
		c, err := db.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			b.Fatal(err)
		}
		st, err := c.PrepareContext(ctx, rawInsert)
		if err != nil {
			b.Fatal(err)
		}
		for k := range n {
			if _, err := st.ExecContext(ctx, "j"+strconv.Itoa(k), slot, "t"); err != nil {
				b.Fatal(err)
			}
		}
		_ = st.Close()
		if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
			b.Fatal(err)
		}
	}
	batch := func(slot int64, token string, want bool) {
		in := make([]anarchon.ClaimInput, n)
		for k := range in {
			in[k] = anarchon.ClaimInput{Job: "j" + strconv.Itoa(k), Slot: slot, Token: token, InstanceID: "a"}
		}
		out, err := be.ClaimBatch(ctx, in)
		if err != nil {
			b.Fatal(err)
		}
		for _, a := range out {
			if a.Err != nil || a.Won != want {
				b.Fatalf("claim: %+v, want won %v", a, want)
			}
		}
	}
	timed := func(f func()) float64 {
		t0 := time.Now()
		f()
		return float64(time.Since(t0).Microseconds()) / n
	}
	slot0 := time.Now().Truncate(time.Minute).Add(-48 * time.Hour).UnixMilli()
	var won, lost, rawUs, ratio []float64
	for i := 0; b.Loop(); i++ {
		slot := slot0 + int64(i)*1000
		w := timed(func() { batch(slot, "t", true) })
		l := timed(func() { batch(slot, "u", false) })
		r := timed(func() { raw(slot) })
		won, lost, rawUs, ratio = append(won, w), append(lost, l), append(rawUs, r), append(ratio, w/r)
	}
	b.ReportMetric(median(won), "won-us")
	b.ReportMetric(median(lost), "lost-us")
	b.ReportMetric(median(rawUs), "raw-us")
	b.ReportMetric(median(ratio), "won/raw")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
