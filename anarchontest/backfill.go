package anarchontest

import (
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// testBackfill: what Scheduler.Backfill asks of a RunStore (SPEC §6,
// backfill). Slots weeks old (within the dedupe window), never claimed, are won by a claim without a
// lateness limit (MaxLate 0), by exactly one of several racing callers;
// once finished they answer done, and a slot recorded missed answers none,
// so a second backfill skips both.
func testBackfill(t *testing.T, h Harness) {
	leaseTest(t, h, "OldSlots", func(t *testing.T, s *store, job string, base int64) {
		// A month back, or half the store's dedupe window if that is
		// shorter: Backfill refuses ranges older than the window.
		age := 30 * 24 * time.Hour
		if w := s.b(0).DedupeWindow(); w != anarchon.Forever && w/2 < age {
			age = w / 2
		}
		old := (base - age.Milliseconds()) / 60_000 * 60_000
		missed := old + 60_000
		c := rclaim(job, missed, token(), "A", longLease)
		c.MaxLate = time.Minute
		want(t, "claim of a old slot with MaxLate 1m", s.lclaim(0, c), anarchon.OutcomeLate)

		// Four callers race for the old slot, as two backfills would.
		var mu sync.Mutex
		var winners []anarchon.RunClaim
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				c := rclaim(job, old, token(), "B", longLease)
				out, err := s.rs(i).Claim(s.ctx, c)
				if err != nil {
					t.Errorf("claim %d of the old slot: %v", i, err)
					return
				}
				switch out.Kind {
				case anarchon.OutcomeWon:
					mu.Lock()
					winners = append(winners, c)
					mu.Unlock()
				case anarchon.OutcomeRunning:
				default:
					t.Errorf("claim %d of the old slot: %v, want won or running", i, out.Kind)
				}
			})
		}
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("%d callers won the old slot, want 1", len(winners))
		}
		w := winners[0]
		s.recordClaim(0, w.ClaimInput)
		if !s.finishResult(0, job, result(old, w.Token, "B", 1, anarchon.StatusSuccess), 100) {
			t.Fatal("the finish of the old slot's holder was refused")
		}
		out := s.lclaim(1, rclaim(job, old, token(), "C", longLease))
		want(t, "a second backfill's claim of the finished slot", out, anarchon.OutcomeDone)
		out = s.lclaim(1, rclaim(job, missed, token(), "C", longLease))
		want(t, "a second backfill's claim of the missed slot", out, anarchon.OutcomeNone)
	})
}
