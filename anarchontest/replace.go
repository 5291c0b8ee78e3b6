package anarchontest

import (
	"context"
	"testing"

	"github.com/anarchon/anarchon"
)

// replacer returns handle i's RunStore as an anarchon.Replacer, or nil.
func (s *store) replacer(i int) anarchon.Replacer {
	r, _ := anarchon.As[anarchon.Replacer](s.b(i))
	return r
}

func (s *store) replace(i int, job string, slot int64, tok string) ([]anarchon.ActiveRun, bool) {
	s.t.Helper()
	runs, held, err := s.replacer(i).Replace(s.ctx, anarchon.ReplaceInput{ClaimInput: input(job, slot, tok, "replacer")})
	if err != nil {
		s.t.Fatalf("handle %d: Replace(%q, slot %d): %v", i, job, slot, err)
	}
	return runs, held
}

// recordOf returns the history record of token tok, failing if there is
// none.
func (s *store) recordOf(job, tok string) anarchon.RunRecord {
	s.t.Helper()
	for _, r := range s.history(1, job, 0) {
		if r.Token == tok {
			return r
		}
	}
	s.t.Fatalf("history of %q has no record of token %s", job, tok)
	return anarchon.RunRecord{}
}

// testReplace checks anarchon.Replacer (SPEC §6, overlap replace): the
// holder of a slot settles every earlier running or released run of its
// job as replaced, each once, so that its holder's heartbeat fails and
// its history record says replaced (how the holder learns the cause), no
// backup takes it over and Active no longer lists it; later and settled
// runs are untouched; a caller that does not hold the slot changes
// nothing; with a Watcher, each replaced run is announced.
func testReplace(t *testing.T, h Harness) {
	leaseTest(t, h, "Earlier", func(t *testing.T, s *store, job string, slot int64) {
		if s.replacer(0) == nil {
			t.Skip("backend has no anarchon.Replacer")
		}
		const sec = 1000
		// Slot 3's lease expires first; then slot 1 runs, slot 2 is
		// released, slot 4 is done, slot 5 replaces, slot 6 is later.
		expired := token()
		want(t, "claim of slot 3", s.lclaim(1, rclaim(job, slot+2*sec, expired, "h-"+expired, h.Lease)), anarchon.OutcomeWon)
		h.Sleep(h.expiry())
		live, released, done, repl, later := token(), token(), token(), token(), token()
		for _, c := range []struct {
			slot int64
			tok  string
		}{{slot, live}, {slot + sec, released}, {slot + 3*sec, done}, {slot + 4*sec, repl}, {slot + 5*sec, later}} {
			want(t, "claim", s.lclaim(1, rclaim(job, c.slot, c.tok, "h-"+c.tok, longLease)), anarchon.OutcomeWon)
		}
		if !s.release(1, job, slot+sec, released) {
			t.Fatal("Release of slot 2 returned false")
		}
		if !s.finishResult(1, job, anarchon.StoredResult{Slot: slot + 3*sec, Token: done, InstanceID: "h-" + done, Attempt: 1, Status: anarchon.StatusSuccess}, 100) {
			t.Fatal("finish of slot 4 returned false")
		}

		var events <-chan anarchon.RunEvent
		if w, ok := anarchon.As[anarchon.Watcher](s.b(1)); ok {
			ctx, cancel := context.WithCancel(s.ctx)
			defer cancel()
			ch, err := w.WatchRuns(ctx)
			if err != nil {
				t.Fatalf("WatchRuns: %v", err)
			}
			events = ch
		}
		runs, held := s.replace(0, job, slot+4*sec, repl)
		if !held {
			t.Fatal("Replace by the holder of slot 5 answered not held")
		}
		type exp struct {
			slot  int64
			tok   string
			state anarchon.RunState
			live  bool
		}
		wantRuns := []exp{
			{slot, live, anarchon.RunStateRunning, true},
			{slot + sec, released, anarchon.RunStateReleased, false},
			{slot + 2*sec, expired, anarchon.RunStateRunning, false},
		}
		if len(runs) != len(wantRuns) {
			t.Fatalf("Replace returned %d runs %+v, want %d (slot 1 live, slot 2 released, slot 3 expired)", len(runs), runs, len(wantRuns))
		}
		for i, w := range wantRuns {
			r := runs[i]
			if r.Slot != w.slot || r.Token != w.tok || r.State != w.state || r.Live != w.live || r.Attempt != 1 || r.InstanceID != "h-"+w.tok {
				t.Errorf("Replace[%d] = %+v; want slot %d token %s holder h-%s state %s live %v attempt 1", i, r, w.slot, w.tok, w.tok, w.state, w.live)
			}
		}
		if !runs[0].LeaseUntil.After(s.now()) {
			t.Errorf("Replace: the live run's LeaseUntil %v is not in the future", runs[0].LeaseUntil)
		}
		if events != nil {
			pending := map[int64]bool{}
			for _, w := range wantRuns {
				pending[w.slot] = true
			}
			for len(pending) > 0 {
				awaitEvent(t, events, "finished event of each replaced run", func(ev anarchon.RunEvent) bool {
					if ev.Job == job && ev.Kind == anarchon.RunFinished && pending[ev.Slot] {
						delete(pending, ev.Slot)
						return true
					}
					return false
				})
			}
		}

		// The holder of slot 1 learns it at its next heartbeat, and from
		// its history record.
		if s.heartbeat(1, job, slot, live, longLease) {
			t.Error("Heartbeat of a replaced run answered true")
		}
		for _, w := range wantRuns {
			if r := s.recordOf(job, w.tok); r.Status != anarchon.StatusReplaced || r.InstanceID != "h-"+w.tok || r.Attempt != 1 {
				t.Errorf("history of replaced slot %d: %+v, want status replaced, holder h-%s, attempt 1", w.slot-slot, r, w.tok)
			}
			out := s.lclaim(1, rclaim(job, w.slot, token(), "backup", longLease))
			want(t, "claim of a replaced slot", out, anarchon.OutcomeDone)
			if out.Status != anarchon.StatusReplaced {
				t.Errorf("claim of replaced slot %d: status %q, want %q", w.slot-slot, out.Status, anarchon.StatusReplaced)
			}
		}
		if r := s.recordOf(job, done); r.Status != anarchon.StatusSuccess {
			t.Errorf("history of finished slot 4: %+v, want success kept", r)
		}
		act := s.active(1, job)
		if len(act) != 2 || act[0].Slot != slot+4*sec || act[1].Slot != slot+5*sec {
			t.Errorf("Active after Replace: %+v, want slots 5 and 6", act)
		}
		if !s.heartbeat(1, job, slot+5*sec, later, longLease) {
			t.Error("Heartbeat of the later slot 6 answered false")
		}
		runs, held = s.replace(1, job, slot+4*sec, repl)
		if !held || len(runs) != 0 {
			t.Errorf("a repeated Replace: %+v held %v, want none and true", runs, held)
		}
		if !s.finishResult(0, job, anarchon.StoredResult{Slot: slot + 4*sec, Token: repl, InstanceID: "h-" + repl, Attempt: 1, Status: anarchon.StatusSuccess}, 100) {
			t.Error("finish of the replacing slot 5 returned false")
		}
	})
	leaseTest(t, h, "NotHeld", func(t *testing.T, s *store, job string, slot int64) {
		if s.replacer(0) == nil {
			t.Skip("backend has no anarchon.Replacer")
		}
		first, second := token(), token()
		want(t, "claim of slot 1", s.lclaim(0, rclaim(job, slot, first, "a", longLease)), anarchon.OutcomeWon)
		want(t, "claim of slot 2", s.lclaim(0, rclaim(job, slot+1000, second, "b", longLease)), anarchon.OutcomeWon)
		for _, c := range []struct {
			what string
			slot int64
			tok  string
		}{{"another token", slot + 1000, token()}, {"an absent slot", slot + 2000, token()}} {
			if runs, held := s.replace(1, job, c.slot, c.tok); held || len(runs) != 0 {
				t.Errorf("Replace with %s: %+v held %v, want none and false", c.what, runs, held)
			}
		}
		if !s.finish(0, job, slot+1000, second, anarchon.StatusSuccess) {
			t.Fatal("Finish of slot 2 returned false")
		}
		if runs, held := s.replace(1, job, slot+1000, second); held || len(runs) != 0 {
			t.Errorf("Replace by the holder of a finished slot: %+v held %v, want none and false", runs, held)
		}
		if !s.heartbeat(1, job, slot, first, longLease) {
			t.Error("Heartbeat of slot 1 answered false: a refused Replace changed it")
		}
	})
	leaseTest(t, h, "KeepsResult", func(t *testing.T, s *store, job string, slot int64) {
		if s.replacer(0) == nil {
			t.Skip("backend has no anarchon.Replacer")
		}
		// A run that stored its result and waits for its retry (still
		// running) keeps that result's record when it is replaced.
		old, nu := token(), token()
		want(t, "claim of slot 1", s.lclaim(0, rclaim(job, slot, old, "a", longLease)), anarchon.OutcomeWon)
		s.save(0, job, anarchon.StoredResult{Slot: slot, Token: old, InstanceID: "a", Attempt: 1, Status: anarchon.StatusError, Error: "boom"}, 100, 0)
		want(t, "claim of slot 2", s.lclaim(1, rclaim(job, slot+1000, nu, "b", longLease)), anarchon.OutcomeWon)
		if runs, held := s.replace(1, job, slot+1000, nu); !held || len(runs) != 1 {
			t.Fatalf("Replace: %+v held %v, want slot 1 and true", runs, held)
		}
		if r := s.recordOf(job, old); r.Status != anarchon.StatusError || r.Error != "boom" {
			t.Errorf("history of slot 1: %+v, want its stored error kept", r)
		}
		// The holder's own later record wins, as for any store record.
		s.save(0, job, anarchon.StoredResult{Slot: slot, Token: old, InstanceID: "a", Attempt: 1, Status: anarchon.StatusReplaced, Error: "replaced"}, 100, 0)
		if r := s.recordOf(job, old); r.Status != anarchon.StatusReplaced {
			t.Errorf("history of slot 1 after its holder saved replaced: %+v", r)
		}
	})
}
