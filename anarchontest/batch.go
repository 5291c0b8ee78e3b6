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

// testBatch checks anarchon.BatchClaimer against Backend.Claim (SPEC §4,
// batches): each answer of a batch is the one a single claim would have
// given, under races of batches against single claims and against other
// batches, on several handles.
func testBatch(t *testing.T, h Harness, hasControl bool) {
	t.Run("Race", func(t *testing.T) { t.Parallel(); testBatchRace(t, h) })
	t.Run("Repeat", func(t *testing.T) { t.Parallel(); testBatchRepeat(t, h) })
	t.Run("Early", func(t *testing.T) { t.Parallel(); testBatchEarly(t, h) })
	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 1)
		for _, in := range [][]anarchon.ClaimInput{nil, {}} {
			out, err := s.batcher(0).ClaimBatch(s.ctx, in)
			if err != nil || len(out) != 0 {
				t.Errorf("ClaimBatch(%d claims) = %d answers, %v; want 0, nil", len(in), len(out), err)
			}
		}
	})
	if hasControl {
		t.Run("Paused", func(t *testing.T) { t.Parallel(); testBatchPaused(t, h) })
	}
}

// batcher returns handle i's BatchClaimer, found as the scheduler finds it.
func (s *store) batcher(i int) anarchon.BatchClaimer {
	s.t.Helper()
	bc, ok := anarchon.As[anarchon.BatchClaimer](s.b(i))
	if !ok {
		s.t.Fatalf("handle %d has no anarchon.BatchClaimer", i%len(s.bs))
	}
	return bc
}

// claimBatch sends in as one batch on handle i and fails the test on an
// error of the batch or of a claim; as the scheduler does, it calls
// RecordClaim after each win when the backend has it.
func (s *store) claimBatch(i int, in []anarchon.ClaimInput) []bool {
	s.t.Helper()
	out, err := s.batcher(i).ClaimBatch(s.ctx, in)
	if err != nil {
		s.t.Fatalf("handle %d: ClaimBatch(%d claims): %v", i%len(s.bs), len(in), err)
	}
	if len(out) != len(in) {
		s.t.Fatalf("handle %d: ClaimBatch(%d claims) returned %d answers", i%len(s.bs), len(in), len(out))
	}
	won := make([]bool, len(in))
	for k, a := range out {
		if a.Err != nil {
			s.t.Fatalf("handle %d: ClaimBatch: claim %d (%s): %v", i%len(s.bs), k, fmtIn(in[k]), a.Err)
		}
		won[k] = a.Won
		if a.Won {
			s.recordClaim(i, in[k])
		}
	}
	return won
}

// raceSlots is the slots of a batch race: rounds slots spread over two
// jobs, so that every batch mixes jobs.
type raceSlots struct {
	jobs  [2]string
	slot0 int64
}

func (r raceSlots) input(k int, tok, inst string) anarchon.ClaimInput {
	return input(r.jobs[k%2], r.slot0-int64(k/2)*1000, tok, inst)
}

// batchSize is racer g's batch size: racers send batches of different
// sizes, so that batches overlap other batches only in part.
func batchSize(g int) int { return 2 + (g*5)%11 }

// testBatchRace: h.Racers goroutines over h.Handles handles claim the same
// h.Rounds slots of two jobs, half of them in batches (of sizes 2 to 12,
// each racer starting at a different slot, so that batches overlap other
// batches in part) and half one slot at a time: exactly one claim wins
// each slot. Then repeats of the winning claims win again, in a batch and
// alone, and repeats of losing ones lose.
func testBatchRace(t *testing.T, h Harness) {
	s := open(t, h, h.Handles)
	rs := raceSlots{jobs: [2]string{jobName("batch-a"), jobName("batch-b")}, slot0: baseSlot()}
	s.prepare(rs.jobs[0], 10)
	s.prepare(rs.jobs[1], 10)
	racers := max(h.Racers, 2)
	n := h.Rounds
	tokens := make([][]string, racers)
	for g := range tokens {
		tokens[g] = make([]string, n)
		for k := range tokens[g] {
			tokens[g][k] = fmt.Sprintf("racer-%d-%d-%s", g, k, randHex(4))
		}
	}
	wins := make([]atomic.Int32, n)
	winner := make([]atomic.Int32, n)
	var errs atomic.Int32
	fail := func(format string, args ...any) {
		if errs.Add(1) <= 5 {
			t.Errorf(format, args...)
		}
	}
	won := func(g, k int) {
		wins[k].Add(1)
		winner[k].Store(int32(g))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range racers {
		wg.Go(func() {
			b := s.b(g)
			bc, _ := anarchon.As[anarchon.BatchClaimer](b)
			inst := fmt.Sprintf("racer-%d", g)
			<-start
			if g%2 == 1 { // singles
				for k := range n {
					k = (k + g*7) % n
					ok, err := b.Claim(s.ctx, rs.input(k, tokens[g][k], inst))
					if err != nil {
						fail("racer %d: Claim of slot %d: %v", g, k, err)
					} else if ok {
						won(g, k)
					}
				}
				return
			}
			size := batchSize(g)
			for from := 0; from < n; from += size {
				ks := make([]int, 0, size)
				in := make([]anarchon.ClaimInput, 0, size)
				for i := from; i < min(from+size, n); i++ {
					k := (i + g*3) % n
					ks = append(ks, k)
					in = append(in, rs.input(k, tokens[g][k], inst))
				}
				out, err := bc.ClaimBatch(s.ctx, in)
				if err != nil || len(out) != len(in) {
					fail("racer %d: ClaimBatch(%d claims) = %d answers, %v", g, len(in), len(out), err)
					continue
				}
				for i, a := range out {
					if a.Err != nil {
						fail("racer %d: ClaimBatch: slot %d: %v", g, ks[i], a.Err)
					} else if a.Won {
						won(g, ks[i])
					}
				}
			}
		})
	}
	begin := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(begin)
	bad := 0
	for k := range wins {
		if w := wins[k].Load(); w != 1 {
			if bad++; bad <= 10 {
				t.Errorf("slot %d: %d winners, want exactly 1", k, w)
			}
		}
	}
	if bad > 0 || errs.Load() > 0 {
		t.Fatalf("%d of %d slots without exactly one winner; %d failed calls", bad, n, errs.Load())
	}
	t.Logf("%d racers (half in batches) on %d handles, %d slots of 2 jobs, in %v", racers, h.Handles, n, elapsed.Round(time.Millisecond))

	// Repeats, on handles other than the winners': the winners' tokens
	// win again, in one batch and alone; the next racer's tokens lose.
	var wonIn, lostIn []anarchon.ClaimInput
	for k := range n {
		w := int(winner[k].Load())
		wonIn = append(wonIn, rs.input(k, tokens[w][k], "repeat"))
		lostIn = append(lostIn, rs.input(k, tokens[(w+1)%racers][k], "repeat"))
	}
	for k, ok := range s.claimBatch(1, wonIn) {
		if !ok {
			t.Errorf("slot %d: a batch repeating the winning claim lost it", k)
		}
	}
	for k, ok := range s.claimBatch(2, lostIn) {
		if ok {
			t.Errorf("slot %d: a batch repeating a losing claim won it", k)
		}
	}
	for k := 0; k < n; k += max(n/10, 1) {
		if !s.claim(3, wonIn[k]) {
			t.Errorf("slot %d: a single repeat of the winning claim lost", k)
		}
	}
}

// testBatchRepeat: slots won in a batch are won again by a repeat of the
// batch, and by single repeats; other tokens lose them in a batch and
// alone; slots won by single claims are answered the same way in a
// batch. A batch mixes jobs and slots won either way.
func testBatchRepeat(t *testing.T, h Harness) {
	s := open(t, h, 2)
	jobA, jobB := jobName("batch-rep-a"), jobName("batch-rep-b")
	s.prepare(jobA, 100)
	s.prepare(jobB, 100)
	slot := baseSlot()
	var in []anarchon.ClaimInput
	for k := range int64(6) {
		job := jobA
		if k%2 == 1 {
			job = jobB
		}
		in = append(in, input(job, slot+k*1000, token(), "a"))
	}
	// Slots 4 and 5 are won by single claims first.
	for _, c := range in[4:] {
		if !s.claim(1, c) {
			t.Fatalf("single claim of a fresh slot (%s) lost", fmtIn(c))
		}
	}
	for k, ok := range s.claimBatch(0, in) {
		if !ok {
			t.Errorf("claim %d (%s): a batch lost a fresh slot or a repeat of its own win", k, fmtIn(in[k]))
		}
	}
	for k, ok := range s.claimBatch(1, in) {
		if !ok {
			t.Errorf("claim %d: a repeated batch lost", k)
		}
	}
	others := make([]anarchon.ClaimInput, len(in))
	for k, c := range in {
		others[k] = c
		others[k].Token, others[k].InstanceID = token(), "b"
		if !s.claim(k, c) {
			t.Errorf("claim %d: a single repeat of a batch's win lost", k)
		}
		if s.claim(k, others[k]) {
			t.Errorf("claim %d: another token won a slot a batch won", k)
		}
	}
	for k, ok := range s.claimBatch(1, others) {
		if ok {
			t.Errorf("claim %d: a batch of other tokens won a claimed slot", k)
		}
	}
	// The batch's wins are history records of their tokens.
	for _, job := range []string{jobA, jobB} {
		recs := s.history(0, job, 0)
		if len(recs) != 3 {
			t.Errorf("History(%s): %d records, want 3 (one per won slot): %+v", quote(job), len(recs), recs)
		}
		for _, r := range recs {
			if r.InstanceID != "a" || r.Status != anarchon.StatusRunning {
				t.Errorf("History(%s): record %+v, want instance a, running", quote(job), r)
			}
		}
	}
	// Two claims of one new slot in one batch: the first decides it, as
	// two single claims in turn; a claim repeated in one batch wins twice.
	first := input(jobA, slot+10_000, token(), "a")
	second := input(jobA, slot+10_000, token(), "b")
	if got := s.claimBatch(1, []anarchon.ClaimInput{first, second}); !got[0] || got[1] {
		t.Errorf("batch of [first, second] claims of one new slot = %v, want [true false]", got)
	}
	if s.claim(0, second) {
		t.Error("a single claim of the second token won the slot the batch's first claim won")
	}
	again := input(jobA, slot+11_000, token(), "a")
	if got := s.claimBatch(1, []anarchon.ClaimInput{again, again}); !got[0] || !got[1] {
		t.Errorf("batch of one claim twice of a new slot = %v, want [true true]", got)
	}
}

// testBatchEarly: a batch with a slot ahead of the store's clock answers
// that slot with an *anarchon.EarlyError and writes nothing for it, while
// the slots around it are decided (SPEC §4, never early).
func testBatchEarly(t *testing.T, h Harness) {
	s := open(t, h, 2)
	job := jobName("batch-early")
	s.prepare(job, 10)
	now := s.now()
	due := now.Add(-2 * time.Second).Truncate(time.Second).UnixMilli()
	ahead := now.Add(time.Hour).Truncate(time.Second).UnixMilli()
	in := []anarchon.ClaimInput{
		input(job, due, token(), "a"),
		input(job, ahead, token(), "fast"),
		input(job, due+1000, token(), "a"),
	}
	out, err := s.batcher(0).ClaimBatch(s.ctx, in)
	if err != nil || len(out) != 3 {
		t.Fatalf("ClaimBatch = %d answers, %v; want 3, nil", len(out), err)
	}
	checkEarly(t, "ClaimBatch", ahead, out[1].Err)
	for _, k := range []int{0, 2} {
		if out[k].Err != nil || !out[k].Won {
			t.Errorf("claim %d of a due slot beside an early one = %v, %v; want won", k, out[k].Won, out[k].Err)
		}
	}
	for _, rec := range s.history(1, job, 0) {
		if rec.InstanceID == "fast" {
			t.Errorf("a refused claim in a batch left a history record: %+v", rec)
		}
	}
}

// checkEarly fails unless err is the refusal of an early slot: an
// *anarchon.EarlyError for slot, not permanent.
func checkEarly(t *testing.T, op string, slot int64, err error) {
	t.Helper()
	var ee *anarchon.EarlyError
	if !errors.As(err, &ee) || !errors.Is(err, anarchon.ErrEarly) {
		t.Fatalf("%s: the answer for a slot an hour ahead of the store's clock has error %v, want an *anarchon.EarlyError", op, err)
	}
	if anarchon.IsPermanent(err) {
		t.Errorf("%s: %v is marked permanent", op, err)
	}
	if ee.Slot != slot {
		t.Errorf("%s: EarlyError.Slot %d, want %d", op, ee.Slot, slot)
	}
}

// testBatchPaused: a batch settles a paused job's new slot as a single
// claim does (nobody wins, one paused record) and claims the other job's
// slots beside it.
func testBatchPaused(t *testing.T, h Harness) {
	s := open(t, h, 2)
	paused, other := jobName("batch-paused"), jobName("batch-free")
	s.prepare(paused, 100)
	s.prepare(other, 100)
	slot := baseSlot()
	s.setPaused(1, anarchon.PauseInput{Job: paused, Paused: true, By: "ops"})
	in := []anarchon.ClaimInput{input(other, slot, token(), "a"), input(paused, slot, token(), "a"), input(other, slot+1000, token(), "a")}
	if got := s.claimBatch(0, in); !got[0] || got[1] || !got[2] {
		t.Errorf("batch of [free, paused, free] = %v, want [true false true]", got)
	}
	if s.claim(1, input(paused, slot, token(), "b")) {
		t.Error("a single claim won a slot a batch settled as paused")
	}
	checkPausedRecord(t, s.history(0, paused, 0), slot)
}

// testRunBatch checks anarchon.RunBatchClaimer against RunStore.Claim
// (SPEC §6): each answer of ClaimRuns is the one a single lease claim
// would have given, row by row of §6's table, in order within a batch and
// under races.
func testRunBatch(t *testing.T, h Harness, hasControl bool) {
	t.Run("Race", func(t *testing.T) { t.Parallel(); testRunBatchRace(t, h) })
	t.Run("Outcomes", func(t *testing.T) { t.Parallel(); testRunBatchOutcomes(t, h) })
	t.Run("InOrder", func(t *testing.T) { t.Parallel(); testRunBatchOrder(t, h) })
	t.Run("Burst", func(t *testing.T) { t.Parallel(); testRunBatchBurst(t, h) })
	t.Run("Early", func(t *testing.T) { t.Parallel(); testRunBatchEarly(t, h) })
	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 1)
		for _, in := range [][]anarchon.RunClaim{nil, {}} {
			out, err := s.runBatcher(0).ClaimRuns(s.ctx, in)
			if err != nil || len(out) != 0 {
				t.Errorf("ClaimRuns(%d claims) = %d answers, %v; want 0, nil", len(in), len(out), err)
			}
		}
	})
	if hasControl {
		t.Run("Paused", func(t *testing.T) { t.Parallel(); testRunBatchPaused(t, h) })
	}
}

// runBatcher returns handle i's RunBatchClaimer, found as the scheduler
// finds it.
func (s *store) runBatcher(i int) anarchon.RunBatchClaimer {
	s.t.Helper()
	bc, ok := anarchon.As[anarchon.RunBatchClaimer](s.b(i))
	if !ok {
		s.t.Fatalf("handle %d has no anarchon.RunBatchClaimer", i%len(s.bs))
	}
	return bc
}

// claimRuns sends in as one ClaimRuns batch on handle i and fails the test
// on an error of the batch or of a claim.
func (s *store) claimRuns(i int, in []anarchon.RunClaim) []anarchon.ClaimOutcome {
	s.t.Helper()
	out, err := s.runBatcher(i).ClaimRuns(s.ctx, in)
	if err != nil {
		s.t.Fatalf("handle %d: ClaimRuns(%d claims): %v", i%len(s.bs), len(in), err)
	}
	if len(out) != len(in) {
		s.t.Fatalf("handle %d: ClaimRuns(%d claims) returned %d answers", i%len(s.bs), len(in), len(out))
	}
	outs := make([]anarchon.ClaimOutcome, len(in))
	for k, a := range out {
		if a.Err != nil {
			s.t.Fatalf("handle %d: ClaimRuns: claim %d (%s): %v", i%len(s.bs), k, fmtIn(in[k].ClaimInput), a.Err)
		}
		outs[k] = a.Outcome
	}
	return outs
}

// testRunBatchRace: as testBatchRace, with lease claims: exactly one claim
// is won per slot, every other is answered running with the winner as
// holder; repeats of the winners' claims in a batch renew (won, attempt
// 1).
func testRunBatchRace(t *testing.T, h Harness) {
	s := open(t, h, h.Handles)
	rs := raceSlots{jobs: [2]string{jobName("rbatch-a"), jobName("rbatch-b")}, slot0: baseSlot()}
	s.prepare(rs.jobs[0], 10)
	s.prepare(rs.jobs[1], 10)
	racers := max(h.Racers, 2)
	n := h.Rounds
	claim := func(k, g int) anarchon.RunClaim {
		c := rclaim("", 0, "", "", longLease)
		c.ClaimInput = rs.input(k, fmt.Sprintf("racer-%d-%d", g, k), fmt.Sprintf("racer-%d", g))
		return c
	}
	wins := make([]atomic.Int32, n)
	winner := make([]atomic.Int32, n)
	var errs atomic.Int32
	fail := func(format string, args ...any) {
		if errs.Add(1) <= 5 {
			t.Errorf(format, args...)
		}
	}
	took := func(g, k int, out anarchon.ClaimOutcome) {
		switch out.Kind {
		case anarchon.OutcomeWon:
			wins[k].Add(1)
			winner[k].Store(int32(g))
		case anarchon.OutcomeRunning:
		default:
			fail("racer %d: slot %d: outcome %v, want won or running", g, k, out.Kind)
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range racers {
		wg.Go(func() {
			<-start
			if g%2 == 1 {
				rstore := s.rs(g)
				for k := range n {
					k = (k + g*7) % n
					out, err := rstore.Claim(s.ctx, claim(k, g))
					if err != nil {
						fail("racer %d: RunStore.Claim of slot %d: %v", g, k, err)
						continue
					}
					took(g, k, out)
				}
				return
			}
			bc, _ := anarchon.As[anarchon.RunBatchClaimer](s.b(g))
			size := batchSize(g)
			for from := 0; from < n; from += size {
				var ks []int
				var in []anarchon.RunClaim
				for i := from; i < min(from+size, n); i++ {
					k := (i + g*3) % n
					ks = append(ks, k)
					in = append(in, claim(k, g))
				}
				out, err := bc.ClaimRuns(s.ctx, in)
				if err != nil || len(out) != len(in) {
					fail("racer %d: ClaimRuns(%d claims) = %d answers, %v", g, len(in), len(out), err)
					continue
				}
				for i, a := range out {
					if a.Err != nil {
						fail("racer %d: ClaimRuns: slot %d: %v", g, ks[i], a.Err)
						continue
					}
					took(g, ks[i], a.Outcome)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	bad := 0
	for k := range wins {
		if w := wins[k].Load(); w != 1 {
			if bad++; bad <= 10 {
				t.Errorf("slot %d: %d won lease claims, want exactly 1", k, w)
			}
		}
	}
	if bad > 0 || errs.Load() > 0 {
		t.Fatalf("%d of %d slots without exactly one winner; %d failed calls or odd outcomes", bad, n, errs.Load())
	}
	var again, others []anarchon.RunClaim
	for k := range n {
		w := int(winner[k].Load())
		again = append(again, claim(k, w))
		others = append(others, claim(k, (w+1)%racers))
	}
	for k, out := range s.claimRuns(1, again) {
		if out.Kind != anarchon.OutcomeWon || out.Attempt != 1 {
			t.Errorf("slot %d: a batch repeating the winning claim = %v attempt %d, want won attempt 1", k, out.Kind, out.Attempt)
		}
	}
	for k, out := range s.claimRuns(2, others) {
		w := fmt.Sprintf("racer-%d", winner[k].Load())
		if out.Kind != anarchon.OutcomeRunning || out.Holder != w {
			t.Errorf("slot %d: a batch of a losing token = %v holder %q, want running held by %s", k, out.Kind, out.Holder, w)
		}
	}
}

// testRunBatchOutcomes: one batch meets every row of SPEC §6's table that
// needs no lease to expire, each slot set up by single claims, and is
// answered as a single claim would answer it; the store is left as single
// claims would leave it.
func testRunBatchOutcomes(t *testing.T, h Harness) {
	s := open(t, h, 2)
	job, solo := jobName("rbatch-rows"), jobName("rbatch-solo")
	s.prepare(job, 100)
	s.prepare(solo, 100)
	base := baseSlot()
	slot := func(k int) int64 { return base + int64(k)*1000 }
	mine, held, done, released, spent := token(), token(), token(), token(), token()

	// Slot 0: running with mine. Slot 1: running with held. Slot 2: done.
	// Slot 3: missed. Slot 4: released, attempts left. Slot 5: released,
	// attempts used up. Job solo, slot 0: running.
	want(t, "setup 0", s.lclaim(0, rclaim(job, slot(0), mine, "a", longLease)), anarchon.OutcomeWon)
	want(t, "setup 1", s.lclaim(1, rclaim(job, slot(1), held, "b", longLease)), anarchon.OutcomeWon)
	want(t, "setup 2", s.lclaim(0, rclaim(job, slot(2), done, "a", longLease)), anarchon.OutcomeWon)
	if !s.finish(0, job, slot(2), done, anarchon.StatusSuccess) {
		t.Fatal("setup: Finish returned false")
	}
	late := rclaim(job, slot(3), token(), "a", longLease)
	late.MaxLate = time.Millisecond
	want(t, "setup 3", s.lclaim(0, late), anarchon.OutcomeLate)
	want(t, "setup 4", s.lclaim(0, rclaim(job, slot(4), released, "a", longLease)), anarchon.OutcomeWon)
	if !s.release(0, job, slot(4), released) {
		t.Fatal("setup: Release returned false")
	}
	one := rclaim(job, slot(5), spent, "a", longLease)
	one.MaxAttempts = 1
	want(t, "setup 5", s.lclaim(0, one), anarchon.OutcomeWon)
	if !s.release(0, job, slot(5), spent) {
		t.Fatal("setup: Release returned false")
	}
	want(t, "setup solo", s.lclaim(0, rclaim(solo, base, token(), "a", longLease)), anarchon.OutcomeWon)

	spentAgain := rclaim(job, slot(5), token(), "c", longLease)
	spentAgain.MaxAttempts = 1
	lateNew := rclaim(job, slot(6), token(), "c", longLease)
	lateNew.MaxLate = time.Millisecond
	overlap := rclaim(solo, base+1000, token(), "c", longLease)
	overlap.AllowOverlap = false
	fresh := rclaim(job, slot(7), token(), "c", longLease)
	rows := []struct {
		name    string
		c       anarchon.RunClaim
		kind    anarchon.OutcomeKind
		attempt int // checked when > 0
		holder  string
		status  anarchon.Status
	}{
		{"running, same token", rclaim(job, slot(0), mine, "a", longLease), anarchon.OutcomeWon, 1, "", ""},
		{"running, other token, lease live", rclaim(job, slot(1), token(), "c", longLease), anarchon.OutcomeRunning, 1, "b", ""},
		{"done", rclaim(job, slot(2), token(), "c", longLease), anarchon.OutcomeDone, 0, "", ""},
		{"missed", rclaim(job, slot(3), token(), "c", longLease), anarchon.OutcomeNone, 0, "", ""},
		{"released, attempts left", rclaim(job, slot(4), token(), "c", longLease), anarchon.OutcomeWon, 2, "", ""},
		{"released, attempts used up", spentAgain, anarchon.OutcomeDone, 0, "", anarchon.StatusAbandoned},
		{"absent, late", lateNew, anarchon.OutcomeLate, 0, "", ""},
		{"absent, overlap", overlap, anarchon.OutcomeOverlap, 0, "", ""},
		{"absent", fresh, anarchon.OutcomeWon, 1, "", ""},
	}
	in := make([]anarchon.RunClaim, len(rows))
	for k, r := range rows {
		in[k] = r.c
	}
	for k, out := range s.claimRuns(1, in) {
		r := rows[k]
		if out.Kind != r.kind {
			t.Errorf("%s: outcome %v (%+v), want %v", r.name, out.Kind, out, r.kind)
			continue
		}
		if r.attempt > 0 && out.Attempt != r.attempt {
			t.Errorf("%s: attempt %d, want %d", r.name, out.Attempt, r.attempt)
		}
		if r.holder != "" && out.Holder != r.holder {
			t.Errorf("%s: holder %q, want %q", r.name, out.Holder, r.holder)
		}
		if r.status != "" && out.Status != r.status {
			t.Errorf("%s: status %q, want %q", r.name, out.Status, r.status)
		}
	}
	// The batch left what single claims leave: its late and overlapping
	// slots are settled, its wins are held.
	want(t, "single claim of the slot the batch found late", s.lclaim(0, rclaim(job, slot(6), token(), "d", longLease)), anarchon.OutcomeNone)
	want(t, "single claim of the slot the batch found overlapping", s.lclaim(0, rclaim(solo, base+1000, token(), "d", longLease)), anarchon.OutcomeNone)
	out := s.lclaim(0, rclaim(job, slot(4), token(), "d", longLease))
	want(t, "single claim of the slot the batch took over", out, anarchon.OutcomeRunning)
	if out.Holder != "c" || out.Attempt != 2 {
		t.Errorf("the slot the batch took over: holder %q attempt %d, want c 2", out.Holder, out.Attempt)
	}
	want(t, "single claim of the slot the batch won", s.lclaim(0, rclaim(job, slot(7), token(), "d", longLease)), anarchon.OutcomeRunning)
}

// testRunBatchOrder: the claims of one batch are decided in turn: a
// batch of two new slots of one job, overlap not allowed, wins the first
// and finds the second overlapping it, as two single claims in a row
// would; with an overlap limit of 2 the third of three overlaps.
func testRunBatchOrder(t *testing.T, h Harness) {
	s := open(t, h, 2)
	job := jobName("rbatch-order")
	s.prepare(job, 100)
	slot := baseSlot()
	first := rclaim(job, slot, token(), "a", longLease)
	second := rclaim(job, slot+1000, token(), "a", longLease)
	first.AllowOverlap, second.AllowOverlap = false, false
	got := s.claimRuns(0, []anarchon.RunClaim{first, second})
	if got[0].Kind != anarchon.OutcomeWon || got[1].Kind != anarchon.OutcomeOverlap {
		t.Errorf("batch of two new slots of one job without overlap = [%v %v], want [won overlap]", got[0].Kind, got[1].Kind)
	}
	// The overlap limit (RunClaim.Limit) reaches the store through a
	// batch as through a single claim: with Limit 2, three new slots of
	// one job answer won, won, overlap.
	job = jobName("rbatch-limit")
	s.prepare(job, 100)
	var in []anarchon.RunClaim
	for k := range 3 {
		c := rclaim(job, slot+int64(k)*1000, token(), "a", longLease)
		c.AllowOverlap, c.Limit = false, 2
		in = append(in, c)
	}
	got = s.claimRuns(1, in)
	if got[0].Kind != anarchon.OutcomeWon || got[1].Kind != anarchon.OutcomeWon || got[2].Kind != anarchon.OutcomeOverlap {
		t.Errorf("batch of three new slots of one job with Limit 2 = [%v %v %v], want [won won overlap]", got[0].Kind, got[1].Kind, got[2].Kind)
	}
}

// testRunBatchEarly: as testBatchEarly, for lease claims: the early slot
// is answered with an *anarchon.EarlyError and left absent.
func testRunBatchEarly(t *testing.T, h Harness) {
	s := open(t, h, 2)
	job := jobName("rbatch-early")
	s.prepare(job, 10)
	now := s.now()
	due := now.Add(-2 * time.Second).Truncate(time.Second).UnixMilli()
	ahead := now.Add(time.Hour).Truncate(time.Second).UnixMilli()
	in := []anarchon.RunClaim{
		rclaim(job, due, token(), "a", longLease),
		rclaim(job, ahead, token(), "fast", longLease),
		rclaim(job, due+1000, token(), "a", longLease),
	}
	for k := range in {
		in[k].MaxLate = time.Minute
	}
	out, err := s.runBatcher(0).ClaimRuns(s.ctx, in)
	if err != nil || len(out) != 3 {
		t.Fatalf("ClaimRuns = %d answers, %v; want 3, nil", len(out), err)
	}
	checkEarly(t, "ClaimRuns", ahead, out[1].Err)
	for _, k := range []int{0, 2} {
		if out[k].Err != nil || out[k].Outcome.Kind != anarchon.OutcomeWon {
			t.Errorf("claim %d of a due slot beside an early one = %v, %v; want won", k, out[k].Outcome.Kind, out[k].Err)
		}
	}
	for _, a := range s.active(1, job) {
		if a.Slot == ahead {
			t.Errorf("a refused lease claim in a batch left an active run: %+v", a)
		}
	}
}

// testRunBatchPaused: a batch answers a paused job's new slot paused, as
// a single claim does, and later claims none; the other job's slot
// beside it is won.
func testRunBatchPaused(t *testing.T, h Harness) {
	s := open(t, h, 2)
	paused, other := jobName("rbatch-paused"), jobName("rbatch-free")
	s.prepare(paused, 100)
	s.prepare(other, 100)
	slot := baseSlot()
	s.setPaused(1, anarchon.PauseInput{Job: paused, Paused: true, By: "ops"})
	got := s.claimRuns(0, []anarchon.RunClaim{
		rclaim(paused, slot, token(), "a", longLease),
		rclaim(other, slot, token(), "a", longLease),
	})
	if got[0].Kind != anarchon.OutcomePaused || got[1].Kind != anarchon.OutcomeWon {
		t.Errorf("batch of [paused, free] = [%v %v], want [paused won]", got[0].Kind, got[1].Kind)
	}
	if got := s.claimRuns(1, []anarchon.RunClaim{rclaim(paused, slot, token(), "b", longLease)}); got[0].Kind != anarchon.OutcomeNone {
		t.Errorf("a later batch claim of the paused slot = %v, want none", got[0].Kind)
	}
	checkPausedRecord(t, s.history(0, paused, 0), slot)
}

// testRunBatchBurst: batches shaped like a burst, every claim its job's
// only one, which a store may decide together (pgbackend and, on SQLite,
// sqlbackend win them with one INSERT and one UPDATE of the fences). Racers claim one new slot of every job per round, half
// with batches (in their own job order), half with single claims: each
// slot has exactly one winner, and each job's fences grow from round to
// round. Then one batch of such claims meets a job with no row yet, a
// slot past its max-late and a slot its job's live run refuses, and is
// answered as single claims are.
func testRunBatchBurst(t *testing.T, h Harness) {
	s := open(t, h, h.Handles)
	const nJobs = 24
	jobs := make([]string, nJobs)
	for k := range jobs {
		jobs[k] = jobName(fmt.Sprintf("rbatch-burst-%02d", k))
		s.prepare(jobs[k], 100)
	}
	rounds := min(max(h.Rounds/16, 3), 40)
	base := baseSlot()
	racers := max(h.Racers/2, 2)
	type win struct {
		g      int
		fence  uint64
		holder string
		until  time.Time
	}
	var mu sync.Mutex
	wins := map[[2]int][]win{}    // (round, job) -> its wins
	running := map[[2]int][]win{} // (round, job) -> the holders and lease ends its running answers gave
	var errs atomic.Int32
	fail := func(format string, args ...any) {
		if errs.Add(1) <= 5 {
			t.Errorf(format, args...)
		}
	}
	var wg sync.WaitGroup
	for g := range racers {
		wg.Go(func() {
			batcher, _ := anarchon.As[anarchon.RunBatchClaimer](s.b(g))
			for r := range rounds {
				slot := base + int64(r)*1000
				order := make([]int, nJobs)
				for k := range order {
					order[k] = (k + g*5) % nJobs
				}
				in := make([]anarchon.RunClaim, nJobs)
				for i, k := range order {
					in[i] = rclaim(jobs[k], slot, token(), fmt.Sprintf("racer-%d", g), longLease)
					in[i].AllowOverlap = r%2 == 0 // both paths of the overlap rule
				}
				outs := make([]anarchon.ClaimOutcome, nJobs)
				if g%2 == 0 {
					answers, err := batcher.ClaimRuns(s.ctx, in)
					if err != nil || len(answers) != nJobs {
						fail("racer %d: ClaimRuns(%d claims) = %d answers, %v", g, nJobs, len(answers), err)
						return
					}
					for i, a := range answers {
						if a.Err != nil {
							fail("racer %d: ClaimRuns: %s: %v", g, in[i].Job, a.Err)
							return
						}
						outs[i] = a.Outcome
					}
				} else {
					for i, c := range in {
						out, err := s.rs(g).Claim(s.ctx, c)
						if err != nil {
							fail("racer %d: RunStore.Claim of %s: %v", g, c.Job, err)
							return
						}
						outs[i] = out
					}
				}
				for i, out := range outs {
					switch out.Kind {
					case anarchon.OutcomeWon:
						if out.Attempt != 1 || out.Holder != in[i].InstanceID {
							fail("racer %d, round %d, %s: won attempt %d holder %q, want 1 %q", g, r, in[i].Job, out.Attempt, out.Holder, in[i].InstanceID)
						}
						mu.Lock()
						key := [2]int{r, order[i]}
						wins[key] = append(wins[key], win{g, out.Fence, out.Holder, out.LeaseUntil})
						mu.Unlock()
					case anarchon.OutcomeRunning:
						mu.Lock()
						key := [2]int{r, order[i]}
						running[key] = append(running[key], win{g, 0, out.Holder, out.LeaseUntil})
						mu.Unlock()
					case anarchon.OutcomeOverlap, anarchon.OutcomeNone:
						// overlap is not allowed this round and the job's
						// run of the round before is live: the first claim
						// of the slot settles it skipped, the others find
						// it settled
						if r%2 == 0 {
							fail("racer %d, round %d, %s: outcome %v with overlap allowed", g, r, in[i].Job, out.Kind)
						}
					default:
						fail("racer %d, round %d, %s: outcome %v, want won, running, overlap or none", g, r, in[i].Job, out.Kind)
					}
				}
			}
		})
	}
	wg.Wait()
	if errs.Load() > 0 {
		t.FailNow()
	}
	for k := range nJobs {
		var last uint64
		for r := range rounds {
			w := wins[[2]int{r, k}]
			switch {
			case r%2 == 1:
				// overlap refused: the run of round r-1 holds its lease
				if len(w) != 0 {
					t.Errorf("%s, round %d: %d won claims beside a live run with overlap refused, want 0", jobs[k], r, len(w))
				}
				continue
			case len(w) != 1:
				t.Errorf("%s, round %d: %d won claims, want exactly 1", jobs[k], r, len(w))
				continue
			}
			if !h.NoFence && w[0].fence <= last {
				t.Errorf("%s, round %d: won with Fence %d, not above the round before's %d", jobs[k], r, w[0].fence, last)
			}
			last = w[0].fence
			// the winner's lease is never renewed here: every claim that
			// met it live reports its holder and its lease end, whether
			// the win or the answer came from a batch or a single claim
			for _, o := range running[[2]int{r, k}] {
				if o.holder != w[0].holder || !sameMs(o.until, w[0].until) {
					t.Errorf("%s, round %d: racer %d was answered running by %q until %v; the win was %q's until %v",
						jobs[k], r, o.g, o.holder, o.until.UTC(), w[0].holder, w[0].until.UTC())
				}
			}
		}
	}

	// One claim per job, each meeting another row of SPEC §6's table.
	fresh, unprepared, late, refused := jobName("rbatch-one-fresh"), jobName("rbatch-one-new"), jobName("rbatch-one-late"), jobName("rbatch-one-overlap")
	for _, j := range []string{fresh, late, refused} {
		s.prepare(j, 100)
	}
	want(t, "setup: the live run", s.lclaim(0, rclaim(refused, base, token(), "a", longLease)), anarchon.OutcomeWon)
	lateClaim := rclaim(late, base, token(), "c", longLease)
	lateClaim.MaxLate = time.Millisecond
	overlap := rclaim(refused, base+1000, token(), "c", longLease)
	overlap.AllowOverlap = false
	rows := []struct {
		name string
		c    anarchon.RunClaim
		kind anarchon.OutcomeKind
	}{
		{"new slot", rclaim(fresh, base, token(), "c", longLease), anarchon.OutcomeWon},
		{"new slot of a job never prepared", rclaim(unprepared, base, token(), "c", longLease), anarchon.OutcomeWon},
		{"new slot past its max-late", lateClaim, anarchon.OutcomeLate},
		{"new slot beside a live run, overlap refused", overlap, anarchon.OutcomeOverlap},
	}
	in := make([]anarchon.RunClaim, len(rows))
	for k, r := range rows {
		in[k] = r.c
	}
	for k, out := range s.claimRuns(1, in) {
		if out.Kind != rows[k].kind {
			t.Errorf("%s: outcome %v (%+v), want %v", rows[k].name, out.Kind, out, rows[k].kind)
		}
	}
	want(t, "single claim of the new slot the batch won", s.lclaim(0, rclaim(fresh, base, token(), "d", longLease)), anarchon.OutcomeRunning)
	want(t, "single claim of the new job's slot the batch won", s.lclaim(0, rclaim(unprepared, base, token(), "d", longLease)), anarchon.OutcomeRunning)
	want(t, "single claim of the slot the batch found late", s.lclaim(0, rclaim(late, base, token(), "d", longLease)), anarchon.OutcomeNone)
	want(t, "single claim of the slot the batch found overlapping", s.lclaim(0, rclaim(refused, base+1000, token(), "d", longLease)), anarchon.OutcomeNone)
}
