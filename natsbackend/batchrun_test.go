package natsbackend_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
)

// runBatchers returns b's HeartbeatBatcher, ResultBatcher and
// FinishBatcher, and its ResultFinisher.
func runBatchers(t *testing.T, b *natsbackend.Backend) (anarchon.HeartbeatBatcher, anarchon.ResultBatcher, anarchon.FinishBatcher, anarchon.ResultFinisher) {
	t.Helper()
	hb, ok1 := b.Runs().(anarchon.HeartbeatBatcher)
	rb, ok2 := anarchon.Backend(b).(anarchon.ResultBatcher)
	fb, ok3 := b.Runs().(anarchon.FinishBatcher)
	rf, ok4 := b.Runs().(anarchon.ResultFinisher)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		t.Fatalf("HeartbeatBatcher %v, ResultBatcher %v, FinishBatcher %v, ResultFinisher %v; want all", ok1, ok2, ok3, ok4)
	}
	return hb, rb, fb, rf
}

func beatsOf(rc []anarchon.RunClaim) []anarchon.HeartbeatInput {
	in := make([]anarchon.HeartbeatInput, len(rc))
	for i, c := range rc {
		in[i] = anarchon.HeartbeatInput{Job: c.Job, Slot: c.Slot, Token: c.Token, Lease: time.Minute}
	}
	return in
}

func resultsOf(cs []anarchon.ClaimInput, status anarchon.Status) []anarchon.SaveResultInput {
	in := make([]anarchon.SaveResultInput, len(cs))
	now := time.Now()
	for i, c := range cs {
		in[i] = anarchon.SaveResultInput{Job: c.Job, HistorySize: 10, Result: anarchon.StoredResult{
			Slot: c.Slot, Token: c.Token, InstanceID: c.InstanceID, Attempt: 1, Status: status,
			StartedAt: now.Add(-time.Second), FinishedAt: now}}
	}
	return in
}

// A batch of 100 heartbeats sends one read of the 100 runs and one update
// per run, all published before any acknowledgement is awaited (101
// requests, about two round trips; 100 single heartbeats send 200, in
// 100 turns of two). 100 results of 100 jobs send a publish per result
// and a trim per job (200 requests, two round trips); of one job, one
// trim (101). 100 finishes add the read and the updates to the results'
// requests (about four round trips, as one FinishResult).
func TestRunBatchRequests(t *testing.T) {
	nc, b := openCounted(t)
	ctx := t.Context()
	hb, rb, fb, _ := runBatchers(t, b)
	sent := func(f func()) uint64 {
		t.Helper()
		before := nc.Stats().OutMsgs
		f()
		return nc.Stats().OutMsgs - before
	}
	const n = 100
	slot := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	leases := func(job func(i int) string) []anarchon.RunClaim {
		t.Helper()
		slot += n * 1000
		in := make([]anarchon.RunClaim, n)
		for i := range in {
			in[i] = anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job(i), Slot: slot + int64(i)*1000, Token: randHex(8), InstanceID: "a"},
				Lease: time.Minute, AllowOverlap: true}
		}
		out, err := b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range out {
			if a.Err != nil || a.Outcome.Kind != anarchon.OutcomeWon {
				t.Fatalf("lease claim %d: %+v", i, a)
			}
		}
		return in
	}
	held := func(what string, out []anarchon.HeldAnswer, err error) {
		t.Helper()
		if err != nil || len(out) != n {
			t.Fatalf("%s: %d answers, %v", what, len(out), err)
		}
		for i, a := range out {
			if a.Err != nil || !a.Held {
				t.Fatalf("%s: entry %d: %+v, want held", what, i, a)
			}
		}
	}
	claims := func(rc []anarchon.RunClaim) []anarchon.ClaimInput {
		out := make([]anarchon.ClaimInput, len(rc))
		for i, c := range rc {
			out[i] = c.ClaimInput
		}
		return out
	}
	manyJobs := func(i int) string { return fmt.Sprintf("job-%d", i) }
	oneJob := func(int) string { return "one" }

	runs := leases(manyJobs)
	if got := sent(func() {
		out, err := hb.Heartbeats(ctx, beatsOf(runs))
		held("heartbeats", out, err)
	}); got != n+1 {
		t.Errorf("a batch of %d heartbeats sent %d requests, want %d", n, got, n+1)
	}
	if got := sent(func() {
		for _, in := range beatsOf(runs) {
			if ok, err := b.Runs().Heartbeat(ctx, in); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
	}); got != 2*n {
		t.Errorf("%d single heartbeats sent %d requests, want %d", n, got, 2*n)
	}
	if got := sent(func() {
		out, err := fb.FinishResults(ctx, resultsOf(claims(runs), anarchon.StatusSuccess))
		held("finishes of 100 jobs", out, err)
	}); got != 3*n+1 {
		t.Errorf("a batch of %d finishes of %d jobs sent %d requests, want %d", n, n, got, 3*n+1)
	}
	runs = leases(oneJob)
	if got := sent(func() {
		out, err := fb.FinishResults(ctx, resultsOf(claims(runs), anarchon.StatusSuccess))
		held("finishes of one job", out, err)
	}); got != 2*n+2 {
		t.Errorf("a batch of %d finishes of one job sent %d requests, want %d", n, got, 2*n+2)
	}

	for _, tc := range []struct {
		name string
		job  func(int) string
		want uint64
	}{{"100 jobs", manyJobs, 2 * n}, {"one job", oneJob, n + 1}} {
		slot += n * 1000
		plain := make([]anarchon.ClaimInput, n)
		for i := range plain {
			plain[i] = anarchon.ClaimInput{Job: tc.job(i), Slot: slot + int64(i)*1000, Token: randHex(8), InstanceID: "a"}
		}
		if _, err := b.ClaimBatch(ctx, plain); err != nil {
			t.Fatal(err)
		}
		if got := sent(func() {
			errs, err := b.RecordClaims(ctx, plain)
			if err != nil || len(errs) != n {
				t.Fatalf("RecordClaims: %d errors, %v", len(errs), err)
			}
			for i, e := range errs {
				if e != nil {
					t.Fatalf("claim record %d: %v", i, e)
				}
			}
		}); got != n {
			t.Errorf("a batch of %d claim records of %s sent %d requests, want %d", n, tc.name, got, n)
		}
		if got := sent(func() {
			errs, err := rb.SaveResults(ctx, resultsOf(plain, anarchon.StatusSuccess))
			if err != nil || len(errs) != n {
				t.Fatalf("SaveResults: %d errors, %v", len(errs), err)
			}
			for i, e := range errs {
				if e != nil {
					t.Fatalf("result %d: %v", i, e)
				}
			}
		}); got != tc.want {
			t.Errorf("a batch of %d results of %s sent %d requests, want %d", n, tc.name, got, tc.want)
		}
	}
}

// Each answer of a batch is what the single call gives for the same
// input in the same state: both paths meet every case on their own
// store, and their answers and the history they leave are compared. A run
// named twice in one batch loses its second compare-and-set to the first
// and takes the single path, which answers as a second single call does.
func TestRunBatchAnswersAsSingle(t *testing.T) {
	t.Run("fast path", testRunBatchAnswersAsSingle)
	t.Run("KV API", func(t *testing.T) {
		defer natsbackend.SetNoFastPath(true)()
		testRunBatchAnswersAsSingle(t)
	})
}

func testRunBatchAnswersAsSingle(t *testing.T) {
	url := natsURL(t)
	ctx := t.Context()
	slot := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	type answer struct {
		held, err bool
	}
	held := func(ok bool, err error) answer { return answer{ok, err != nil} }
	run := func(batch bool) (answers []answer, history map[string]string) {
		b := openN(t, url, freshOptions(t, url), 1)[0]
		hb, rb, fb, rf := runBatchers(t, b)
		runs := b.Runs()
		claim := func(job string, s int64, tok string) {
			o, err := runs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: s, Token: tok, InstanceID: "a"}, Lease: time.Minute, AllowOverlap: true})
			if err != nil || o.Kind != anarchon.OutcomeWon {
				t.Fatalf("claim: %+v, %v", o, err)
			}
		}
		claim("l", slot, "held")
		claim("l", slot+1000, "released")
		claim("m", slot, "done")
		claim("m", slot+1000, "twice")
		if ok, err := runs.Release(ctx, anarchon.ReleaseInput{Job: "l", Slot: slot + 1000, Token: "released"}); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if ok, err := runs.Finish(ctx, anarchon.FinishInput{Job: "m", Slot: slot, Token: "done", Status: anarchon.StatusSuccess}); !ok || err != nil {
			t.Fatal(ok, err)
		}
		beats := []anarchon.HeartbeatInput{
			{Job: "l", Slot: slot, Token: "held", Lease: time.Minute},            // held
			{Job: "l", Slot: slot, Token: "other", Lease: time.Minute},           // another token
			{Job: "l", Slot: slot + 1000, Token: "released", Lease: time.Minute}, // released
			{Job: "m", Slot: slot, Token: "done", Lease: time.Minute},            // finished
			{Job: "l", Slot: slot + 5000, Token: "held", Lease: time.Minute},     // never claimed
			{Job: "l", Slot: slot, Token: "held", Lease: 0},                      // bad lease
			{Job: "", Slot: slot, Token: "held", Lease: time.Minute},             // bad job
			{Job: "m", Slot: slot + 1000, Token: "twice", Lease: time.Minute},    // held
			{Job: "m", Slot: slot + 1000, Token: "twice", Lease: time.Minute},    // held, again
		}
		res := func(job string, s int64, tok string, status anarchon.Status) anarchon.SaveResultInput {
			return anarchon.SaveResultInput{Job: job, HistorySize: 10, Result: anarchon.StoredResult{Slot: s, Token: tok, InstanceID: "a", Attempt: 1, Status: status}}
		}
		finishes := []anarchon.SaveResultInput{
			res("l", slot, "held", anarchon.StatusSuccess),
			res("m", slot+1000, "twice", anarchon.StatusSuccess), // both in one batch: the second loses its update
			res("m", slot+1000, "twice", anarchon.StatusSuccess),
			res("l", slot, "held", anarchon.StatusSuccess), // a repeat, in the next batch
			res("l", slot+1000, "stranger", anarchon.StatusError),
			res("l", slot+1000, "released", anarchon.StatusError),
			res("l", slot+2000, "x", ""), // no status
			{Job: "l", HistoryTTL: -1, Result: anarchon.StoredResult{Slot: slot + 2000, Token: "x", Status: anarchon.StatusSuccess}}, // bad TTL
		}
		results := []anarchon.SaveResultInput{
			res("p", slot, "p1", anarchon.StatusSuccess),
			res("p", slot+1000, "p2", anarchon.StatusError),
			res("", slot, "p1", anarchon.StatusSuccess),
			{Job: "p", HistorySize: -1, Result: anarchon.StoredResult{Slot: slot, Token: "p3", Status: anarchon.StatusSuccess}},
		}
		results[1].HistorySize = 1 // trims p1 (a claim and a result kept)
		for _, c := range []anarchon.ClaimInput{{Job: "p", Slot: slot, Token: "p1", InstanceID: "a"}, {Job: "p", Slot: slot + 1000, Token: "p2", InstanceID: "a"}} {
			if ok, err := b.Claim(ctx, c); !ok || err != nil {
				t.Fatal(ok, err)
			}
			if err := b.RecordClaim(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if batch {
			out, err := hb.Heartbeats(ctx, beats)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range out {
				answers = append(answers, held(a.Held, a.Err))
			}
			for _, part := range [][]anarchon.SaveResultInput{finishes[:3], finishes[3:]} {
				out, err = fb.FinishResults(ctx, part)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range out {
					answers = append(answers, held(a.Held, a.Err))
				}
			}
			errs, err := rb.SaveResults(ctx, results)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range errs {
				answers = append(answers, held(false, e))
			}
		} else {
			for _, in := range beats {
				answers = append(answers, held(runs.Heartbeat(ctx, in)))
			}
			for _, in := range finishes {
				answers = append(answers, held(rf.FinishResult(ctx, in)))
			}
			for _, in := range results {
				answers = append(answers, held(false, b.SaveResult(ctx, in)))
			}
		}
		history = map[string]string{}
		for _, job := range []string{"l", "m", "p"} {
			recs, err := b.History(ctx, job, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := range recs { // times differ between the two runs
				recs[i].ClaimedAt, recs[i].StartedAt, recs[i].FinishedAt = time.Time{}, time.Time{}, time.Time{}
			}
			history[job] = fmt.Sprint(recs)
		}
		return answers, history
	}
	want, wantHist := run(false)
	got, gotHist := run(true)
	T, F, E := answer{held: true}, answer{}, answer{err: true}
	expect := []answer{T, F, F, F, F, E, E, T, T, T, T, T, T, F, T, E, E, F, F, E, E}
	if fmt.Sprint(want) != fmt.Sprint(expect) {
		t.Errorf("single calls answered %v, want %v", want, expect)
	}
	if len(got) != len(want) {
		t.Fatalf("%d batch answers, %d single ones", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: batch answered %+v, a single call %+v", i, got[i], want[i])
		}
	}
	for job, w := range wantHist {
		if gotHist[job] != w {
			t.Errorf("history of %s:\nafter the batches %s\nafter single calls %s", job, gotHist[job], w)
		}
	}
}

// After Close a batch has no answer: Heartbeats, SaveResults and
// FinishResults return anarchon.ErrClosed and no answers.
func TestRunBatchClosed(t *testing.T) {
	url := natsURL(t)
	b := openN(t, url, freshOptions(t, url), 1)[0]
	hb, rb, fb, _ := runBatchers(t, b)
	ctx := t.Context()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	res := resultsOf([]anarchon.ClaimInput{{Job: "a", Slot: slot, Token: "t"}}, anarchon.StatusSuccess)
	if out, err := hb.Heartbeats(ctx, []anarchon.HeartbeatInput{{Job: "a", Slot: slot, Token: "t", Lease: time.Minute}}); out != nil || !errors.Is(err, anarchon.ErrClosed) {
		t.Errorf("Heartbeats after Close = %v, %v; want no answers and ErrClosed", out, err)
	}
	if out, err := rb.SaveResults(ctx, res); out != nil || !errors.Is(err, anarchon.ErrClosed) {
		t.Errorf("SaveResults after Close = %v, %v; want no answers and ErrClosed", out, err)
	}
	if out, err := fb.FinishResults(ctx, res); out != nil || !errors.Is(err, anarchon.ErrClosed) {
		t.Errorf("FinishResults after Close = %v, %v; want no answers and ErrClosed", out, err)
	}
}
