package pgbackend_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

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
// new slot each) on one server: a batch that wins every slot (won-us), the
// same slots again under another token from a second backend (lost-us),
// and the raw operation, one INSERT … SELECT FROM unnest(…) ON CONFLICT
// DO NOTHING of the 256 new rows (raw-us), each in µs per claim, medians
// over the iterations; won/raw is the median of each iteration's ratio.
func BenchmarkClaimBatch(b *testing.B) {
	const n = 256
	schema := freshSchema(b)
	bes := open(b, 2, 2, schema)
	ctx := b.Context()
	for _, be := range bes {
		if err := be.Init(ctx); err != nil {
			b.Fatal(err)
		}
	}
	tbl := rawTable(bes[0], schema)
	if err := tbl.Create(ctx); err != nil {
		b.Fatal(err)
	}
	jobs := make([]string, n)
	for k := range jobs {
		jobs[k] = "j" + strconv.Itoa(k)
	}
	raw := func(slot int64) {
		slots := make([]int64, n)
		tokens := make([]string, n)
		for k := range slots {
			slots[k], tokens[k] = slot, "t"
		}
		if _, err := bes[0].Pool().Exec(ctx, `INSERT INTO "`+schema+`".raw_claims (job, slot, token)
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[]) ON CONFLICT (job, slot) DO NOTHING`, jobs, slots, tokens); err != nil {
			b.Fatal(err)
		}
	}
	batch := func(be *pgbackend.Backend, slot int64, token string, want bool) {
		in := make([]anarchon.ClaimInput, n)
		for k := range in {
			in[k] = anarchon.ClaimInput{Job: jobs[k], Slot: slot, Token: token, InstanceID: token}
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
		return float64(time.Since(t0).Nanoseconds()) / 1000 / n
	}
	slot0 := time.Now().Truncate(time.Minute).Add(-48 * time.Hour).UnixMilli()
	var won, lost, rawUs, ratio []float64
	for i := 0; b.Loop(); i++ {
		slot := slot0 + int64(i)*1000
		w := timed(func() { batch(bes[0], slot, "t", true) })
		l := timed(func() { batch(bes[1], slot, "u", false) })
		r := timed(func() { raw(slot) })
		won, lost, rawUs, ratio = append(won, w), append(lost, l), append(rawUs, r), append(ratio, w/r)
	}
	b.ReportMetric(median(won), "won-us")
	b.ReportMetric(median(lost), "lost-us")
	b.ReportMetric(median(rawUs), "raw-us")
	b.ReportMetric(median(ratio), "won/raw")
}

// median is the middle value of v (the upper one of an even count).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
