package anarchontest

import (
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// histRecords returns the job's whole history from handle i, keyed by
// token, and fails the test if a token appears twice.
func (s *store) histRecords(i int, job string) ([]anarchon.RunRecord, map[string]anarchon.RunRecord) {
	s.t.Helper()
	recs := s.history(i, job, 0)
	by := make(map[string]anarchon.RunRecord, len(recs))
	for _, r := range recs {
		if _, dup := by[r.Token]; dup {
			s.t.Errorf("History: token %s appears twice in %+v", r.Token, recs)
		}
		by[r.Token] = r
	}
	return recs, by
}

// checkRecord checks one record's instance, attempt, status and whether it
// has a claim time.
func checkRecord(t *testing.T, by map[string]anarchon.RunRecord, token, inst string, attempt int, status anarchon.Status, claimed bool) {
	t.Helper()
	r, ok := by[token]
	switch {
	case !ok:
		t.Errorf("History: no record of token %s (%s, %s)", token, inst, status)
	case r.InstanceID != inst || r.Attempt != attempt || r.Status != status:
		t.Errorf("History: token %s: instance %s attempt %d status %s, want %s %d %s",
			token, r.InstanceID, r.Attempt, r.Status, inst, attempt, status)
	case claimed && r.ClaimedAt.IsZero():
		t.Errorf("History: token %s (%s): zero ClaimedAt", token, status)
	case !claimed && !r.ClaimedAt.IsZero():
		t.Errorf("History: token %s (%s): ClaimedAt %v, want none", token, status, r.ClaimedAt)
	}
}

// result is a result of token tok's run of slot, started a second ago and
// finished now.
func result(slot int64, tok, inst string, attempt int, status anarchon.Status) anarchon.StoredResult {
	return resultAt(slot, tok, inst, attempt, status, ms(time.Now()).Add(-time.Second))
}

// resultAt is a result of token tok's run of slot that started at start
// and took 1.5 seconds.
func resultAt(slot int64, tok, inst string, attempt int, status anarchon.Status, start time.Time) anarchon.StoredResult {
	return anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: inst, Attempt: attempt, Status: status,
		StartedAt: start, FinishedAt: start.Add(1500 * time.Millisecond)}
}

// testTakeoverHistory: the history records of lease runs that a takeover
// ends (RunStore's doc, SPEC §6): the dead holder's attempt as lease_lost,
// a released one as handed_over, each with its claim time, and an
// abandoned slot once, under anarchon.AbandonedToken, with the last
// holder's attempt. Results are saved as the scheduler saves them:
// FinishResult where the store has it, Finish and SaveResult otherwise.
func testTakeoverHistory(t *testing.T, h Harness) {
	leaseTest(t, h, "DeadHolderLeaseLost", func(t *testing.T, s *store, job string, slot int64) {
		ca := rclaim(job, slot, token(), "A", h.Lease)
		want(t, "claim by A", s.lclaim(0, ca), anarchon.OutcomeWon)
		h.Sleep(h.expiry()) // A dies: its lease runs out by the store's clock
		cb := rclaim(job, slot, token(), "B", longLease)
		out := s.lclaim(1, cb)
		want(t, "claim by B after A's lease ran out", out, anarchon.OutcomeWon)
		if out.Attempt != 2 {
			t.Fatalf("takeover attempt %d, want 2", out.Attempt)
		}
		if !s.finishResult(1, job, result(slot, cb.Token, "B", 2, anarchon.StatusSuccess), 10) {
			t.Fatal("the finish of B, the holder, was refused")
		}
		recs, by := s.histRecords(1, job)
		if len(recs) != 2 {
			t.Fatalf("History: %d records, want 2 (A lease_lost, B success): %+v", len(recs), recs)
		}
		checkRecord(t, by, cb.Token, "B", 2, anarchon.StatusSuccess, true)
		checkRecord(t, by, ca.Token, "A", 1, anarchon.StatusLeaseLost, true)
		if recs[0].Token != cb.Token {
			t.Errorf("History: the newest record is token %s, want B's", recs[0].Token)
		}
		// Every store tells it in the same words (anarchon.BuildHistory).
		if e := by[ca.Token].Error; !strings.Contains(e, "no result stored") || !strings.Contains(e, "attempt 2 on B took the slot over") {
			t.Errorf("History: A's record says %q, want that it stored no result and that attempt 2 on B took the slot over", e)
		}

		// A wakes up and saves its own result: it replaces A's record, as
		// lease_lost, and keeps the claim time.
		if s.finishResult(0, job, result(slot, ca.Token, "A", 1, anarchon.StatusSuccess), 10) {
			t.Fatal("the late finish of A, who lost the lease, was accepted")
		}
		recs, by = s.histRecords(0, job)
		if len(recs) != 2 {
			t.Fatalf("History after A's late result: %d records, want 2: %+v", len(recs), recs)
		}
		checkRecord(t, by, ca.Token, "A", 1, anarchon.StatusLeaseLost, true)
		if by[ca.Token].StartedAt.IsZero() {
			t.Error("History: A's own result lost its start time")
		}
	})
	leaseTest(t, h, "HandedOverClaimedAt", func(t *testing.T, s *store, job string, slot int64) {
		for i, saveFirst := range []bool{true, false} {
			sl := slot + int64(i)*1000
			ca := rclaim(job, sl, token(), "A", longLease)
			want(t, "claim by A", s.lclaim(0, ca), anarchon.OutcomeWon)
			if !s.release(0, job, sl, ca.Token) {
				t.Fatal("Release by A, the holder, returned false")
			}
			handed := result(sl, ca.Token, "A", 1, anarchon.StatusHandedOver)
			handed.Error = "handed over"
			if saveFirst {
				s.save(0, job, handed, 10, 0)
			}
			cb := rclaim(job, sl, token(), "B", longLease)
			want(t, "claim by B after A released", s.lclaim(1, cb), anarchon.OutcomeWon)
			if !saveFirst {
				s.save(0, job, handed, 10, 0)
			}
			_, by := s.histRecords(1, job)
			checkRecord(t, by, ca.Token, "A", 1, anarchon.StatusHandedOver, true)
			checkRecord(t, by, cb.Token, "B", 2, anarchon.StatusRunning, true)
			if r := by[ca.Token]; r.Error != "handed over" || r.StartedAt.IsZero() {
				t.Errorf("result saved before B's claim %v: A's saved result was not kept: %+v", saveFirst, r)
			}
		}
	})
	t.Run("AbandonedOnce", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 4)
		job := jobName("abandon")
		s.prepare(job, 10)
		slot := baseSlot()
		claim := func(i int, inst string, lease time.Duration, k anarchon.OutcomeKind) (anarchon.RunClaim, anarchon.ClaimOutcome) {
			t.Helper()
			c := rclaim(job, slot, token(), inst, lease)
			c.MaxAttempts = 2
			out := s.lclaim(i, c)
			want(t, "claim by "+inst, out, k)
			return c, out
		}
		ca, _ := claim(0, "A", h.Lease, anarchon.OutcomeWon)
		h.Sleep(h.expiry())
		cb, _ := claim(1, "B", h.Lease, anarchon.OutcomeWon)
		h.Sleep(h.expiry())
		// Every backup that finds the slot abandoned saves the abandonment
		// as the scheduler does, under one token.
		tok := anarchon.AbandonedToken(slot)
		for i, inst := range []string{"C", "D"} {
			_, out := claim(2+i, inst, longLease, anarchon.OutcomeDone)
			if out.Status != anarchon.StatusAbandoned {
				t.Fatalf("claim by %s after two attempts: status %q, want abandoned", inst, out.Status)
			}
			s.save(2+i, job, anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: inst, Attempt: out.Attempt, Status: anarchon.StatusAbandoned}, 10, 0)
		}
		recs, by := s.histRecords(0, job)
		if len(recs) != 3 {
			t.Fatalf("History: %d records, want 3 (A and B lease_lost, the abandonment): %+v", len(recs), recs)
		}
		checkRecord(t, by, tok, "D", 2, anarchon.StatusAbandoned, false)
		checkRecord(t, by, ca.Token, "A", 1, anarchon.StatusLeaseLost, true)
		checkRecord(t, by, cb.Token, "B", 2, anarchon.StatusLeaseLost, true)
		if s.finish(1, job, slot, cb.Token, anarchon.StatusSuccess) {
			t.Error("Finish by the last holder after the slot was abandoned returned true")
		}
	})
}

// testFinishResultSame: a ResultFinisher leaves the same history, and the
// same claim answers, as Finish followed by SaveResult, in each case
// FinishResult's doc names: the holder's finish, a finish by the token
// that released the run, and a finish after a takeover.
func testFinishResultSame(t *testing.T, h Harness) {
	t.Parallel()
	s := open(t, h, 2)
	if s.finisher(0) == nil {
		t.Skip("the RunStore is not an anarchon.ResultFinisher")
	}
	type path struct {
		name   string
		job    string
		finish func(i int, job string, r anarchon.StoredResult) bool
	}
	paths := []path{
		{"FinishResult", jobName("finish-result"), func(i int, job string, r anarchon.StoredResult) bool { return s.finishResult(i, job, r, 100) }},
		{"Finish+SaveResult", jobName("finish-save"), func(i int, job string, r anarchon.StoredResult) bool { return s.finishSave(i, job, r, 100) }},
	}
	slot := baseSlot()
	start := ms(time.Now()).Add(-time.Minute)
	at := func(k int) time.Time { return start.Add(time.Duration(k) * time.Second) }
	held := make([][]bool, len(paths))
	for p, pt := range paths {
		s.prepare(pt.job, 100)
		job := pt.job
		// Slot 1: the holder finishes with an error, output and times.
		a := rclaim(job, slot, "a1-"+pt.name, "a", longLease)
		want(t, pt.name+": claim of slot 1", s.lclaim(0, a), anarchon.OutcomeWon)
		r := resultAt(slot, a.Token, "a", 1, anarchon.StatusError, at(0))
		r.Error, r.Output = "boom", "out\n"
		held[p] = append(held[p], pt.finish(1, job, r))
		// Slot 2: the holder released the run, then finishes it.
		b := rclaim(job, slot+1000, "b1-"+pt.name, "a", longLease)
		want(t, pt.name+": claim of slot 2", s.lclaim(0, b), anarchon.OutcomeWon)
		if !s.release(0, job, b.Slot, b.Token) {
			t.Fatalf("%s: Release of slot 2 returned false", pt.name)
		}
		held[p] = append(held[p], pt.finish(0, job, resultAt(b.Slot, b.Token, "a", 1, anarchon.StatusSuccess, at(1))))
		// Slot 3: a backup took over from the released holder, which then
		// finishes; then the backup finishes.
		c := rclaim(job, slot+2000, "c1-"+pt.name, "a", longLease)
		want(t, pt.name+": claim of slot 3", s.lclaim(0, c), anarchon.OutcomeWon)
		if !s.release(0, job, c.Slot, c.Token) {
			t.Fatalf("%s: Release of slot 3 returned false", pt.name)
		}
		c2 := rclaim(job, c.Slot, "c2-"+pt.name, "b", longLease)
		want(t, pt.name+": takeover of slot 3", s.lclaim(1, c2), anarchon.OutcomeWon)
		held[p] = append(held[p], pt.finish(0, job, resultAt(c.Slot, c.Token, "a", 1, anarchon.StatusSuccess, at(2))))
		held[p] = append(held[p], pt.finish(1, job, resultAt(c.Slot, c2.Token, "b", 2, anarchon.StatusSuccess, at(3))))
	}
	for i := range held[0] {
		if held[0][i] != held[1][i] {
			t.Errorf("finish #%d: FinishResult answered %v, Finish %v", i+1, held[0][i], held[1][i])
		}
	}
	// The same claims afterwards get the same answers.
	for k := range int64(3) {
		var outs [2]anarchon.ClaimOutcome
		for p, pt := range paths {
			outs[p] = s.lclaim(p, rclaim(pt.job, slot+k*1000, token(), "z", longLease))
		}
		if outs[0].Kind != outs[1].Kind || outs[0].Status != outs[1].Status || outs[0].Attempt != outs[1].Attempt {
			t.Errorf("slot %d: a claim after FinishResult gets %v %q attempt %d, after Finish and SaveResult %v %q attempt %d",
				k+1, outs[0].Kind, outs[0].Status, outs[0].Attempt, outs[1].Kind, outs[1].Status, outs[1].Attempt)
		}
	}
	// The same records, but for the job and the tokens' suffixes.
	var hist [2][]anarchon.RunRecord
	for p, pt := range paths {
		hist[p] = s.history(p, pt.job, 0)
	}
	if len(hist[0]) != len(hist[1]) {
		t.Fatalf("History after FinishResult: %d records, after Finish and SaveResult: %d\n%+v\n%+v", len(hist[0]), len(hist[1]), hist[0], hist[1])
	}
	norm := func(r anarchon.RunRecord, p int) anarchon.RunRecord {
		r.Job = ""
		if n := len(r.Token) - len(paths[p].name); n > 0 && r.Token[n:] == paths[p].name {
			r.Token = r.Token[:n]
		}
		r.ClaimedAt = time.Time{} // the store's own clock; checked for presence below
		return r
	}
	for i := range hist[0] {
		a, b := norm(hist[0][i], 0), norm(hist[1][i], 1)
		if !sameRecord(a, b) || hist[0][i].ClaimedAt.IsZero() != hist[1][i].ClaimedAt.IsZero() {
			t.Errorf("record %d: after FinishResult %+v\nafter Finish and SaveResult %+v", i, hist[0][i], hist[1][i])
		}
	}
}

// testLeaseHistoryLimits: a slot with two takeovers, whose earlier
// attempts have records without a start time, and an older slot: every
// limit gives the first records of the whole history, the finished run
// with its start time and duration.
func testLeaseHistoryLimits(t *testing.T, h Harness) {
	leaseTest(t, h, "Limit", func(t *testing.T, s *store, job string, slot int64) {
		s.finishResult(0, job, result(slot, lclaimToken(t, s, job, slot, "old", 1), "old", 1, anarchon.StatusSuccess), 100)
		newest := slot + 60000
		var last string
		for attempt := 1; attempt <= 3; attempt++ {
			last = lclaimToken(t, s, job, newest, "inst", attempt)
			if attempt < 3 && !s.release(attempt, job, newest, last) {
				t.Fatalf("Release by attempt %d returned false", attempt)
			}
		}
		if !s.finishResult(1, job, result(newest, last, "inst", 3, anarchon.StatusSuccess), 100) {
			t.Fatal("the finish of the third attempt, the holder, was refused")
		}
		recs := s.history(0, job, 0)
		if len(recs) == 0 || recs[0].Token != last || recs[0].StartedAt.IsZero() || recs[0].FinishedAt.IsZero() {
			t.Fatalf("History: the newest record is %+v, want the finished third attempt with its start and end", recs)
		}
		s.checkLimits(job)
	})
}

// lclaimToken wins a lease claim of slot on handle attempt with a fresh
// token, checks the attempt number and returns the token.
func lclaimToken(t *testing.T, s *store, job string, slot int64, inst string, attempt int) string {
	t.Helper()
	c := rclaim(job, slot, token(), inst, longLease)
	out := s.lclaim(attempt, c)
	want(t, "claim", out, anarchon.OutcomeWon)
	if out.Attempt != attempt {
		t.Fatalf("claim of slot %d: attempt %d, want %d", slot, out.Attempt, attempt)
	}
	return c.Token
}
