package sqlbackendtest

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// RawTable is a bare claims table, (job, slot, token) with the primary key
// (job, slot), in the database of the backend under test: the baseline a
// claim is measured against.
type RawTable struct {
	// Create creates the table. It is called once, after the backend's
	// own tables exist.
	Create func(ctx context.Context) error
	// Insert inserts one row with INSERT … ON CONFLICT (job, slot) DO
	// NOTHING and returns the number of rows inserted (1, or 0 on a
	// conflict).
	Insert func(ctx context.Context, job string, slot int64, token string) (int64, error)
}

// ClaimVsRawInsert measures be's plain claim (anarchon.Backend.Claim)
// against raw's bare insert on the same database in the same run,
// alternating them, and reports the mean of each (raw-ns/op,
// claim-ns/op) and their ratio (claim/raw). It calls be.PrepareJob first,
// and fails b if an insert or a claim does not win.
func ClaimVsRawInsert(b *testing.B, be anarchon.Backend, raw RawTable) {
	ctx := context.Background()
	if err := be.PrepareJob(ctx, anarchon.PrepareJobInput{Job: "bench", HistorySize: 100}); err != nil {
		b.Fatal(err)
	}
	if err := raw.Create(ctx); err != nil {
		b.Fatal(err)
	}
	var rawD, claimD time.Duration
	for i := 0; b.Loop(); i++ {
		tok := strconv.Itoa(i)
		t0 := time.Now()
		n, err := raw.Insert(ctx, "bench", int64(i), tok)
		if err != nil || n != 1 {
			b.Fatal("raw insert:", n, err)
		}
		t1 := time.Now()
		ok, err := be.Claim(ctx, anarchon.ClaimInput{Job: "bench", Slot: int64(i), Token: tok, InstanceID: "a"})
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		claimD += time.Since(t1)
		rawD += t1.Sub(t0)
	}
	report(b, rawD, claimD)
}

// LeaseClaimVsRawInsert does the same as [ClaimVsRawInsert] for the lease
// claim (anarchon.RunStore.Claim with a one-minute lease). It calls
// be.Init first, and fails b if an insert errs or a claim is not won.
func LeaseClaimVsRawInsert(b *testing.B, be anarchon.Backend, raw RawTable) {
	ctx := context.Background()
	if err := be.Init(ctx); err != nil {
		b.Fatal(err)
	}
	if err := raw.Create(ctx); err != nil {
		b.Fatal(err)
	}
	rs := runs(b, be)
	var rawD, claimD time.Duration
	for i := 0; b.Loop(); i++ {
		tok := strconv.Itoa(i)
		t0 := time.Now()
		if _, err := raw.Insert(ctx, "bench", int64(i), tok); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "bench", Slot: int64(i), Token: tok, InstanceID: "a"}, Lease: time.Minute, AllowOverlap: true})
		if err != nil || out.Kind != anarchon.OutcomeWon {
			b.Fatal(out, err)
		}
		claimD += time.Since(t1)
		rawD += t1.Sub(t0)
	}
	report(b, rawD, claimD)
}

// report reports the mean raw and claim times per iteration and their
// ratio.
func report(b *testing.B, raw, claim time.Duration) {
	n := float64(b.N)
	b.ReportMetric(float64(raw.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(float64(claim.Nanoseconds())/n, "claim-ns/op")
	b.ReportMetric(float64(claim)/float64(raw), "claim/raw")
}

// FinishResult times anarchon.ResultFinisher.FinishResult against
// anarchon.RunStore.Finish followed by anarchon.Backend.SaveResult on be
// in the same run, alternating them, each after a won lease claim of its
// own slot, and reports the mean of each (finish+save-ns/op,
// finishresult-ns/op) and their ratio (one/two). It calls be.PrepareJob
// first, and fails b if be's run store is not a ResultFinisher or any
// step fails.
func FinishResult(b *testing.B, be anarchon.Backend) {
	ctx := context.Background()
	if err := be.PrepareJob(ctx, anarchon.PrepareJobInput{Job: "bench", HistorySize: 100}); err != nil {
		b.Fatal(err)
	}
	rs := runs(b, be)
	f := finisher(b, be)
	claim := func(slot int64, tok string) {
		out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "bench", Slot: slot, Token: tok, InstanceID: "a"}, Lease: time.Minute, AllowOverlap: true})
		if err != nil || out.Kind != anarchon.OutcomeWon {
			b.Fatal(out, err)
		}
	}
	var twoD, oneD time.Duration
	for i := 0; b.Loop(); i++ {
		s1, s2 := int64(2*i), int64(2*i+1)
		t1, t2 := strconv.Itoa(2*i), strconv.Itoa(2*i+1)
		claim(s1, t1)
		claim(s2, t2)
		now := time.Now()
		res := anarchon.StoredResult{Slot: s1, Token: t1, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess, StartedAt: now, FinishedAt: now}
		t0 := time.Now()
		if ok, err := rs.Finish(ctx, anarchon.FinishInput{Job: "bench", Slot: s1, Token: t1, Status: res.Status}); err != nil || !ok {
			b.Fatal(ok, err)
		}
		if err := be.SaveResult(ctx, anarchon.SaveResultInput{Job: "bench", Result: res, HistorySize: 100}); err != nil {
			b.Fatal(err)
		}
		tm := time.Now()
		res.Slot, res.Token = s2, t2
		if ok, err := f.FinishResult(ctx, anarchon.SaveResultInput{Job: "bench", Result: res, HistorySize: 100}); err != nil || !ok {
			b.Fatal(ok, err)
		}
		oneD += time.Since(tm)
		twoD += tm.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(twoD.Nanoseconds())/n, "finish+save-ns/op")
	b.ReportMetric(float64(oneD.Nanoseconds())/n, "finishresult-ns/op")
	b.ReportMetric(float64(oneD)/float64(twoD), "one/two")
}

// BatchSize is the number of claims in each batch of ClaimBatch.
const BatchSize = 256

// ClaimBatch measures batches of BatchSize plain claims of new slots
// (jobs "j0" … "j255", one new slot per iteration) against the raw
// operation of the same rows: win claims every slot with one
// anarchon.BatchClaimer call of token "t" (won-us), lose claims the same
// slots again with token "u", from the same backend or another (lost-us),
// and raw inserts BatchSize new rows of slot into a bare claims table the
// way the database does it fastest (raw-us). Each is reported in µs per
// claim, as the median over the iterations; won/raw is the median of each
// iteration's ratio. It fails b when a claim does not answer as expected.
func ClaimBatch(b *testing.B, win, lose anarchon.BatchClaimer, raw func(ctx context.Context, slot int64) error) {
	batch := func(be anarchon.BatchClaimer) func(ctx context.Context, slot int64, token string, want bool) {
		return func(ctx context.Context, slot int64, token string, want bool) {
			in := make([]anarchon.ClaimInput, BatchSize)
			for k := range in {
				in[k] = anarchon.ClaimInput{Job: "j" + strconv.Itoa(k), Slot: slot, Token: token, InstanceID: token}
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
	}
	batches(b, batch(win), batch(lose), raw)
}

// ClaimRunsBatch does for lease claims (anarchon.RunBatchClaimer, a
// one-minute lease, overlap allowed) what [ClaimBatch] does for plain
// ones: win's batch wins every slot, lose's answers every claim with the
// running lease of win's.
func ClaimRunsBatch(b *testing.B, win, lose anarchon.RunBatchClaimer, raw func(ctx context.Context, slot int64) error) {
	batch := func(rs anarchon.RunBatchClaimer) func(ctx context.Context, slot int64, token string, want bool) {
		return func(ctx context.Context, slot int64, token string, want bool) {
			in := make([]anarchon.RunClaim, BatchSize)
			for k := range in {
				in[k] = anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "j" + strconv.Itoa(k), Slot: slot, Token: token, InstanceID: token},
					Lease: time.Minute, AllowOverlap: true, MaxAttempts: 3}
			}
			out, err := rs.ClaimRuns(ctx, in)
			if err != nil {
				b.Fatal(err)
			}
			kind := anarchon.OutcomeRunning
			if want {
				kind = anarchon.OutcomeWon
			}
			for _, a := range out {
				if a.Err != nil || a.Outcome.Kind != kind {
					b.Fatalf("lease claim: %+v, want %v", a, kind)
				}
			}
		}
	}
	batches(b, batch(win), batch(lose), raw)
}

// ClaimRunsHistory measures a batch of BatchSize lease claims under the
// default overlap policy (skip: AllowOverlap false, Limit 1), each of a
// new slot of its own job ("h0" … "h255"), when every job already keeps
// history settled runs (SPEC §6: the overlap check counts the job's live
// runs, which a store must find without reading its settled ones). The
// history is made first through rs itself: history batches of claims,
// each finished (FinishResults, HistorySize history+1, so none is
// trimmed). Each iteration then times one batch, which must win every
// slot, finishes it untimed so that the next one meets no live run, and
// times raw on a slot of its own. It reports won-us, raw-us (µs per
// claim, medians over the iterations) and won/raw (the median of each
// iteration's ratio). It fails b when a claim does not answer won or a
// finish is refused.
func ClaimRunsHistory(b *testing.B, rs HistoryRuns, history int, raw func(ctx context.Context, slot int64) error) {
	ctx := b.Context()
	slot0 := time.Now().Truncate(time.Minute).Add(-48 * time.Hour).UnixMilli()
	claim := func(slot int64, token string) {
		in := make([]anarchon.RunClaim, BatchSize)
		for k := range in {
			in[k] = anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "h" + strconv.Itoa(k), Slot: slot, Token: token, InstanceID: "a"},
				Lease: time.Minute, Limit: 1, MaxAttempts: 3}
		}
		out, err := rs.ClaimRuns(ctx, in)
		if err != nil {
			b.Fatal(err)
		}
		for _, a := range out {
			if a.Err != nil || a.Outcome.Kind != anarchon.OutcomeWon {
				b.Fatalf("lease claim of slot %d: %+v, want won", slot, a)
			}
		}
	}
	finish := func(slot int64, token string) {
		now := time.Now()
		in := make([]anarchon.SaveResultInput, BatchSize)
		for k := range in {
			in[k] = anarchon.SaveResultInput{Job: "h" + strconv.Itoa(k), HistorySize: history + 1, Result: anarchon.StoredResult{
				Slot: slot, Token: token, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess, StartedAt: now, FinishedAt: now}}
		}
		held, err := rs.FinishResults(ctx, in)
		if err != nil {
			b.Fatal(err)
		}
		for _, h := range held {
			if h.Err != nil || !h.Held {
				b.Fatalf("finish of slot %d: %+v", slot, h)
			}
		}
	}
	for i := range history {
		slot, token := slot0+int64(i)*1000, "old"+strconv.Itoa(i)
		claim(slot, token)
		finish(slot, token)
	}
	var won, rawUs, ratio []float64
	for i := 0; b.Loop(); i++ {
		slot, token := slot0+int64(history+i)*1000, "t"+strconv.Itoa(i)
		w := usPerClaim(func() { claim(slot, token) })
		finish(slot, token)
		r := usPerClaim(func() {
			if err := raw(ctx, slot); err != nil {
				b.Fatal(err)
			}
		})
		won, rawUs, ratio = append(won, w), append(rawUs, r), append(ratio, w/r)
	}
	b.ReportMetric(Median(won), "won-us")
	b.ReportMetric(Median(rawUs), "raw-us")
	b.ReportMetric(Median(ratio), "won/raw")
}

// batches times win (token "t", every claim won), lose (token "u", every
// claim lost) and raw on one new slot per iteration and reports each in
// µs per claim, the median over the iterations.
func batches(b *testing.B, win, lose func(ctx context.Context, slot int64, token string, want bool), raw func(ctx context.Context, slot int64) error) {
	ctx := b.Context()
	slot0 := time.Now().Truncate(time.Minute).Add(-48 * time.Hour).UnixMilli()
	var won, lost, rawUs, ratio []float64
	for i := 0; b.Loop(); i++ {
		slot := slot0 + int64(i)*1000
		w := usPerClaim(func() { win(ctx, slot, "t", true) })
		l := usPerClaim(func() { lose(ctx, slot, "u", false) })
		r := usPerClaim(func() {
			if err := raw(ctx, slot); err != nil {
				b.Fatal(err)
			}
		})
		won, lost, rawUs, ratio = append(won, w), append(lost, l), append(rawUs, r), append(ratio, w/r)
	}
	b.ReportMetric(Median(won), "won-us")
	b.ReportMetric(Median(lost), "lost-us")
	b.ReportMetric(Median(rawUs), "raw-us")
	b.ReportMetric(Median(ratio), "won/raw")
}

// Median is the middle value of v (the upper one of an even count).
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// HistoryRuns is what ClaimRunsHistory needs of a run store.
type HistoryRuns interface {
	anarchon.RunBatchClaimer
	anarchon.FinishBatcher
}

// usPerClaim times f, one batch of BatchSize claims or rows, in µs per
// claim.
func usPerClaim(f func()) float64 {
	t0 := time.Now()
	f()
	return float64(time.Since(t0).Nanoseconds()) / 1000 / BatchSize
}
