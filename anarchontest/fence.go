package anarchontest

import (
	"slices"
	"sync"
	"testing"

	"github.com/anarchon/anarchon"
)

// testFence checks ClaimOutcome.Fence (SPEC §6, "Fencing"): every won
// lease claim of a job gets a fence larger than every win of the job the
// store answered before it, on any handle, slot, attempt or path (single
// claims and ClaimRuns alike); other outcomes carry none. With
// Harness.NoFence the store must give none at all, so a store that
// forgot to fill it in fails either way.
func testFence(t *testing.T, h Harness, runBatch bool) {
	leaseTest(t, h, "Sequence", func(t *testing.T, s *store, job string, slot int64) {
		testFenceSequence(t, h, s, job, slot)
	})
	t.Run("Race", func(t *testing.T) {
		t.Parallel()
		testFenceRace(t, h, runBatch)
	})
}

// checkFence checks one outcome's fence against the last won one, and
// returns the new last.
func checkFence(t *testing.T, h Harness, what string, out anarchon.ClaimOutcome, last uint64) uint64 {
	t.Helper()
	switch {
	case h.NoFence && out.Fence != 0:
		t.Fatalf("%s: Fence %d from a store whose Harness says NoFence", what, out.Fence)
	case h.NoFence:
	case out.Kind != anarchon.OutcomeWon && out.Fence != 0:
		t.Fatalf("%s: outcome %v with Fence %d; only wins carry one", what, out.Kind, out.Fence)
	case out.Kind == anarchon.OutcomeWon && out.Fence <= last:
		t.Fatalf("%s: won with Fence %d, not above the job's last fence %d", what, out.Fence, last)
	case out.Kind == anarchon.OutcomeWon:
		return out.Fence
	}
	return last
}

// testFenceSequence walks one job through every kind of win in turn —
// a first claim, a second slot, a renewal by the same token, a takeover
// after a hand-over, a takeover after the lease ran out, a claim from
// another handle — and checks that each fence is above all before it.
func testFenceSequence(t *testing.T, h Harness, s *store, job string, slot int64) {
	a, b, c, d := token(), token(), token(), token()
	var last uint64
	step := func(what string, i int, cl anarchon.RunClaim, k anarchon.OutcomeKind) {
		t.Helper()
		out := s.lclaim(i, cl)
		want(t, what, out, k)
		last = checkFence(t, h, what, out, last)
	}
	step("first claim", 0, rclaim(job, slot, a, "a", longLease), anarchon.OutcomeWon)
	step("claim of a held slot", 1, rclaim(job, slot, b, "b", longLease), anarchon.OutcomeRunning)
	step("second slot from handle 1", 1, rclaim(job, slot+1000, b, "b", longLease), anarchon.OutcomeWon)
	step("renewal by the same token", 0, rclaim(job, slot, a, "a", longLease), anarchon.OutcomeWon)
	if !s.release(0, job, slot, a) {
		t.Fatal("Release of a held run: false")
	}
	step("takeover after a hand-over", 1, rclaim(job, slot, c, "b", h.Lease), anarchon.OutcomeWon)
	h.Sleep(h.expiry())
	step("takeover after the lease ran out", 0, rclaim(job, slot, d, "a", longLease), anarchon.OutcomeWon)
	if !s.finish(0, job, slot, d, anarchon.StatusSuccess) {
		t.Fatal("Finish of a held run: false")
	}
	step("claim of a done slot", 1, rclaim(job, slot, token(), "b", longLease), anarchon.OutcomeDone)
	step("third slot", 1, rclaim(job, slot+2000, token(), "b", longLease), anarchon.OutcomeWon)
	// Another job's wins do not have to be ordered with this one's, but
	// its fences must follow the same rule on their own.
	other := jobName("fence-other")
	s.prepare(other, 100)
	var otherLast uint64
	for i := range 3 {
		out := s.lclaim(i, rclaim(other, slot+int64(i)*1000, token(), "c", longLease))
		want(t, "claim of another job", out, anarchon.OutcomeWon)
		otherLast = checkFence(t, h, "claim of another job", out, otherLast)
	}
}

// testFenceRace races h.Racers goroutines over h.Handles handles, each
// claiming the same h.Rounds/4 slots (at least 5) of one job, as
// testRunRace does (through ClaimRuns in batches of 8 on every other
// goroutine, when the store has it): one
// winner per slot, and the winners' fences are all different and, in
// each goroutine, larger than every fence that goroutine saw before
// (its later claims started after its earlier ones were answered).
// The slots go back from baseSlot, 1 s apart, so that however many
// rounds a harness asks for none is ahead of the store's clock. Every
// won run stays running (a long lease, one job), so a store that keeps
// a list of the job's unfinished runs (NATS) grows it with every round:
// the quarter keeps the test's cost near the other race tests'.
func testFenceRace(t *testing.T, h Harness, runBatch bool) {
	s := open(t, h, h.Handles)
	job := jobName("fence-race")
	rounds := max(h.Rounds/4, 5)
	s.prepare(job, rounds+10)
	base := baseSlot()
	var (
		mu     sync.Mutex
		wins   = map[int64]int{}
		fences []uint64
	)
	var wg sync.WaitGroup
	for g := range h.Racers {
		wg.Go(func() {
			var last uint64
			batcher, _ := s.rs(g).(anarchon.RunBatchClaimer)
			if !runBatch || g%2 == 1 {
				batcher = nil
			}
			for r := 0; r < rounds; {
				n := 1
				if batcher != nil {
					n = min(8, rounds-r)
				}
				in := make([]anarchon.RunClaim, n)
				for k := range in {
					in[k] = rclaim(job, base-int64(r+k)*1000, token(), "r", longLease)
				}
				outs := make([]anarchon.ClaimOutcome, n)
				if batcher != nil {
					answers, err := batcher.ClaimRuns(s.ctx, in)
					if err != nil || len(answers) != n {
						t.Errorf("ClaimRuns of %d: %d answers, %v", n, len(answers), err)
						return
					}
					for k, a := range answers {
						if a.Err != nil {
							t.Errorf("ClaimRuns[%d]: %v", k, a.Err)
							return
						}
						outs[k] = a.Outcome
					}
				} else {
					out, err := s.rs(g).Claim(s.ctx, in[0])
					if err != nil {
						t.Errorf("RunStore.Claim: %v", err)
						return
					}
					outs[0] = out
				}
				// The answers of one batch are not ordered among
				// themselves; each must be above what came before it.
				batchLast := last
				for k, out := range outs {
					if !h.NoFence && out.Kind == anarchon.OutcomeWon && out.Fence <= last {
						t.Errorf("goroutine %d, slot %d: won with Fence %d, not above %d it saw won before", g, in[k].Slot, out.Fence, last)
					}
					if h.NoFence && out.Fence != 0 || !h.NoFence && out.Kind != anarchon.OutcomeWon && out.Fence != 0 {
						t.Errorf("goroutine %d, slot %d: outcome %v with Fence %d", g, in[k].Slot, out.Kind, out.Fence)
					}
					if out.Kind == anarchon.OutcomeWon {
						batchLast = max(batchLast, out.Fence)
						mu.Lock()
						wins[in[k].Slot]++
						fences = append(fences, out.Fence)
						mu.Unlock()
					}
				}
				last = batchLast
				r += n
			}
		})
	}
	wg.Wait()
	if len(wins) != rounds {
		t.Errorf("%d of %d slots won", len(wins), rounds)
	}
	for slot, n := range wins {
		if n != 1 {
			t.Errorf("slot %d won %d times", slot, n)
		}
	}
	if h.NoFence {
		return
	}
	slices.Sort(fences)
	for i := 1; i < len(fences); i++ {
		if fences[i] == fences[i-1] {
			t.Fatalf("Fence %d given to two wins of one job", fences[i])
		}
	}
}
