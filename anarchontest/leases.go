package anarchontest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// rs returns handle i's RunStore.
func (s *store) rs(i int) anarchon.RunStore {
	s.t.Helper()
	lb, ok := s.b(i).(anarchon.LeaseBackend)
	if !ok {
		s.t.Fatalf("handle %d is not an anarchon.LeaseBackend", i%len(s.bs))
	}
	return lb.Runs()
}

// rclaim is a lease claim with overlap allowed, 3 attempts and the given
// lease.
func rclaim(job string, slot int64, tok, inst string, lease time.Duration) anarchon.RunClaim {
	return anarchon.RunClaim{
		ClaimInput:   input(job, slot, tok, inst),
		Lease:        lease,
		AllowOverlap: true,
		MaxAttempts:  3,
	}
}

// lclaim claims on handle i's RunStore; on a win it calls RecordClaim when
// the backend has it, as the scheduler does.
func (s *store) lclaim(i int, c anarchon.RunClaim) anarchon.ClaimOutcome {
	s.t.Helper()
	out, err := s.rs(i).Claim(s.ctx, c)
	if err != nil {
		s.t.Fatalf("handle %d: RunStore.Claim(%s): %v", i%len(s.bs), fmtIn(c.ClaimInput), err)
	}
	if out.Kind == anarchon.OutcomeWon {
		s.recordClaim(i, c.ClaimInput)
	}
	return out
}

// want fails the test unless out is of kind k.
func want(t *testing.T, what string, out anarchon.ClaimOutcome, k anarchon.OutcomeKind) {
	t.Helper()
	if out.Kind != k {
		t.Fatalf("%s: outcome %v (%+v), want %v", what, out.Kind, out, k)
	}
}

func (s *store) heartbeat(i int, job string, slot int64, tok string, lease time.Duration) bool {
	s.t.Helper()
	ok, err := s.rs(i).Heartbeat(s.ctx, anarchon.HeartbeatInput{Job: job, Slot: slot, Token: tok, Lease: lease})
	if err != nil {
		s.t.Fatalf("Heartbeat: %v", err)
	}
	return ok
}

func (s *store) finish(i int, job string, slot int64, tok string, st anarchon.Status) bool {
	s.t.Helper()
	ok, err := s.rs(i).Finish(s.ctx, anarchon.FinishInput{Job: job, Slot: slot, Token: tok, Status: st})
	if err != nil {
		s.t.Fatalf("Finish: %v", err)
	}
	return ok
}

// finishSave ends token r.Token's run of r.Slot with r as the scheduler
// does without a ResultFinisher: Finish, then SaveResult, with the status
// lease_lost if Finish found another holder. It reports Finish's answer.
func (s *store) finishSave(i int, job string, r anarchon.StoredResult, size int) bool {
	s.t.Helper()
	held := s.finish(i, job, r.Slot, r.Token, r.Status)
	if !held {
		r.Status = anarchon.StatusLeaseLost
	}
	s.save(i, job, r, size, 0)
	return held
}

// finisher returns handle i's RunStore as an anarchon.ResultFinisher, or
// nil.
func (s *store) finisher(i int) anarchon.ResultFinisher {
	f, _ := s.rs(i).(anarchon.ResultFinisher)
	return f
}

// finishResult ends r.Token's run as the scheduler does: FinishResult
// where the store has it, Finish and SaveResult otherwise.
func (s *store) finishResult(i int, job string, r anarchon.StoredResult, size int) bool {
	s.t.Helper()
	f := s.finisher(i)
	if f == nil {
		return s.finishSave(i, job, r, size)
	}
	ok, err := f.FinishResult(s.ctx, anarchon.SaveResultInput{Job: job, Result: r, HistorySize: size})
	if err != nil {
		s.t.Fatalf("handle %d: FinishResult(%q, slot %d, token %s): %v", i%len(s.bs), job, r.Slot, r.Token, err)
	}
	return ok
}

func (s *store) release(i int, job string, slot int64, tok string) bool {
	s.t.Helper()
	ok, err := s.rs(i).Release(s.ctx, anarchon.ReleaseInput{Job: job, Slot: slot, Token: tok})
	if err != nil {
		s.t.Fatalf("Release: %v", err)
	}
	return ok
}

func (s *store) active(i int, job string) []anarchon.ActiveRun {
	s.t.Helper()
	runs, err := s.rs(i).Active(s.ctx, job)
	if err != nil {
		s.t.Fatalf("Active: %v", err)
	}
	return runs
}

// leaseTest runs f as a parallel subtest on a fresh 2-handle store with a
// prepared job.
func leaseTest(t *testing.T, h Harness, name string, f func(t *testing.T, s *store, job string, slot int64)) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		job := jobName("lease")
		s.prepare(job, 100)
		f(t, s, job, baseSlot())
	})
}

func testRunStore(t *testing.T, h Harness) {
	t.Run("Claim", func(t *testing.T) { testRunClaimTable(t, h) })

	leaseTest(t, h, "Heartbeat/WrongToken", func(t *testing.T, s *store, job string, slot int64) {
		a := token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
		if s.heartbeat(1, job, slot, token(), longLease) {
			t.Error("Heartbeat with another token returned true")
		}
		if s.heartbeat(1, job, slot+1000, a, longLease) {
			t.Error("Heartbeat of an unclaimed slot returned true")
		}
		out := s.lclaim(1, rclaim(job, slot, token(), "b", longLease))
		want(t, "claim after a wrong-token heartbeat", out, anarchon.OutcomeRunning)
		if out.Holder != "a" || out.Attempt != 1 {
			t.Errorf("holder %q attempt %d, want a 1", out.Holder, out.Attempt)
		}
	})
	leaseTest(t, h, "Heartbeat/Extends", func(t *testing.T, s *store, job string, slot int64) {
		a := token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", h.Lease)), anarchon.OutcomeWon)
		h.Sleep(h.Lease / 2)
		if !s.heartbeat(0, job, slot, a, longLease) {
			t.Fatal("Heartbeat by the holder returned false")
		}
		h.Sleep(h.expiry()) // past the original lease
		out := s.lclaim(1, rclaim(job, slot, token(), "b", longLease))
		want(t, "claim after the original lease ran out, heartbeat extended it", out, anarchon.OutcomeRunning)
		if !s.heartbeat(0, job, slot, a, longLease) {
			t.Error("second Heartbeat by the holder returned false")
		}
	})
	leaseTest(t, h, "Heartbeat/AfterRelease", func(t *testing.T, s *store, job string, slot int64) {
		a := token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
		if !s.release(0, job, slot, a) {
			t.Fatal("Release by the holder returned false")
		}
		if s.heartbeat(0, job, slot, a, longLease) {
			t.Error("Heartbeat of a released run returned true")
		}
	})
	leaseTest(t, h, "Finish/WrongToken", func(t *testing.T, s *store, job string, slot int64) {
		a := token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
		if s.finish(1, job, slot, token(), anarchon.StatusSuccess) {
			t.Error("Finish with another token returned true")
		}
		if s.finish(1, job, slot+1000, a, anarchon.StatusSuccess) {
			t.Error("Finish of an unclaimed slot returned true")
		}
		want(t, "claim after a wrong-token finish", s.lclaim(1, rclaim(job, slot, token(), "b", longLease)), anarchon.OutcomeRunning)
	})
	leaseTest(t, h, "Finish/AfterTakeover", func(t *testing.T, s *store, job string, slot int64) {
		a, b := token(), token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
		if !s.release(0, job, slot, a) {
			t.Fatal("Release by the holder returned false")
		}
		want(t, "backup claim", s.lclaim(1, rclaim(job, slot, b, "b", longLease)), anarchon.OutcomeWon)
		if s.finish(0, job, slot, a, anarchon.StatusSuccess) {
			t.Error("Finish by the old holder after a takeover returned true")
		}
		if !s.finish(1, job, slot, b, anarchon.StatusError) {
			t.Error("Finish by the new holder returned false")
		}
		out := s.lclaim(0, rclaim(job, slot, token(), "c", longLease))
		want(t, "claim after finish", out, anarchon.OutcomeDone)
		if out.Status != "" && out.Status != anarchon.StatusError {
			t.Errorf("done outcome status %q, want %q (or empty)", out.Status, anarchon.StatusError)
		}
	})
	leaseTest(t, h, "Finish/Released", func(t *testing.T, s *store, job string, slot int64) {
		a := token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
		if !s.release(0, job, slot, a) {
			t.Fatal("Release by the holder returned false")
		}
		if !s.finish(0, job, slot, a, anarchon.StatusSuccess) {
			t.Error("Finish by the token that released the run returned false")
		}
		want(t, "claim after finish", s.lclaim(1, rclaim(job, slot, token(), "b", longLease)), anarchon.OutcomeDone)
	})
	if _, ok := open(t, h, 1).rs(0).(anarchon.ResultFinisher); ok {
		leaseTest(t, h, "FinishResult", func(t *testing.T, s *store, job string, slot int64) {
			a, b := token(), token()
			want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
			want(t, "claim", s.lclaim(0, rclaim(job, slot+1000, b, "a", longLease)), anarchon.OutcomeWon)
			f := s.rs(1).(anarchon.ResultFinisher)
			res := anarchon.StoredResult{Slot: slot, Token: a, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess,
				StartedAt: s.now(), FinishedAt: s.now(), Output: "out"}
			ok, err := f.FinishResult(s.ctx, anarchon.SaveResultInput{Job: job, Result: res, HistorySize: 100})
			if err != nil || !ok {
				t.Fatalf("FinishResult by the holder = %v, %v; want true", ok, err)
			}
			want(t, "claim after FinishResult", s.lclaim(1, rclaim(job, slot, token(), "b", longLease)), anarchon.OutcomeDone)
			// Another token does not finish the run, and its result is
			// kept as lease_lost.
			other := token()
			ok, err = f.FinishResult(s.ctx, anarchon.SaveResultInput{Job: job, Result: anarchon.StoredResult{Slot: slot + 1000, Token: other, InstanceID: "b", Attempt: 1, Status: anarchon.StatusSuccess}, HistorySize: 100})
			if err != nil || ok {
				t.Fatalf("FinishResult with another token = %v, %v; want false", ok, err)
			}
			want(t, "claim after a wrong-token FinishResult", s.lclaim(1, rclaim(job, slot+1000, token(), "c", longLease)), anarchon.OutcomeRunning)
			byToken := map[string]anarchon.RunRecord{}
			for _, r := range s.history(0, job, 0) {
				byToken[r.Token] = r
			}
			if r := byToken[a]; r.Status != anarchon.StatusSuccess || r.Output != "out" || r.InstanceID != "a" {
				t.Errorf("history record of the finished run %+v, want success with its output", r)
			}
			if r := byToken[other]; r.Status != anarchon.StatusLeaseLost {
				t.Errorf("history record of the wrong-token result %+v, want lease_lost", r)
			}
		})
	}
	leaseTest(t, h, "Release/WrongToken", func(t *testing.T, s *store, job string, slot int64) {
		a := token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
		if s.release(1, job, slot, token()) {
			t.Error("Release with another token returned true")
		}
		if s.release(1, job, slot+1000, a) {
			t.Error("Release of an unclaimed slot returned true")
		}
		want(t, "claim after a wrong-token release", s.lclaim(1, rclaim(job, slot, token(), "b", longLease)), anarchon.OutcomeRunning)
	})
	leaseTest(t, h, "Active", func(t *testing.T, s *store, job string, slot int64) {
		s1, s2, s3, s4 := slot, slot+1000, slot+2000, slot+3000
		t4 := token()
		want(t, "claim s4", s.lclaim(0, rclaim(job, s4, t4, "d", h.Lease)), anarchon.OutcomeWon)
		h.Sleep(h.expiry())
		t1, t2, t3 := token(), token(), token()
		want(t, "claim s1", s.lclaim(0, rclaim(job, s1, t1, "a", longLease)), anarchon.OutcomeWon)
		want(t, "claim s2", s.lclaim(1, rclaim(job, s2, t2, "b", longLease)), anarchon.OutcomeWon)
		want(t, "claim s3", s.lclaim(0, rclaim(job, s3, t3, "c", longLease)), anarchon.OutcomeWon)
		if !s.release(1, job, s2, t2) {
			t.Fatal("Release s2 returned false")
		}
		if !s.finish(0, job, s3, t3, anarchon.StatusSuccess) {
			t.Fatal("Finish s3 returned false")
		}
		other := jobName("lease-other")
		s.prepare(other, 10)
		want(t, "claim of another job", s.lclaim(0, rclaim(other, s1, token(), "x", longLease)), anarchon.OutcomeWon)

		runs := s.active(1, job)
		type exp struct {
			slot  int64
			tok   string
			inst  string
			state anarchon.RunState
			live  bool
		}
		wantRuns := []exp{
			{s1, t1, "a", anarchon.RunStateRunning, true},
			{s2, t2, "b", anarchon.RunStateReleased, false},
			{s4, t4, "d", anarchon.RunStateRunning, false},
		}
		if len(runs) != len(wantRuns) {
			t.Fatalf("Active: %d runs %+v, want %d (s1 live, s2 released, s4 expired; not s3 done)", len(runs), runs, len(wantRuns))
		}
		for i, w := range wantRuns {
			r := runs[i]
			if r.Slot != w.slot || r.Token != w.tok || r.InstanceID != w.inst || r.State != w.state || r.Live != w.live || r.Attempt != 1 {
				t.Errorf("Active[%d] = %+v; want slot %d token %s instance %s state %s live %v attempt 1", i, r, w.slot, w.tok, w.inst, w.state, w.live)
			}
		}
		if runs[0].LeaseUntil.IsZero() {
			t.Error("Active: a live run without LeaseUntil")
		}
		if got := s.active(0, jobName("lease-none")); len(got) != 0 {
			t.Errorf("Active of a job without runs: %d runs", len(got))
		}
	})
	t.Run("Race", func(t *testing.T) {
		t.Parallel()
		testRunRace(t, h)
	})
	t.Run("FinishResultSame", func(t *testing.T) { testFinishResultSame(t, h) })
	t.Run("History", func(t *testing.T) {
		testTakeoverHistory(t, h)
		testLeaseHistoryLimits(t, h)
	})
	leaseTest(t, h, "History/Claims", func(t *testing.T, s *store, job string, slot int64) {
		a, b := token(), token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
		recs := s.history(1, job, 0)
		if len(recs) != 1 || recs[0].Token != a || recs[0].Attempt != 1 || recs[0].Status != anarchon.StatusRunning || recs[0].InstanceID != "a" {
			t.Fatalf("History after a won lease claim: %+v; want one running record of token %s, instance a, attempt 1", recs, a)
		}
		if !s.release(0, job, slot, a) {
			t.Fatal("Release returned false")
		}
		want(t, "backup claim", s.lclaim(1, rclaim(job, slot, b, "b", longLease)), anarchon.OutcomeWon)
		var found bool
		for _, r := range s.history(0, job, 0) {
			if r.Token == b {
				found = true
				if r.Attempt != 2 || r.InstanceID != "b" {
					t.Errorf("History: takeover record attempt %d instance %q, want 2 b", r.Attempt, r.InstanceID)
				}
			}
		}
		if !found {
			t.Fatal("History: no record of the takeover's claim")
		}
		now := ms(time.Now())
		s.save(1, job, anarchon.StoredResult{Slot: slot, Token: b, InstanceID: "b", Attempt: 2, Status: anarchon.StatusSuccess, StartedAt: now, FinishedAt: now}, 100, 0)
		if !s.finish(1, job, slot, b, anarchon.StatusSuccess) {
			t.Fatal("Finish returned false")
		}
		recs = s.history(0, job, 0)
		checkTokensUnique(t, recs)
		for _, r := range recs {
			if r.Token == b && (r.Status != anarchon.StatusSuccess || r.Attempt != 2) {
				t.Errorf("History: takeover record status %q attempt %d, want success 2", r.Status, r.Attempt)
			}
		}
	})
	leaseTest(t, h, "History/Settled", func(t *testing.T, s *store, job string, slot int64) {
		// A late and an overlapping slot, saved by the scheduler with the
		// claim's token, give one record each, with the claim's time (the
		// store's clock when the claim decided) as a run that ran has it.
		now := s.now()
		late := now.Add(-10 * time.Minute).Truncate(time.Second).UnixMilli()
		lt := token()
		c := rclaim(job, late, lt, "a", longLease)
		c.MaxLate = time.Minute
		want(t, "late claim", s.lclaim(0, c), anarchon.OutcomeLate)
		s.save(0, job, anarchon.StoredResult{Slot: late, Token: lt, InstanceID: "a", Attempt: 1, Status: anarchon.StatusMissed}, 100, 0)

		want(t, "claim", s.lclaim(0, rclaim(job, slot, token(), "a", longLease)), anarchon.OutcomeWon)
		ot := token()
		c = rclaim(job, slot+1000, ot, "b", longLease)
		c.AllowOverlap = false
		want(t, "overlapping claim", s.lclaim(1, c), anarchon.OutcomeOverlap)
		s.save(1, job, anarchon.StoredResult{Slot: slot + 1000, Token: ot, InstanceID: "b", Attempt: 1, Status: anarchon.StatusSkipped}, 100, 0)

		recs := s.history(0, job, 0)
		checkTokensUnique(t, recs)
		got := map[string]anarchon.Status{}
		for _, r := range recs {
			got[r.Token] = r.Status
		}
		if got[lt] != anarchon.StatusMissed {
			t.Errorf("History: late slot status %q, want %q", got[lt], anarchon.StatusMissed)
		}
		if got[ot] != anarchon.StatusSkipped {
			t.Errorf("History: overlapping slot status %q, want %q", got[ot], anarchon.StatusSkipped)
		}
		end := s.now()
		for _, r := range recs {
			if (r.Token == lt || r.Token == ot) && (r.ClaimedAt.Before(ms(now)) || r.ClaimedAt.After(end)) {
				t.Errorf("History: %s slot's ClaimedAt %v, want the claim's time, in [%v, %v]", r.Status, r.ClaimedAt, ms(now), end)
			}
		}
	})
	t.Run("OddJobName", func(t *testing.T) {
		t.Parallel()
		checkNameRuns(t, open(t, h, 2), oddJobName())
	})
}

// checkNameRuns runs a lease run of job through claim, heartbeat, Active
// and Finish on a 2-handle store, and checks that history returns job as
// given.
func checkNameRuns(t *testing.T, s *store, job string) {
	t.Helper()
	s.prepare(job, 10)
	slot := baseSlot()
	a := token()
	want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
	want(t, "second claim", s.lclaim(1, rclaim(job, slot, token(), "b", longLease)), anarchon.OutcomeRunning)
	if !s.heartbeat(1, job, slot, a, longLease) {
		t.Error("Heartbeat returned false")
	}
	if runs := s.active(1, job); len(runs) != 1 || runs[0].Token != a {
		t.Errorf("Active: %+v, want the one run of token %s", runs, a)
	}
	if !s.finish(1, job, slot, a, anarchon.StatusSuccess) {
		t.Error("Finish returned false")
	}
	want(t, "claim after finish", s.lclaim(0, rclaim(job, slot, token(), "c", longLease)), anarchon.OutcomeDone)
	recs := s.history(1, job, 0)
	if len(recs) == 0 {
		t.Fatal("History: no record")
	}
	for _, r := range recs {
		if r.Job != job {
			t.Errorf("History: Job = %s (%d bytes), want %s (%d bytes)", quote(r.Job), len(r.Job), quote(job), len(job))
		}
	}
}

// testRunClaimTable has one subtest per row of SPEC §6's claim table.
func testRunClaimTable(t *testing.T, h Harness) {
	leaseTest(t, h, "Absent", func(t *testing.T, s *store, job string, slot int64) {
		var before time.Time
		hasClock := hasAbility[anarchon.ServerClock](s.b(0))
		if hasClock {
			before = s.now()
		}
		out := s.lclaim(0, rclaim(job, slot, token(), "a", longLease))
		want(t, "first claim", out, anarchon.OutcomeWon)
		if out.Attempt != 1 {
			t.Errorf("won attempt %d, want 1", out.Attempt)
		}
		if hasClock {
			after := s.now()
			lo, hi := before.Add(longLease-50*time.Millisecond), after.Add(longLease+50*time.Millisecond)
			if out.LeaseUntil.Before(lo) || out.LeaseUntil.After(hi) {
				t.Errorf("LeaseUntil %v, want store time + lease, in [%v, %v]", out.LeaseUntil, lo, hi)
			}
		} else if out.LeaseUntil.IsZero() {
			t.Error("won outcome without LeaseUntil")
		}
	})
	leaseTest(t, h, "RunningSameToken", func(t *testing.T, s *store, job string, slot int64) {
		a := token()
		first := s.lclaim(0, rclaim(job, slot, a, "a", longLease))
		want(t, "first claim", first, anarchon.OutcomeWon)
		h.Sleep(50 * time.Millisecond)
		again := s.lclaim(1, rclaim(job, slot, a, "a", longLease))
		want(t, "repeat with the same token", again, anarchon.OutcomeWon)
		if again.Attempt != 1 {
			t.Errorf("repeat: attempt %d, want 1", again.Attempt)
		}
		if !again.LeaseUntil.After(first.LeaseUntil) {
			t.Errorf("repeat did not renew the lease: %v, first %v", again.LeaseUntil, first.LeaseUntil)
		}
	})
	leaseTest(t, h, "Done", func(t *testing.T, s *store, job string, slot int64) {
		a := token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
		if !s.finish(0, job, slot, a, anarchon.StatusSuccess) {
			t.Fatal("Finish by the holder returned false")
		}
		for i, tok := range []string{token(), a} {
			out := s.lclaim(i, rclaim(job, slot, tok, "b", longLease))
			want(t, "claim of a finished slot", out, anarchon.OutcomeDone)
			if out.Status != "" && out.Status != anarchon.StatusSuccess {
				t.Errorf("done outcome status %q, want %q (or empty)", out.Status, anarchon.StatusSuccess)
			}
		}
	})
	leaseTest(t, h, "RunningOtherTokenLive", func(t *testing.T, s *store, job string, slot int64) {
		first := s.lclaim(0, rclaim(job, slot, token(), "inst-a", longLease))
		want(t, "first claim", first, anarchon.OutcomeWon)
		out := s.lclaim(1, rclaim(job, slot, token(), "inst-b", longLease))
		want(t, "second claim", out, anarchon.OutcomeRunning)
		if out.Holder != "inst-a" || out.Attempt != 1 {
			t.Errorf("running outcome holder %q attempt %d, want inst-a 1", out.Holder, out.Attempt)
		}
		if !sameMs(out.LeaseUntil, first.LeaseUntil) {
			t.Errorf("running outcome LeaseUntil %v, want the holder's %v", out.LeaseUntil, first.LeaseUntil)
		}
	})
	leaseTest(t, h, "ExpiredTakeover", func(t *testing.T, s *store, job string, slot int64) {
		a, b := token(), token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", h.Lease)), anarchon.OutcomeWon)
		h.Sleep(h.expiry())
		out := s.lclaim(1, rclaim(job, slot, b, "b", longLease))
		want(t, "claim after the lease expired", out, anarchon.OutcomeWon)
		if out.Attempt != 2 {
			t.Errorf("takeover attempt %d, want 2", out.Attempt)
		}
		if s.heartbeat(0, job, slot, a, longLease) {
			t.Error("Heartbeat by the old holder after a takeover returned true")
		}
		if s.release(0, job, slot, a) {
			t.Error("Release by the old holder after a takeover returned true")
		}
		out = s.lclaim(0, rclaim(job, slot, token(), "c", longLease))
		want(t, "third claim", out, anarchon.OutcomeRunning)
		if out.Holder != "b" || out.Attempt != 2 {
			t.Errorf("running outcome holder %q attempt %d, want b 2", out.Holder, out.Attempt)
		}
	})
	leaseTest(t, h, "ReleasedTakeover", func(t *testing.T, s *store, job string, slot int64) {
		a := token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
		if !s.release(0, job, slot, a) {
			t.Fatal("Release by the holder returned false")
		}
		out := s.lclaim(1, rclaim(job, slot, token(), "b", longLease))
		want(t, "claim after release", out, anarchon.OutcomeWon)
		if out.Attempt != 2 {
			t.Errorf("takeover attempt %d, want 2", out.Attempt)
		}
	})
	leaseTest(t, h, "ReleasedSameToken", func(t *testing.T, s *store, job string, slot int64) {
		// A token that released its run holds it no more: its next claim
		// is a takeover like any other token's, not a renewal.
		a := token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
		if !s.release(0, job, slot, a) {
			t.Fatal("Release by the holder returned false")
		}
		out := s.lclaim(1, rclaim(job, slot, a, "a", longLease))
		want(t, "claim by the released token", out, anarchon.OutcomeWon)
		if out.Attempt != 2 {
			t.Errorf("claim by the released token: attempt %d, want 2 (a takeover)", out.Attempt)
		}
	})
	leaseTest(t, h, "AttemptsUsedUp/Released", func(t *testing.T, s *store, job string, slot int64) {
		for i, inst := range []string{"a", "b"} {
			tok := token()
			c := rclaim(job, slot, tok, inst, longLease)
			c.MaxAttempts = 2
			out := s.lclaim(i, c)
			want(t, "claim "+inst, out, anarchon.OutcomeWon)
			if out.Attempt != i+1 {
				t.Errorf("claim %s: attempt %d, want %d", inst, out.Attempt, i+1)
			}
			if !s.release(i, job, slot, tok) {
				t.Fatalf("Release by %s returned false", inst)
			}
		}
		for i := range 2 {
			c := rclaim(job, slot, token(), "c", longLease)
			c.MaxAttempts = 2
			out := s.lclaim(i, c)
			want(t, "claim after two attempts", out, anarchon.OutcomeDone)
			if out.Status != anarchon.StatusAbandoned {
				t.Errorf("claim after two attempts: status %q, want %q", out.Status, anarchon.StatusAbandoned)
			}
		}
	})
	leaseTest(t, h, "AttemptsUsedUp/Expired", func(t *testing.T, s *store, job string, slot int64) {
		c := rclaim(job, slot, token(), "a", h.Lease)
		c.MaxAttempts = 0 // means 1
		want(t, "claim", s.lclaim(0, c), anarchon.OutcomeWon)
		h.Sleep(h.expiry())
		c = rclaim(job, slot, token(), "b", longLease)
		c.MaxAttempts = 0
		out := s.lclaim(1, c)
		want(t, "claim after the only attempt expired (MaxAttempts 0 means 1)", out, anarchon.OutcomeDone)
		if out.Status != anarchon.StatusAbandoned {
			t.Errorf("status %q, want %q", out.Status, anarchon.StatusAbandoned)
		}
	})
	leaseTest(t, h, "Late", func(t *testing.T, s *store, job string, slot int64) {
		now := s.now()
		late := now.Add(-10 * time.Minute).Truncate(time.Second).UnixMilli()
		a := token()
		c := rclaim(job, late, a, "a", longLease)
		c.MaxLate = time.Minute
		want(t, "claim 10 minutes past due with MaxLate 1m", s.lclaim(0, c), anarchon.OutcomeLate)
		for i, tok := range []string{token(), a} {
			c := rclaim(job, late, tok, "b", longLease)
			c.MaxLate = time.Minute
			want(t, "claim of a missed slot", s.lclaim(i, c), anarchon.OutcomeNone)
		}
		c = rclaim(job, late, token(), "c", longLease) // MaxLate 0: no limit, but the slot is missed
		want(t, "claim of a missed slot without MaxLate", s.lclaim(1, c), anarchon.OutcomeNone)

		c = rclaim(job, late-60000, token(), "d", longLease) // MaxLate 0: no limit
		want(t, "claim 11 minutes past due with MaxLate 0", s.lclaim(0, c), anarchon.OutcomeWon)
		c = rclaim(job, now.Truncate(time.Second).UnixMilli(), token(), "e", longLease)
		c.MaxLate = time.Minute
		want(t, "claim of a due slot with MaxLate 1m", s.lclaim(1, c), anarchon.OutcomeWon)
	})
	leaseTest(t, h, "Overlap", func(t *testing.T, s *store, job string, slot int64) {
		noOverlap := func(slot int64, inst string) anarchon.RunClaim {
			c := rclaim(job, slot, token(), inst, longLease)
			c.AllowOverlap = false
			return c
		}
		first := noOverlap(slot, "a")
		want(t, "claim of slot 1", s.lclaim(0, first), anarchon.OutcomeWon)
		want(t, "claim of slot 2 while slot 1 runs", s.lclaim(1, noOverlap(slot+1000, "b")), anarchon.OutcomeOverlap)
		want(t, "claim of skipped slot 2", s.lclaim(0, noOverlap(slot+1000, "c")), anarchon.OutcomeNone)
		third := rclaim(job, slot+2000, token(), "d", longLease) // AllowOverlap
		want(t, "claim of slot 3 with AllowOverlap", s.lclaim(1, third), anarchon.OutcomeWon)
		if !s.finish(0, job, slot, first.Token, anarchon.StatusSuccess) || !s.finish(1, job, slot+2000, third.Token, anarchon.StatusSuccess) {
			t.Fatal("Finish returned false")
		}
		want(t, "claim of slot 4 after the others finished", s.lclaim(0, noOverlap(slot+3000, "e")), anarchon.OutcomeWon)
		other := jobName("lease-other")
		s.prepare(other, 10)
		c := noOverlap(slot+4000, "f")
		c.Job = other
		want(t, "claim of slot 5 in another job while slot 4 runs", s.lclaim(0, c), anarchon.OutcomeWon)
	})
	leaseTest(t, h, "Overlap/Expired", func(t *testing.T, s *store, job string, slot int64) {
		c := rclaim(job, slot, token(), "a", h.Lease)
		c.AllowOverlap = false
		want(t, "claim of slot 1", s.lclaim(0, c), anarchon.OutcomeWon)
		h.Sleep(h.expiry())
		c = rclaim(job, slot+1000, token(), "b", longLease)
		c.AllowOverlap = false
		want(t, "claim of slot 2 after slot 1's lease expired", s.lclaim(1, c), anarchon.OutcomeWon)
	})
	testOverlapLimit(t, h)
}

// testRunRace: h.Racers goroutines over h.Handles handles claim the same
// lease slot, round after round: one won, every other answer running with
// the winner as holder.
func testRunRace(t *testing.T, h Harness) {
	s := open(t, h, h.Handles)
	job := jobName("lease-race")
	s.prepare(job, 10)
	rounds := max(h.Rounds/4, 5)
	slot0 := baseSlot()
	type answer struct {
		g   int
		out anarchon.ClaimOutcome
	}
	answers := make([][]answer, rounds)
	var mu sync.Mutex
	var errs atomic.Int32
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range h.Racers {
		wg.Go(func() {
			rs := s.rs(g)
			<-start
			for r := range rounds {
				c := rclaim(job, slot0+int64(r)*1000, fmt.Sprintf("racer-%d-%d-%s", g, r, randHex(4)), fmt.Sprintf("racer-%d", g), longLease)
				out, err := rs.Claim(s.ctx, c)
				if err != nil {
					if errs.Add(1) <= 5 {
						t.Errorf("racer %d, round %d: RunStore.Claim: %v", g, r, err)
					}
					continue
				}
				mu.Lock()
				answers[r] = append(answers[r], answer{g, out})
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	bad := 0
	for r, as := range answers {
		winner := -1
		won := 0
		for _, a := range as {
			if a.out.Kind == anarchon.OutcomeWon {
				won++
				winner = a.g
			}
		}
		if won != 1 {
			bad++
			if bad <= 10 {
				t.Errorf("round %d: %d won, want exactly 1", r, won)
			}
			continue
		}
		for _, a := range as {
			if a.g == winner {
				continue
			}
			if a.out.Kind != anarchon.OutcomeRunning || a.out.Holder != fmt.Sprintf("racer-%d", winner) || a.out.Attempt != 1 {
				bad++
				if bad <= 10 {
					t.Errorf("round %d, racer %d: %v holder %q attempt %d; want running, holder racer-%d, attempt 1", r, a.g, a.out.Kind, a.out.Holder, a.out.Attempt, winner)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d bad answers in %d rounds", bad, rounds)
	}
}

// awaitEvent reads ch until an event that match accepts, failing t if ch
// closes first or none comes within watchWait. what names the event.
func awaitEvent(t *testing.T, ch <-chan anarchon.RunEvent, what string, match func(anarchon.RunEvent) bool) {
	t.Helper()
	timer := time.NewTimer(watchWait)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch channel closed while waiting for the %s", what)
			}
			if match(ev) {
				return
			}
		case <-timer.C:
			t.Fatalf("no %s within %v", what, watchWait)
		}
	}
}

// watchJob prepares job on s (two handles) and opens a watch on handle
// 1, skipping t unless that handle is a Watcher and handle 0 has a
// RunStore to change runs with. It returns the slot to use, the watch's
// channel and the end of its context (also called when t ends).
func watchJob(t *testing.T, s *store, job string) (slot int64, ch <-chan anarchon.RunEvent, cancel context.CancelFunc) {
	t.Helper()
	w, ok := anarchon.As[anarchon.Watcher](s.b(1))
	if !ok {
		t.Skip("backend has no anarchon.Watcher")
	}
	if _, ok := s.b(0).(anarchon.LeaseBackend); !ok {
		t.Skip("backend has a Watcher but no RunStore to change runs with")
	}
	s.prepare(job, 10)
	ctx, cancel := context.WithCancel(s.ctx)
	t.Cleanup(cancel)
	ch, err := w.WatchRuns(ctx)
	if err != nil {
		t.Fatalf("WatchRuns: %v", err)
	}
	return baseSlot(), ch, cancel
}

// testWatch: a Release and a Finish made on one handle wake a watcher on
// another within watchWait. Changes made after WatchRuns returned must be
// delivered.
func testWatch(t *testing.T, h Harness) {
	s := open(t, h, 2)
	job := jobName("watch")
	slot, ch, cancel := watchJob(t, s, job)
	await := func(what string, kind anarchon.RunEventKind) {
		t.Helper()
		awaitEvent(t, ch, fmt.Sprintf("%s event for job %q slot %d", what, job, slot), func(ev anarchon.RunEvent) bool {
			return ev.Job == job && ev.Slot == slot && ev.Kind == kind
		})
	}
	a, b := token(), token()
	want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
	if !s.release(0, job, slot, a) {
		t.Fatal("Release returned false")
	}
	await("release", anarchon.RunReleased)
	want(t, "backup claim", s.lclaim(0, rclaim(job, slot, b, "b", longLease)), anarchon.OutcomeWon)
	if !s.finish(0, job, slot, b, anarchon.StatusSuccess) {
		t.Fatal("Finish returned false")
	}
	await("finish", anarchon.RunFinished)
	cancel()
	timer := time.NewTimer(watchWait)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timer.C:
			t.Fatalf("watch channel not closed within %v after its context ended", watchWait)
		}
	}
}

// testWatchSettled: a watcher sends RunFinished for a slot only once its
// run is settled, since a backup standing by on the slot ends on that
// event without claiming again (SPEC §6). A claim, a heartbeat, a retry's
// shortened lease, a takeover, a release and a claim of the released run
// send none: after each, the claim and release of a marker slot sends a
// RunReleased that the watch delivers after the step's events, and no
// RunFinished of the slot may come before it. After the finish, the
// RunFinished comes and a new claim of the slot answers done.
func testWatchSettled(t *testing.T, h Harness) {
	s := open(t, h, 2)
	job := jobName("settled")
	slot, ch, _ := watchJob(t, s, job)
	marks := 0
	step := func(what string, do func()) {
		t.Helper()
		do()
		marks++
		m, tok := slot+int64(marks)*1000, token()
		want(t, "marker claim", s.lclaim(0, rclaim(job, m, tok, "m", longLease)), anarchon.OutcomeWon)
		if !s.release(0, job, m, tok) {
			t.Fatal("marker Release returned false")
		}
		awaitEvent(t, ch, fmt.Sprintf("marker event for job %q slot %d after %s", job, m, what), func(ev anarchon.RunEvent) bool {
			if ev.Job == job && ev.Slot == slot && ev.Kind == anarchon.RunFinished {
				t.Errorf("RunFinished for slot %d after %s, before its run was settled", slot, what)
			}
			return ev.Job == job && ev.Slot == m && ev.Kind == anarchon.RunReleased
		})
	}
	a, b, c := token(), token(), token()
	step("a claim", func() { want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", h.Lease)), anarchon.OutcomeWon) })
	step("a heartbeat", func() {
		if !s.heartbeat(0, job, slot, a, h.Lease) {
			t.Fatal("Heartbeat returned false")
		}
	})
	step("a retry's shortened lease", func() {
		if !s.heartbeat(0, job, slot, a, time.Millisecond) {
			t.Fatal("Heartbeat of 1 ms returned false")
		}
	})
	step("a takeover", func() {
		h.Sleep(h.expiry())
		want(t, "takeover", s.lclaim(1, rclaim(job, slot, b, "b", longLease)), anarchon.OutcomeWon)
	})
	step("a release", func() {
		if !s.release(1, job, slot, b) {
			t.Fatal("Release returned false")
		}
	})
	step("a claim of the released run", func() {
		want(t, "claim of the released run", s.lclaim(0, rclaim(job, slot, c, "c", longLease)), anarchon.OutcomeWon)
	})
	if !s.finish(0, job, slot, c, anarchon.StatusSuccess) {
		t.Fatal("Finish returned false")
	}
	awaitEvent(t, ch, fmt.Sprintf("finish event for job %q slot %d", job, slot), func(ev anarchon.RunEvent) bool {
		return ev.Job == job && ev.Slot == slot && ev.Kind == anarchon.RunFinished
	})
	want(t, "claim after RunFinished", s.lclaim(1, rclaim(job, slot, token(), "d", longLease)), anarchon.OutcomeDone)
}

// testServerClock: ServerTime answers, and (with a real clock) is within 5
// seconds of this machine's.
func testServerClock(t *testing.T, h Harness) {
	s := open(t, h, 1)
	sc, ok := anarchon.As[anarchon.ServerClock](s.b(0))
	if !ok {
		t.Skip("backend has no anarchon.ServerClock")
	}
	st, err := sc.ServerTime(s.ctx)
	if err != nil {
		t.Fatalf("ServerTime: %v", err)
	}
	if st.IsZero() {
		t.Fatal("ServerTime returned the zero time")
	}
	if h.FakeClock {
		return
	}
	if d := time.Since(st); d > 5*time.Second || d < -5*time.Second {
		t.Errorf("ServerTime %v is %v away from this machine's clock", st, d)
	}
}
