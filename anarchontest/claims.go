package anarchontest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

func testBasics(t *testing.T, h Harness) {
	t.Run("Name", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 1)
		if s.b(0).Name() == "" {
			t.Error("Name() is empty")
		}
	})
	t.Run("DedupeWindow", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		w := s.b(0).DedupeWindow()
		if w <= 0 {
			t.Fatalf("DedupeWindow() = %v, want > 0 (anarchon.Forever if claims are never forgotten)", w)
		}
		if w != anarchon.Forever {
			t.Logf("DedupeWindow() = %v: the old-claim check needs Forever and is not run", w)
			return
		}
		// Forever: a claim still loses after time has passed.
		job := jobName("dedupe")
		s.prepare(job, 10)
		slot := baseSlot()
		tok := token()
		if !s.claim(0, input(job, slot, tok, "a")) {
			t.Fatal("first claim lost")
		}
		h.Sleep(h.expiry())
		if s.claim(1, input(job, slot, token(), "b")) {
			t.Error("a claim of an old slot with a new token won after time passed; DedupeWindow is Forever")
		}
		if !s.claim(1, input(job, slot, tok, "a")) {
			t.Error("the winning token lost its repeat after time passed")
		}
	})
	t.Run("InitConcurrent", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 4)
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				if err := s.b(i).Init(s.ctx); err != nil {
					t.Errorf("handle %d: concurrent Init: %v", i%4, err)
				}
			})
		}
		wg.Wait()
	})
	t.Run("PrepareJobConcurrent", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 4)
		job := jobName("prepare")
		for round := range 2 {
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Go(func() {
					if err := s.b(i).PrepareJob(s.ctx, anarchon.PrepareJobInput{Job: job, HistorySize: 10}); err != nil {
						t.Errorf("round %d, handle %d: concurrent PrepareJob: %v", round, i%4, err)
					}
				})
			}
			wg.Wait()
		}
		if !s.claim(1, input(job, baseSlot(), token(), "a")) {
			t.Error("the first claim of a freshly prepared job lost")
		}
	})
}

func testClaims(t *testing.T, h Harness) {
	t.Run("Race", func(t *testing.T) {
		t.Parallel()
		testClaimRace(t, h)
	})
	t.Run("RepeatSafety", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		job := jobName("repeat")
		s.prepare(job, 10)
		slot := baseSlot()
		a, b := token(), token()
		if !s.claim(0, input(job, slot, a, "a")) {
			t.Fatal("first claim lost")
		}
		for i := range 2 {
			if !s.claim(i, input(job, slot, a, "a")) {
				t.Errorf("handle %d: repeat with the winning token lost", i)
			}
			if s.claim(i, input(job, slot, b, "b")) {
				t.Errorf("handle %d: another token won a claimed slot", i)
			}
		}
		if !s.claim(1, input(job, slot, a, "a")) {
			t.Error("repeat with the winning token lost after another token tried")
		}
	})
	t.Run("Independent", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		jobA, jobB := jobName("indep-a"), jobName("indep-b")
		s.prepare(jobA, 10)
		s.prepare(jobB, 10)
		slot := baseSlot()
		for k := range int64(5) {
			if !s.claim(int(k), input(jobA, slot+k*1000, token(), "a")) {
				t.Errorf("job A slot +%ds: a fresh slot lost", k)
			}
		}
		// The same slots of another job are free.
		for k := range int64(5) {
			if !s.claim(int(k)+1, input(jobB, slot+k*1000, token(), "b")) {
				t.Errorf("job B slot +%ds: lost to job A's claim of the same slot", k)
			}
		}
		// Neighbouring milliseconds are other slots.
		if !s.claim(0, input(jobA, slot+1, token(), "a")) {
			t.Error("slot+1ms lost to the claim of slot")
		}
		if !s.claim(0, input(jobA, slot-1, token(), "a")) {
			t.Error("slot-1ms lost to the claim of slot")
		}
	})
	t.Run("OddJobName", func(t *testing.T) {
		t.Parallel()
		job := oddJobName()
		checkNameClaims(t, open(t, h, 2), job, job[:len(job)-2]+"ê") // same length in runes, differs at the end
	})
}

// checkNameClaims runs plain claims and history of job, and claims of
// other, a name that differs from job only at its end, on a 2-handle
// store: the two share nothing, and history returns job as given.
func checkNameClaims(t *testing.T, s *store, job, other string) {
	t.Helper()
	s.prepare(job, 10)
	s.prepare(other, 10)
	slot := baseSlot()
	tok := token()
	if !s.claim(0, input(job, slot, tok, "a")) {
		t.Fatal("first claim lost")
	}
	if s.claim(1, input(job, slot, token(), "b")) {
		t.Error("another token won a claimed slot")
	}
	if !s.claim(1, input(job, slot, tok, "a")) {
		t.Error("repeat with the winning token lost")
	}
	if !s.claim(1, input(other, slot, token(), "b")) {
		t.Error("a job whose name differs in its last character shares claims")
	}
	s.save(0, job, anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}, 10, 0)
	recs := s.history(1, job, 0)
	if len(recs) != 1 {
		t.Fatalf("History: %d records, want 1", len(recs))
	}
	if recs[0].Job != job {
		t.Errorf("History: Job = %s (%d bytes), want %s (%d bytes)", quote(recs[0].Job), len(recs[0].Job), quote(job), len(job))
	}
	if recs[0].Status != anarchon.StatusSuccess || recs[0].Token != tok {
		t.Errorf("History: status %q token %q, want %q %q", recs[0].Status, recs[0].Token, anarchon.StatusSuccess, tok)
	}
	if recs := s.history(0, other, 0); len(recs) != 1 || recs[0].Job != other {
		t.Errorf("History of the other name: %d records, want 1 of that name", len(recs))
	}
}

// testClaimRace: h.Racers goroutines over h.Handles handles claim the same
// h.Rounds slots, each with its own token: exactly one wins each slot
// (SPEC §8.1). Then, on other handles, a repeat of a winning claim wins
// again and a repeat of a losing one loses (repeat safety, SPEC §4).
func testClaimRace(t *testing.T, h Harness) {
	s := open(t, h, h.Handles)
	job := jobName("race")
	s.prepare(job, 10)
	slot0 := baseSlot()
	tokens := make([][]string, h.Racers) // [racer][round]
	for g := range tokens {
		tokens[g] = make([]string, h.Rounds)
		for r := range tokens[g] {
			tokens[g][r] = fmt.Sprintf("racer-%d-%d-%s", g, r, randHex(4))
		}
	}
	wins := make([]atomic.Int32, h.Rounds)
	winner := make([]atomic.Int32, h.Rounds)
	var errs atomic.Int32
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range h.Racers {
		wg.Go(func() {
			b := s.b(g)
			<-start
			for r := range h.Rounds {
				in := input(job, slot0-int64(r)*1000, tokens[g][r], fmt.Sprintf("racer-%d", g))
				ok, err := b.Claim(s.ctx, in)
				if err != nil {
					if errs.Add(1) <= 5 {
						t.Errorf("racer %d, round %d: Claim: %v", g, r, err)
					}
					continue
				}
				if ok {
					wins[r].Add(1)
					winner[r].Store(int32(g))
				}
			}
		})
	}
	begin := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(begin)
	bad := 0
	for r := range wins {
		if w := wins[r].Load(); w != 1 {
			bad++
			if bad <= 10 {
				t.Errorf("slot %d: %d winners, want exactly 1", r, w)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d slots without exactly one winner", bad, h.Rounds)
	}
	t.Logf("%d racers on %d handles, %d slots: %d claims in %v", h.Racers, h.Handles, h.Rounds, h.Racers*h.Rounds, elapsed.Round(time.Millisecond))
	if h.Racers < 2 {
		return
	}
	step := max(h.Rounds/20, 1)
	for r := 0; r < h.Rounds; r += step {
		w := int(winner[r].Load())
		for _, g := range []int{w, (w + 1) % h.Racers} {
			in := input(job, slot0-int64(r)*1000, tokens[g][r], "repeat")
			if got := s.claim(g+1, in); got != (g == w) {
				t.Errorf("slot %d: repeat of racer %d's claim on another handle = %v, want %v", r, g, got, g == w)
			}
		}
	}
}

// testClose: after Close, methods fail with an error wrapping
// anarchon.ErrClosed (Backend.Close's contract), which the scheduler gives
// up at once like a permanent error.
func testClose(t *testing.T, h Harness, hasLeases bool) {
	s := open(t, h, 1)
	job := jobName("close")
	s.prepare(job, 10)
	slot := baseSlot()
	b := s.b(0)
	var rs anarchon.RunStore
	if hasLeases {
		rs = s.rs(0)
	}
	if err := b.Close(s.ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := s.ctx
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, anarchon.ErrClosed) {
			t.Errorf("%s after Close: error %v, want one wrapping anarchon.ErrClosed", op, err)
		}
	}
	_, err := b.Claim(ctx, input(job, slot, token(), "a"))
	check("Claim", err)
	_, err = b.RecordManualRun(ctx, input(job, slot, token(), "a"))
	check("RecordManualRun", err)
	check("SaveResult", b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: anarchon.StoredResult{Slot: slot, Token: token(), Status: anarchon.StatusSuccess}, HistorySize: 10}))
	_, err = b.History(ctx, job, 0)
	check("History", err)
	check("PrepareJob", b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: job, HistorySize: 10}))
	if rs != nil {
		_, err = rs.Claim(ctx, anarchon.RunClaim{ClaimInput: input(job, slot, token(), "a"), Lease: longLease, MaxAttempts: 1})
		check("RunStore.Claim", err)
		_, err = rs.Active(ctx, job)
		check("RunStore.Active", err)
	}
}
