package anarchontest

import (
	"testing"

	"github.com/anarchon/anarchon"
)

// testHeartbeatBatch checks anarchon.HeartbeatBatcher against
// RunStore.Heartbeat (SPEC §6): each answer of Heartbeats is the one the
// single call gives for the same run — held by the token, held by
// another, released, finished, never claimed — a bad lease fails only its
// own entry, a held lease is renewed, and an empty batch is answered
// empty.
func testHeartbeatBatch(t *testing.T, h Harness) {
	leaseTest(t, h, "Answers", func(t *testing.T, s *store, job string, slot int64) {
		hb, ok := anarchon.As[anarchon.HeartbeatBatcher](s.b(1))
		if !ok {
			t.Fatal("handle 1 has no anarchon.HeartbeatBatcher")
		}
		held, other, released, done := token(), token(), token(), token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, held, "a", h.Lease)), anarchon.OutcomeWon)
		want(t, "claim", s.lclaim(0, rclaim(job, slot+1000, other, "a", longLease)), anarchon.OutcomeWon)
		want(t, "claim", s.lclaim(0, rclaim(job, slot+2000, released, "a", longLease)), anarchon.OutcomeWon)
		want(t, "claim", s.lclaim(0, rclaim(job, slot+3000, done, "a", longLease)), anarchon.OutcomeWon)
		if !s.release(0, job, slot+2000, released) || !s.finish(0, job, slot+3000, done, anarchon.StatusSuccess) {
			t.Fatal("Release or Finish of a held run: false")
		}
		in := []anarchon.HeartbeatInput{
			{Job: job, Slot: slot, Token: held, Lease: longLease},
			{Job: job, Slot: slot + 1000, Token: token(), Lease: longLease},
			{Job: job, Slot: slot + 2000, Token: released, Lease: longLease},
			{Job: job, Slot: slot + 3000, Token: done, Lease: longLease},
			{Job: job, Slot: slot + 4000, Token: token(), Lease: longLease},
			{Job: jobName("hb-unknown"), Slot: slot, Token: held, Lease: longLease},
			{Job: job, Slot: slot + 1000, Token: other, Lease: 0},
			{Job: job, Slot: slot + 1000, Token: other, Lease: longLease},
		}
		wantHeld := []bool{true, false, false, false, false, false, false, true}
		out, err := hb.Heartbeats(s.ctx, in)
		if err != nil || len(out) != len(in) {
			t.Fatalf("Heartbeats(%d) = %d answers, %v", len(in), len(out), err)
		}
		for i, a := range out {
			bad := in[i].Lease <= 0
			switch {
			case bad && a.Err == nil:
				t.Errorf("heartbeat %d with lease %v: no error", i, in[i].Lease)
			case !bad && a.Err != nil:
				t.Errorf("heartbeat %d: %v", i, a.Err)
			case a.Held != wantHeld[i]:
				t.Errorf("heartbeat %d (%+v): held %v, want %v", i, in[i], a.Held, wantHeld[i])
			}
			if bad {
				continue
			}
			if single := s.heartbeat(0, in[i].Job, in[i].Slot, in[i].Token, in[i].Lease); single != a.Held {
				t.Errorf("heartbeat %d: the batch said %v, a single call %v", i, a.Held, single)
			}
		}
		// The batch renewed the short lease for an hour: it outlives its
		// first expiry, and a claim of another token finds it running.
		h.Sleep(h.expiry())
		want(t, "claim after the first lease's end", s.lclaim(1, rclaim(job, slot, token(), "b", longLease)), anarchon.OutcomeRunning)
		for _, in := range [][]anarchon.HeartbeatInput{nil, {}} {
			if out, err := hb.Heartbeats(s.ctx, in); err != nil || len(out) != 0 {
				t.Errorf("Heartbeats(%d) = %d answers, %v; want 0, nil", len(in), len(out), err)
			}
		}
	})
}
