package anarchontest

import (
	"testing"

	"github.com/anarchon/anarchon"
)

// testResultBatch checks anarchon.ResultBatcher against SaveResult
// (SPEC §4, batches): every result of a SaveResults call is stored as
// SaveResult stores it, one bad entry fails only itself, a repeat of a
// token's result changes nothing, and an empty batch is answered empty.
func testResultBatch(t *testing.T, h Harness) {
	t.Parallel()
	s := open(t, h, 2)
	rb, ok := anarchon.As[anarchon.ResultBatcher](s.b(0))
	if !ok {
		t.Fatal("handle 0 has no anarchon.ResultBatcher")
	}
	jobs := [2]string{jobName("results-a"), jobName("results-b")}
	s.prepare(jobs[0], 100)
	s.prepare(jobs[1], 100)
	slot := baseSlot()
	var in []anarchon.SaveResultInput
	for i := range 6 {
		job := jobs[i%2]
		tok := token()
		if !s.claim(1, input(job, slot+int64(i)*1000, tok, "a")) {
			t.Fatalf("claim of a new slot of %s lost", job)
		}
		in = append(in, anarchon.SaveResultInput{Job: job, HistorySize: 100,
			Result: result(slot+int64(i)*1000, tok, "a", 1, anarchon.StatusSuccess)})
	}
	in = append(in, anarchon.SaveResultInput{Job: "", HistorySize: 100, Result: result(slot, token(), "a", 1, anarchon.StatusSuccess)})
	in = append(in, in[0]) // a repeat of the first result
	errs, err := rb.SaveResults(s.ctx, in)
	if err != nil || len(errs) != len(in) {
		t.Fatalf("SaveResults(%d) = %d answers, %v", len(in), len(errs), err)
	}
	for i, e := range errs {
		if bad := in[i].Job == ""; bad != (e != nil) {
			t.Errorf("result %d (job %q): error %v", i, in[i].Job, e)
		}
	}
	for _, job := range jobs {
		recs, by := s.histRecords(1, job)
		if len(recs) != 3 {
			t.Errorf("History(%s): %d records, want 3: %+v", job, len(recs), recs)
		}
		for _, r := range in[:6] {
			if r.Job == job {
				checkRecord(t, by, r.Result.Token, "a", 1, anarchon.StatusSuccess, true)
			}
		}
	}
	for _, in := range [][]anarchon.SaveResultInput{nil, {}} {
		if errs, err := rb.SaveResults(s.ctx, in); err != nil || len(errs) != 0 {
			t.Errorf("SaveResults(%d) = %d answers, %v; want 0, nil", len(in), len(errs), err)
		}
	}
}

// testRecordBatch checks anarchon.ClaimRecordBatcher against RecordClaim
// (SPEC §4, batches): every won claim a RecordClaims call carries shows in
// the history as a running run of its token, as RecordClaim records it,
// one bad entry fails only itself, a repeat of a token (within the batch
// or after RecordClaim) adds no record, and an empty batch is answered
// empty.
func testRecordBatch(t *testing.T, h Harness) {
	t.Parallel()
	s := open(t, h, 2)
	cr, _ := anarchon.As[anarchon.ClaimRecorder](s.b(0))
	rb, ok := cr.(anarchon.ClaimRecordBatcher)
	if !ok {
		t.Fatal("handle 0's ClaimRecorder has no RecordClaims")
	}
	jobs := [2]string{jobName("records-a"), jobName("records-b")}
	s.prepare(jobs[0], 100)
	s.prepare(jobs[1], 100)
	slot := baseSlot()
	var in []anarchon.ClaimInput
	for i := range 6 {
		c := input(jobs[i%2], slot+int64(i)*1000, token(), "a")
		// Claimed without RecordClaim: the batch records them.
		if won, err := s.b(1).Claim(s.ctx, c); err != nil || !won {
			t.Fatalf("Claim(%s) = %v, %v; want a win", fmtIn(c), won, err)
		}
		in = append(in, c)
	}
	s.recordClaim(0, in[1])                        // recorded alone first: the batch adds nothing
	in = append(in, input("", slot, token(), "a")) // a bad entry
	in = append(in, in[0])                         // a repeat within the batch
	errs, err := rb.RecordClaims(s.ctx, in)
	if err != nil || len(errs) != len(in) {
		t.Fatalf("RecordClaims(%d) = %d answers, %v", len(in), len(errs), err)
	}
	for i, e := range errs {
		if bad := in[i].Job == ""; bad != (e != nil) {
			t.Errorf("claim %d (job %q): error %v", i, in[i].Job, e)
		}
	}
	for _, job := range jobs {
		recs, by := s.histRecords(1, job)
		if len(recs) != 3 {
			t.Errorf("History(%s): %d records, want 3: %+v", job, len(recs), recs)
		}
		for _, c := range in[:6] {
			if c.Job == job {
				checkRecord(t, by, c.Token, "a", 1, anarchon.StatusRunning, true)
			}
		}
	}
	for _, in := range [][]anarchon.ClaimInput{nil, {}} {
		if errs, err := rb.RecordClaims(s.ctx, in); err != nil || len(errs) != 0 {
			t.Errorf("RecordClaims(%d) = %d answers, %v; want 0, nil", len(in), len(errs), err)
		}
	}
}

// testFinishBatch checks anarchon.FinishBatcher against FinishResult
// (SPEC §6): a held run is finished with its result (held true), a run
// another token holds keeps running and the result is stored as
// lease_lost (held false), a bad entry fails only itself, and the
// finished slot is settled for every later claim.
func testFinishBatch(t *testing.T, h Harness) {
	leaseTest(t, h, "Answers", func(t *testing.T, s *store, job string, slot int64) {
		fb, ok := anarchon.As[anarchon.FinishBatcher](s.b(1))
		if !ok {
			t.Fatal("handle 1 has no anarchon.FinishBatcher")
		}
		a, b, c := token(), token(), token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
		want(t, "claim", s.lclaim(0, rclaim(job, slot+1000, b, "a", longLease)), anarchon.OutcomeWon)
		want(t, "claim", s.lclaim(0, rclaim(job, slot+2000, c, "a", longLease)), anarchon.OutcomeWon)
		stranger := token()
		in := []anarchon.SaveResultInput{
			{Job: job, HistorySize: 100, Result: result(slot, a, "a", 1, anarchon.StatusSuccess)},
			{Job: job, HistorySize: 100, Result: result(slot+1000, stranger, "b", 1, anarchon.StatusError)},
			{Job: job, HistorySize: 100, Result: result(slot+2000, c, "a", 1, "")},
			{Job: job, HistorySize: 100, Result: result(slot+2000, c, "a", 1, anarchon.StatusError)},
		}
		out, err := fb.FinishResults(s.ctx, in)
		if err != nil || len(out) != len(in) {
			t.Fatalf("FinishResults(%d) = %d answers, %v", len(in), len(out), err)
		}
		wantHeld := []bool{true, false, false, true}
		for i, ans := range out {
			bad := in[i].Result.Status == ""
			switch {
			case bad && ans.Err == nil:
				t.Errorf("finish %d with an empty status: no error", i)
			case !bad && ans.Err != nil:
				t.Errorf("finish %d: %v", i, ans.Err)
			case ans.Held != wantHeld[i]:
				t.Errorf("finish %d: held %v, want %v", i, ans.Held, wantHeld[i])
			}
		}
		want(t, "claim of the finished slot", s.lclaim(1, rclaim(job, slot, token(), "b", longLease)), anarchon.OutcomeDone)
		want(t, "claim of the slot another token holds", s.lclaim(1, rclaim(job, slot+1000, token(), "b", longLease)), anarchon.OutcomeRunning)
		want(t, "claim of the slot finished as an error", s.lclaim(1, rclaim(job, slot+2000, token(), "b", longLease)), anarchon.OutcomeDone)
		_, by := s.histRecords(1, job)
		checkRecord(t, by, a, "a", 1, anarchon.StatusSuccess, true)
		checkRecord(t, by, c, "a", 1, anarchon.StatusError, true)
		if r, ok := by[stranger]; !ok || r.Status != anarchon.StatusLeaseLost {
			t.Errorf("the result of a token that held nothing: %+v, want it stored as lease_lost", r)
		}
	})
}
