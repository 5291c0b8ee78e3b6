package anarchontest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// testOverlapLimit checks RunClaim.Limit (SPEC §6, overlap): with overlap
// refused, a claim of an absent slot wins while fewer than Limit other
// slots of the job hold live leases, and is refused (overlap, the slot
// skipped) once Limit do; expired, released and finished runs do not
// count, Limit is ignored with AllowOverlap, and a race of claims of
// different slots never lets more than Limit win.
func testOverlapLimit(t *testing.T, h Harness) {
	leaseTest(t, h, "Overlap/Limit", func(t *testing.T, s *store, job string, slot int64) {
		limited := func(slot int64, inst string, limit int) anarchon.RunClaim {
			c := rclaim(job, slot, token(), inst, longLease)
			c.AllowOverlap, c.Limit = false, limit
			return c
		}
		first := limited(slot, "a", 2)
		want(t, "claim of slot 1 with Limit 2", s.lclaim(0, first), anarchon.OutcomeWon)
		want(t, "claim of slot 2 with Limit 1 while slot 1 runs", s.lclaim(1, limited(slot+1000, "b", 1)), anarchon.OutcomeOverlap)
		second := limited(slot+2000, "c", 2)
		want(t, "claim of slot 3 with Limit 2 while slot 1 runs", s.lclaim(1, second), anarchon.OutcomeWon)
		want(t, "claim of slot 4 with Limit 2 while slots 1 and 3 run", s.lclaim(0, limited(slot+3000, "d", 2)), anarchon.OutcomeOverlap)
		want(t, "claim of skipped slot 4", s.lclaim(1, limited(slot+3000, "e", 5)), anarchon.OutcomeNone)
		want(t, "claim of slot 5 with Limit 3 while slots 1 and 3 run", s.lclaim(0, limited(slot+4000, "f", 3)), anarchon.OutcomeWon)
		allowed := rclaim(job, slot+5000, token(), "g", longLease)
		allowed.Limit = 1 // ignored: AllowOverlap
		want(t, "claim of slot 6 with AllowOverlap and Limit 1", s.lclaim(1, allowed), anarchon.OutcomeWon)
		want(t, "claim of slot 7 with Limit 4 while slots 1, 3, 5 and 6 run", s.lclaim(0, limited(slot+6000, "h", 4)), anarchon.OutcomeOverlap)
		if !s.finish(0, job, slot, first.Token, anarchon.StatusSuccess) {
			t.Fatal("Finish of slot 1 returned false")
		}
		want(t, "claim of slot 8 with Limit 4 after slot 1 finished", s.lclaim(1, limited(slot+7000, "i", 4)), anarchon.OutcomeWon)
		if !s.release(1, job, slot+2000, second.Token) {
			t.Fatal("Release of slot 3 returned false")
		}
		want(t, "claim of slot 9 with Limit 4 after slot 3 was released", s.lclaim(0, limited(slot+8000, "j", 4)), anarchon.OutcomeWon)
		want(t, "claim of slot 10 with Limit 4 while slots 5, 6, 8 and 9 run", s.lclaim(1, limited(slot+9000, "k", 4)), anarchon.OutcomeOverlap)
	})
	leaseTest(t, h, "Overlap/LimitExpired", func(t *testing.T, s *store, job string, slot int64) {
		for i := range 2 {
			c := rclaim(job, slot+int64(i)*1000, token(), "a", h.Lease)
			c.AllowOverlap, c.Limit = false, 2
			want(t, fmt.Sprintf("claim of slot %d", i+1), s.lclaim(i, c), anarchon.OutcomeWon)
		}
		h.Sleep(h.expiry())
		c := rclaim(job, slot+2000, token(), "b", longLease)
		c.AllowOverlap, c.Limit = false, 2
		want(t, "claim of slot 3 after the leases of slots 1 and 2 expired", s.lclaim(1, c), anarchon.OutcomeWon)
	})
	leaseTest(t, h, "Overlap/ManualRuns", func(t *testing.T, s *store, job string, slot int64) {
		// SPEC §12: a manual run holds no lease and is not counted by the
		// overlap policy, which is about the job's scheduled slots.
		limited := func(slot int64, inst string) anarchon.RunClaim {
			c := rclaim(job, slot, token(), inst, longLease)
			c.AllowOverlap, c.Limit = false, 1
			return c
		}
		first := limited(slot, "a")
		want(t, "claim of slot 1", s.lclaim(0, first), anarchon.OutcomeWon)
		if _, err := s.bs[1].RecordManualRun(s.ctx, input(job, slot+500, token(), "b")); err != nil {
			t.Fatalf("RecordManualRun while slot 1 runs: %v", err)
		}
		want(t, "claim of slot 2 while slot 1 runs", s.lclaim(1, limited(slot+1000, "c")), anarchon.OutcomeOverlap)
		if !s.finish(0, job, slot, first.Token, anarchon.StatusSuccess) {
			t.Fatal("Finish of slot 1 returned false")
		}
		if _, err := s.bs[0].RecordManualRun(s.ctx, input(job, slot+1500, token(), "d")); err != nil {
			t.Fatalf("RecordManualRun: %v", err)
		}
		want(t, "claim of slot 3 after two manual runs, no scheduled run live", s.lclaim(1, limited(slot+2000, "e")), anarchon.OutcomeWon)
	})
	testOverlapTakeover(t, h)
	t.Run("Overlap/LimitRace", func(t *testing.T) {
		t.Parallel()
		testOverlapLimitRace(t, h)
	})
}

// testOverlapLimitRace: round after round, h.Racers goroutines over
// h.Handles handles each claim a slot of their own of a fresh job with a
// Limit below h.Racers: exactly Limit win, every other answer is overlap,
// and Active lists exactly Limit live runs.
func testOverlapLimitRace(t *testing.T, h Harness) {
	s := open(t, h, h.Handles)
	rounds := max(h.Rounds/40, 3)
	limit := max(h.Racers/3, 2)
	slot0 := baseSlot()
	for r := range rounds {
		job := jobName("lease-limit")
		s.prepare(job, 10)
		var mu sync.Mutex
		won, refused := 0, 0
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range h.Racers {
			wg.Go(func() {
				rs := s.rs(g)
				c := rclaim(job, slot0+int64(g)*1000, token(), fmt.Sprintf("racer-%d", g), longLease)
				c.AllowOverlap, c.Limit = false, limit
				<-start
				out, err := rs.Claim(s.ctx, c)
				if err != nil {
					t.Errorf("round %d, racer %d: RunStore.Claim: %v", r, g, err)
					return
				}
				if out.Kind == anarchon.OutcomeWon {
					s.recordClaim(g, c.ClaimInput)
				}
				mu.Lock()
				defer mu.Unlock()
				switch out.Kind {
				case anarchon.OutcomeWon:
					won++
				case anarchon.OutcomeOverlap:
					refused++
				default:
					t.Errorf("round %d, racer %d: outcome %v, want won or overlap", r, g, out.Kind)
				}
			})
		}
		close(start)
		wg.Wait()
		if won != min(limit, h.Racers) || won+refused != h.Racers {
			t.Errorf("round %d: %d of %d racers won and %d were refused, with Limit %d: want exactly %d won", r, won, h.Racers, refused, limit, min(limit, h.Racers))
		}
		live := 0
		for _, a := range s.active(r, job) {
			if a.Live {
				live++
			}
		}
		if live != won {
			t.Errorf("round %d: Active lists %d live runs, want the %d won", r, live, won)
		}
	}
}

// testOverlapTakeover checks what the scheduler's overlap check on
// takeovers relies on (SPEC §6, overlap, "Takeovers under skip and limit
// N"): once a run's lease has run out, a later slot's first claim with
// overlap refused wins; a takeover of the expired run still wins (the
// claim table has no overlap check there), and Active, read after it,
// lists the later slot's run live beside it; the takeover then settled
// skipped (FinishResult, or Finish and SaveResult) leaves the slot done
// with status skipped, and its history the expired attempt lease_lost
// and the takeover skipped. In the other order, a takeover made first
// makes the later slot's claim answer overlap.
func testOverlapTakeover(t *testing.T, h Harness) {
	refused := func(job string, slot int64, inst string, lease time.Duration) anarchon.RunClaim {
		c := rclaim(job, slot, token(), inst, lease)
		c.AllowOverlap = false
		return c
	}
	leaseTest(t, h, "Overlap/TakeoverAfterLaterSlot", func(t *testing.T, s *store, job string, slot int64) {
		first := refused(job, slot, "a", h.Lease)
		want(t, "claim of slot 1", s.lclaim(0, first), anarchon.OutcomeWon)
		h.Sleep(h.expiry())
		later := slot + 1000
		want(t, "claim of slot 2 after slot 1's lease ran out", s.lclaim(1, refused(job, later, "b", longLease)), anarchon.OutcomeWon)
		backup := refused(job, slot, "c", longLease)
		out := s.lclaim(0, backup)
		want(t, "takeover of slot 1 while slot 2 runs", out, anarchon.OutcomeWon)
		if out.Attempt != 2 {
			t.Fatalf("takeover of slot 1: attempt %d, want 2", out.Attempt)
		}
		live := map[int64]bool{}
		for _, a := range s.active(0, job) {
			live[a.Slot] = a.Live
		}
		if !live[later] || !live[slot] {
			t.Fatalf("Active after the takeover: live %v, want slots %d and %d live", live, slot, later)
		}
		if !s.finishResult(0, job, result(slot, backup.Token, "c", 2, anarchon.StatusSkipped), 100) {
			t.Fatal("settling the takeover skipped: its token no longer held the slot")
		}
		done := s.lclaim(1, refused(job, slot, "d", longLease))
		want(t, "claim of slot 1 after its takeover was settled", done, anarchon.OutcomeDone)
		if done.Status != anarchon.StatusSkipped {
			t.Errorf("claim of slot 1 after its takeover was settled: status %q, want skipped", done.Status)
		}
		_, by := s.histRecords(1, job)
		checkRecord(t, by, first.Token, "a", 1, anarchon.StatusLeaseLost, true)
		checkRecord(t, by, backup.Token, "c", 2, anarchon.StatusSkipped, true)
	})
	leaseTest(t, h, "Overlap/TakeoverBeforeLaterSlot", func(t *testing.T, s *store, job string, slot int64) {
		want(t, "claim of slot 1", s.lclaim(0, refused(job, slot, "a", h.Lease)), anarchon.OutcomeWon)
		h.Sleep(h.expiry())
		want(t, "takeover of slot 1", s.lclaim(1, refused(job, slot, "b", longLease)), anarchon.OutcomeWon)
		want(t, "claim of slot 2 while slot 1's takeover runs", s.lclaim(0, refused(job, slot+1000, "c", longLease)), anarchon.OutcomeOverlap)
	})
}
