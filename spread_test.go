package anarchon_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// Every slot has one owner among n instances: the ranks the n instances
// give it are 0 … n-1, each once, and each instance owns about 1/n of the
// slots.
func TestWaveRanksArePermutations(t *testing.T) {
	const slots = 3000
	base := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	for _, n := range []int{2, 3, 5} {
		owned := make([]int, n)
		for i := range slots {
			job := fmt.Sprintf("job-%d", i%700)
			slot := base.Add(time.Duration(i/700) * time.Minute)
			seen := make([]bool, n)
			for self := range n {
				r := anarchon.Rank(n, self, job, slot)
				if r < 0 || r >= n || seen[r] {
					t.Fatalf("n=%d %s %v: instance %d has rank %d (seen %v)", n, job, slot, self, r, seen)
				}
				seen[r] = true
				if r == 0 {
					owned[self]++
				}
			}
		}
		for self, k := range owned {
			if want := slots / n; k < want*8/10 || k > want*12/10 {
				t.Errorf("n=%d: instance %d owns %d of %d slots, want about %d", n, self, k, slots, want)
			}
		}
	}
	if r := anarchon.Rank(1, 0, "job", base); r != 0 {
		t.Errorf("a lone instance ranks a slot %d, want 0", r)
	}
}

// An instance's place counts only live records, and itself whether or not
// the listing has its record yet.
func TestPeersCountLiveRecordsAndSelf(t *testing.T) {
	rec := func(id string, st anarchon.InstanceState) anarchon.InstanceRecord {
		return anarchon.InstanceRecord{InstanceInfo: anarchon.InstanceInfo{ID: id}, State: st}
	}
	recs := []anarchon.InstanceRecord{
		rec("a", anarchon.InstanceLive), rec("b", anarchon.InstanceDead),
		rec("c", anarchon.InstanceLive), rec("d", anarchon.InstanceStopped), rec("e", anarchon.InstanceLive),
	}
	for _, tc := range []struct {
		id      string
		n, self int
	}{
		{"a", 3, 0}, {"c", 3, 1}, {"e", 3, 2},
		{"b", 4, 1},              // listed dead: a new start under its ID counts itself
		{"0", 4, 0}, {"z", 4, 3}, // not listed yet
	} {
		if n, self := anarchon.Peers(tc.id, recs); n != tc.n || self != tc.self {
			t.Errorf("%s: place %d of %d, want %d of %d", tc.id, self, n, tc.self, tc.n)
		}
	}
	if n, self := anarchon.Peers("a", nil); n != 1 || self != 0 {
		t.Errorf("empty listing: place %d of %d, want 0 of 1", self, n)
	}
}

// burstWinners runs one burst of k jobs on the schedulers ids, each on a
// handle of store whose first-claim batches take a millisecond, and
// returns which instance ran each job's slot and when, failing the test
// on a slot run other than once.
func burstWinners(t *testing.T, store *membackend.Backend, ids []string, k int, leased bool) (map[string]string, map[string]time.Duration) {
	t.Helper()
	var mu sync.Mutex
	ran := map[string]string{}
	late := map[string]time.Duration{}
	runs := map[string]int{}
	h := func(_ context.Context, run *anarchon.Run) error {
		mu.Lock()
		defer mu.Unlock()
		ran[run.Job] = run.InstanceID
		late[run.Job] = time.Since(run.Slot)
		runs[run.Job]++
		return nil
	}
	var ss []*anarchon.Scheduler
	for _, id := range ids {
		s := newSched(t, &countStore{Backend: store, delay: time.Millisecond}, id, nil)
		for i := range k {
			if err := s.Every(fmt.Sprintf("job-%04d", i), time.Minute, h, &anarchon.JobOptions{NoLease: !leased}); err != nil {
				t.Fatal(err)
			}
		}
		ss = append(ss, s)
	}
	for _, s := range ss {
		mustStart(t, s)
	}
	// The registry renewals (every 5 s) list every instance before the
	// minute boundary; one burst comes due.
	time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + 30*time.Second)))
	stopAll(t, ss...)
	for i := range k {
		if job := fmt.Sprintf("job-%04d", i); runs[job] != 1 {
			t.Errorf("%s ran %d times, want 1", job, runs[job])
		}
	}
	return ran, late
}

// In a burst every instance claims its own slots first and the others'
// only once the store has answered those: each slot is run by its owner,
// so the winners spread evenly and the losing claims of a slot come after
// its winning one. With one wave, the instance whose batch reaches the
// store first would win every slot of it.
func TestBurstWavesSpreadTheWins(t *testing.T) {
	for _, leased := range []bool{false, true} {
		t.Run(fmt.Sprintf("leased=%v", leased), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ids := []string{"s0", "s1", "s2"}
				ran, _ := burstWinners(t, membackend.New(nil), ids, 600, leased)
				slot := time.Now().Truncate(time.Minute)
				wins := map[string]int{}
				for job, got := range ran {
					wins[got]++
					if want := anarchon.SlotOwner(ids, job, slot); got != want {
						t.Errorf("%s ran on %s, want its owner %s", job, got, want)
					}
				}
				for _, id := range ids {
					if wins[id] < 150 || wins[id] > 250 {
						t.Errorf("%s won %d of 600 slots, want about 200 (%v)", id, wins[id], wins)
					}
				}
			})
		})
	}
}

// An instance listed live that claims nothing (killed, or not yet listed
// dead) loses no slot: the next instance on the ring claims its slots in
// its second wave, one store answer later.
func TestBurstWavesCoverAnInstanceThatDoesNotClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		if err := store.RegisterInstance(context.Background(), anarchon.InstanceInfo{ID: "s1"}, time.Hour); err != nil {
			t.Fatal(err)
		}
		ids := []string{"s0", "s1", "s2"}
		ran, late := burstWinners(t, store, []string{"s0", "s2"}, 600, false)
		slot := time.Now().Truncate(time.Minute)
		silent := 0
		for job, got := range ran {
			owner := anarchon.SlotOwner(ids, job, slot)
			if owner != "s1" {
				if got != owner {
					t.Errorf("%s ran on %s, want its owner %s", job, got, owner)
				}
				continue
			}
			silent++
			if got != "s2" { // s2 follows s1 on the ring
				t.Errorf("%s, s1's, ran on %s, want s2", job, got)
			}
			if late[job] > 50*time.Millisecond {
				t.Errorf("%s, s1's, started %v late", job, late[job])
			}
		}
		if silent < 150 {
			t.Errorf("s1 owned %d of 600 slots, want about 200", silent)
		}
	})
}

// claimsFirstStore is a memory store whose n-th claim batch takes n ×
// step to answer; it notes when the last claim batch was answered and
// when the first result batch was sent.
type claimsFirstStore struct {
	*membackend.Backend
	step time.Duration

	mu                    sync.Mutex
	batches               int
	lastAnswer, firstSave time.Time
}

func (c *claimsFirstStore) ClaimBatch(ctx context.Context, in []anarchon.ClaimInput) ([]anarchon.ClaimAnswer, error) {
	defer c.slowBatch()()
	return c.Backend.ClaimBatch(ctx, in)
}

// slowBatch waits n × step for the n-th claim batch; the function it
// returns notes the batch's answer.
func (c *claimsFirstStore) slowBatch() func() {
	c.mu.Lock()
	c.batches++
	d := time.Duration(c.batches) * c.step
	c.mu.Unlock()
	time.Sleep(d)
	return func() {
		c.mu.Lock()
		c.lastAnswer = time.Now()
		c.mu.Unlock()
	}
}

func (c *claimsFirstStore) Runs() anarchon.RunStore {
	return claimsFirstRuns{c.Backend.Runs().(*membackend.RunStore), c}
}

// claimsFirstRuns is claimsFirstStore's RunStore: its n-th lease claim
// batch takes n × step to answer, and it notes when the first batch of
// finishes was sent.
type claimsFirstRuns struct {
	*membackend.RunStore
	c *claimsFirstStore
}

func (r claimsFirstRuns) ClaimRuns(ctx context.Context, in []anarchon.RunClaim) ([]anarchon.RunClaimAnswer, error) {
	defer r.c.slowBatch()()
	return r.RunStore.ClaimRuns(ctx, in)
}

func (r claimsFirstRuns) FinishResults(ctx context.Context, in []anarchon.SaveResultInput) ([]anarchon.HeldAnswer, error) {
	r.c.noteSave()
	return r.RunStore.FinishResults(ctx, in)
}

func (c *claimsFirstStore) noteSave() {
	c.mu.Lock()
	if c.firstSave.IsZero() {
		c.firstSave = time.Now()
	}
	c.mu.Unlock()
}

func (c *claimsFirstStore) SaveResults(ctx context.Context, in []anarchon.SaveResultInput) ([]error, error) {
	c.noteSave()
	return c.Backend.SaveResults(ctx, in)
}

// In a burst (more slots than one batch) of one instance (one wave: the
// test with two is TestBurstLeasedFinishesWaitForTheFirstWave) the
// results of plain runs, and the finishes of leased runs, wait for the
// instance's claims of the burst: none is sent before the last claim
// batch is answered, though the
// handlers of the first batch ended long before. When the claims take
// longer than ResultHold, they go after ResultHold. A group of one batch
// holds nothing, and neither does a leased run whose lease ends, or whose
// job's next slot comes, within two ResultHolds. Batches of 16 keep the
// bursts small: the race detector crashed (a CHECK in its runtime) in
// some runs of the whole package with bursts of 1,000 leased runs here.
func TestClaimsFirst(t *testing.T) {
	plain := &anarchon.JobOptions{NoLease: true}
	held := func(t *testing.T, first, last, save time.Time) {
		if save.Before(last) {
			t.Errorf("first result sent %v after the first claim batch's answer, %v before the last's",
				save.Sub(first), last.Sub(save))
		}
	}
	beyond := func(t *testing.T, first, last, save time.Time) {
		if !save.Before(last) || save.Sub(first) < anarchon.ResultHold {
			t.Errorf("first result sent %v after the first claim batch's answer (last %v after it); want ResultHold (%v) after it",
				save.Sub(first), last.Sub(first), anarchon.ResultHold)
		}
	}
	notHeld := func(t *testing.T, first, last, save time.Time) {
		if save.Sub(first) > 2*anarchon.BatchWindow {
			t.Errorf("first result sent %v after the first claim batch's answer; want within the batch window", save.Sub(first))
		}
	}
	within := func(lo, hi time.Duration) func(t *testing.T, first, last, save time.Time) {
		return func(t *testing.T, first, last, save time.Time) {
			if d := save.Sub(first); d < lo || d > hi || !save.Before(last) {
				t.Errorf("first result sent %v after the first claim batch's answer (last %v after it); want %v to %v, before the last",
					d, last.Sub(first), lo, hi)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		jobs  int
		step  time.Duration
		every time.Duration
		opts  *anarchon.JobOptions
		check func(t *testing.T, firstAnswer, lastAnswer, firstSave time.Time)
		stop  time.Duration // after the first slot; 0: half a minute, or three slots of a job every second
	}{
		{"burst", 64, 50 * time.Millisecond, time.Minute, plain, held, 0},
		{"claims beyond the hold", 48, 800 * time.Millisecond, time.Minute, plain, beyond, 0},
		{"one batch", 12, 50 * time.Millisecond, time.Minute, plain, notHeld, 0},
		{"leased burst", 64, 50 * time.Millisecond, time.Minute, nil, held, 0},
		{"leased claims beyond the hold", 48, 800 * time.Millisecond, time.Minute, nil, beyond, 0},
		{"leased one batch", 12, 50 * time.Millisecond, time.Minute, nil, notHeld, 0},
		{"leased, lease ending", 64, 50 * time.Millisecond, time.Minute, &anarchon.JobOptions{Lease: time.Second}, notHeld, 0},
		{"leased, next slot near", 64, 50 * time.Millisecond, time.Second, nil, notHeld, 0},
		// Two batches, answered 0.8 and 1.6 s after they were sent: the
		// lease's safe end (2.4 − 0.4 s after the send) leaves the first
		// batch's finishes a hold of 0.2 s, not ResultHold.
		{"leased, hold cut by the lease", 32, 800 * time.Millisecond, time.Minute, &anarchon.JobOptions{Lease: 2400 * time.Millisecond},
			within(200*time.Millisecond, 200*time.Millisecond+2*anarchon.BatchWindow), 0},
		// Stop, 0.9 s after the slot, ends the hold of the finishes of
		// the first batch (answered at 0.8 s) though claims are in flight.
		{"leased, Stop ends the hold", 48, 800 * time.Millisecond, time.Minute, nil,
			within(100*time.Millisecond, 100*time.Millisecond+2*anarchon.BatchWindow), 900 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &claimsFirstStore{Backend: membackend.New(nil), step: tc.step}
				var mu sync.Mutex
				var firstStart time.Time
				s := newSched(t, store, "a", &anarchon.Options{BatchSize: 16})
				h := func(context.Context, *anarchon.Run) error {
					mu.Lock()
					if firstStart.IsZero() {
						firstStart = time.Now()
					}
					mu.Unlock()
					return nil
				}
				for i := range tc.jobs {
					if err := s.Every(fmt.Sprintf("job-%04d", i), tc.every, h, tc.opts); err != nil {
						t.Fatal(err)
					}
				}
				mustStart(t, s)
				// The first burst, and time for its results: half a
				// minute, or three slots of a job every second.
				stop := min(30*time.Second, 2*tc.every)
				if tc.stop > 0 {
					stop = tc.stop
				}
				time.Sleep(time.Until(time.Now().Truncate(tc.every).Add(tc.every + stop)))
				stopAll(t, s)
				store.mu.Lock()
				defer store.mu.Unlock()
				if firstStart.IsZero() || store.firstSave.IsZero() {
					t.Fatalf("no handler started (%v) or no result batch sent (%v)", firstStart, store.firstSave)
				}
				tc.check(t, firstStart, store.lastAnswer, store.firstSave)
			})
		})
	}
}

// sendLog is a memory store whose first-claim batches take delay to
// answer; it notes when each instance sent each of them.
type sendLog struct {
	*membackend.Backend
	delay time.Duration

	mu   sync.Mutex
	sent map[string][]time.Time
}

func (s *sendLog) ClaimBatch(ctx context.Context, in []anarchon.ClaimInput) ([]anarchon.ClaimAnswer, error) {
	s.mu.Lock()
	s.sent[in[0].InstanceID] = append(s.sent[in[0].InstanceID], time.Now())
	s.mu.Unlock()
	time.Sleep(s.delay)
	return s.Backend.ClaimBatch(ctx, in)
}

// A later wave waits, after the answers of the one before, as long again
// as that one took: with batches that take 40 ms to answer, each
// instance sends its own slots' batch when the slot comes due and the
// other's 80 ms later (40 ms without the pause). With answers that take
// longer than MaxWavePause, the pause is MaxWavePause. Stop during the
// pause ends it: the second wave is not sent, and Stop does not wait.
func TestBurstWavesPause(t *testing.T) {
	for _, tc := range []struct {
		name       string
		delay, gap time.Duration
		stopAt     time.Duration // after the slot; 0: after the burst
	}{
		{"40ms", 40 * time.Millisecond, 80 * time.Millisecond, 0},
		{"1s", time.Second, time.Second + anarchon.MaxWavePause, 0},
		{"stop", time.Second, 0, time.Second + anarchon.MaxWavePause/2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &sendLog{Backend: membackend.New(nil), delay: tc.delay, sent: map[string][]time.Time{}}
				ids := []string{"s0", "s1"}
				var ss []*anarchon.Scheduler
				nop := func(context.Context, *anarchon.Run) error { return nil }
				for _, id := range ids {
					s := newSched(t, store, id, nil)
					for i := range 100 {
						if err := s.Every(fmt.Sprintf("job-%03d", i), time.Minute, nop, &anarchon.JobOptions{NoLease: true}); err != nil {
							t.Fatal(err)
						}
					}
					ss = append(ss, s)
				}
				for _, s := range ss {
					mustStart(t, s)
				}
				// The registry renewals list both instances before the
				// minute boundary; one burst comes due.
				slot := time.Now().Truncate(time.Minute).Add(time.Minute)
				if tc.stopAt > 0 {
					time.Sleep(time.Until(slot.Add(tc.stopAt)))
					began := time.Now()
					stopAll(t, ss...)
					if took := time.Since(began); took > 0 {
						t.Errorf("Stop in a wave pause took %v, want no wait", took)
					}
				} else {
					time.Sleep(time.Until(slot.Add(30 * time.Second)))
					stopAll(t, ss...)
				}
				store.mu.Lock()
				defer store.mu.Unlock()
				for _, id := range ids {
					var offsets []time.Duration
					for _, at := range store.sent[id] {
						if !at.Before(slot) {
							offsets = append(offsets, at.Sub(slot))
						}
					}
					if tc.stopAt > 0 {
						if len(offsets) != 1 {
							t.Errorf("%s sent its batches of the burst at %v after the slot, want only the first wave's", id, offsets)
						}
						continue
					}
					if len(offsets) != 2 || offsets[1]-offsets[0] != tc.gap {
						t.Errorf("%s sent its batches of the burst at %v after the slot, want two, %v apart", id, offsets, tc.gap)
					}
				}
			})
		})
	}
}

// waveLog is a memory store whose first-claim batches, plain and leased,
// take delay to answer; it notes per instance when its claim batches were
// sent and answered and when its first result or finish batch was sent.
type waveLog struct {
	*membackend.Backend
	delay time.Duration

	mu             sync.Mutex
	sent, answered map[string][]time.Time
	firstEnd       map[string]time.Time
}

func (w *waveLog) claim(id string) func() {
	w.mu.Lock()
	w.sent[id] = append(w.sent[id], time.Now())
	w.mu.Unlock()
	time.Sleep(w.delay)
	return func() {
		w.mu.Lock()
		w.answered[id] = append(w.answered[id], time.Now())
		w.mu.Unlock()
	}
}

func (w *waveLog) end(id string) {
	w.mu.Lock()
	if _, ok := w.firstEnd[id]; !ok {
		w.firstEnd[id] = time.Now()
	}
	w.mu.Unlock()
}

func (w *waveLog) ClaimBatch(ctx context.Context, in []anarchon.ClaimInput) ([]anarchon.ClaimAnswer, error) {
	defer w.claim(in[0].InstanceID)()
	return w.Backend.ClaimBatch(ctx, in)
}

func (w *waveLog) SaveResults(ctx context.Context, in []anarchon.SaveResultInput) ([]error, error) {
	w.end(in[0].Result.InstanceID)
	return w.Backend.SaveResults(ctx, in)
}

func (w *waveLog) Runs() anarchon.RunStore {
	return waveLogRuns{w.Backend.Runs().(*membackend.RunStore), w}
}

// waveLogRuns is waveLog's RunStore.
type waveLogRuns struct {
	*membackend.RunStore
	w *waveLog
}

func (r waveLogRuns) ClaimRuns(ctx context.Context, in []anarchon.RunClaim) ([]anarchon.RunClaimAnswer, error) {
	defer r.w.claim(in[0].InstanceID)()
	return r.RunStore.ClaimRuns(ctx, in)
}

func (r waveLogRuns) FinishResults(ctx context.Context, in []anarchon.SaveResultInput) ([]anarchon.HeldAnswer, error) {
	r.w.end(in[0].Result.InstanceID)
	return r.RunStore.FinishResults(ctx, in)
}

// With two instances a burst is two waves: each instance's own slots when
// they come due, answered 40 ms later, then, after a pause as long, the
// other's (sent at 80 ms, answered at 120 ms). The finishes of leased runs
// wait for the first wave and its pause only: the first is sent when the
// second wave is (a holder killed while its finishes wait leaves runs that
// ended to backups, SPEC §4 "Claims first"), before that wave's answers.
// The results of plain runs, which no backup runs again, wait for the
// last wave's answers.
func TestBurstLeasedFinishesWaitForTheFirstWave(t *testing.T) {
	const delay = 40 * time.Millisecond
	for _, leased := range []bool{true, false} {
		t.Run(map[bool]string{true: "leased", false: "plain"}[leased], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &waveLog{Backend: membackend.New(nil), delay: delay,
					sent: map[string][]time.Time{}, answered: map[string][]time.Time{}, firstEnd: map[string]time.Time{}}
				ids := []string{"s0", "s1"}
				var ss []*anarchon.Scheduler
				nop := func(context.Context, *anarchon.Run) error { return nil }
				for _, id := range ids {
					s := newSched(t, store, id, &anarchon.Options{BatchSize: 16})
					for i := range 100 {
						if err := s.Every(fmt.Sprintf("job-%03d", i), time.Minute, nop, &anarchon.JobOptions{NoLease: !leased}); err != nil {
							t.Fatal(err)
						}
					}
					ss = append(ss, s)
				}
				for _, s := range ss {
					mustStart(t, s)
				}
				slot := time.Now().Truncate(time.Minute).Add(time.Minute)
				time.Sleep(time.Until(slot.Add(30 * time.Second)))
				stopAll(t, ss...)
				store.mu.Lock()
				defer store.mu.Unlock()
				after := func(ts []time.Time) []time.Duration {
					var out []time.Duration
					for _, at := range ts {
						if !at.Before(slot) {
							out = append(out, at.Sub(slot))
						}
					}
					return out
				}
				for _, id := range ids {
					sent, answered := after(store.sent[id]), after(store.answered[id])
					if len(sent) == 0 || len(answered) != len(sent) || sent[len(sent)-1] != 2*delay || answered[len(answered)-1] != 3*delay {
						t.Fatalf("%s: claim batches sent at %v and answered at %v after the slot, want the last sent at %v and answered at %v",
							id, sent, answered, 2*delay, 3*delay)
					}
					end, ok := store.firstEnd[id]
					if !ok {
						t.Fatalf("%s sent no result or finish", id)
					}
					got := end.Sub(slot)
					if leased && (got < 2*delay || got >= 3*delay) {
						t.Errorf("%s: first finish sent %v after the slot, want from the second wave's send (%v) to before its answer (%v)", id, got, 2*delay, 3*delay)
					}
					if !leased && got < 3*delay {
						t.Errorf("%s: first result sent %v after the slot, want after the last wave's answer (%v)", id, got, 3*delay)
					}
				}
			})
		})
	}
}

// startsFirstStore is a memory store whose n-th RecordClaims call takes
// n × step, while its claims are answered at once: the handlers of a
// burst's later batches begin well after its claims were all answered.
// It notes when the first result batch was sent.
type startsFirstStore struct {
	*membackend.Backend
	step time.Duration

	mu        sync.Mutex
	records   int
	firstSave time.Time
}

func (c *startsFirstStore) RecordClaims(ctx context.Context, in []anarchon.ClaimInput) ([]error, error) {
	c.mu.Lock()
	c.records++
	d := time.Duration(c.records) * c.step
	c.mu.Unlock()
	time.Sleep(d)
	return c.Backend.RecordClaims(ctx, in)
}

func (c *startsFirstStore) SaveResults(ctx context.Context, in []anarchon.SaveResultInput) ([]error, error) {
	c.mu.Lock()
	if c.firstSave.IsZero() {
		c.firstSave = time.Now()
	}
	c.mu.Unlock()
	return c.Backend.SaveResults(ctx, in)
}

// In a plain burst the results wait for the handlers of the burst to
// begin, not only for its claims (SPEC §4, "Claims first"): with the
// wins of four batches of 16 recorded 50, 100, 150 and 200 ms after the
// claims were answered, no result is sent before the last handler began,
// though the first batch's handlers ended 150 ms before.
func TestResultsWaitForTheBurstsStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &startsFirstStore{Backend: membackend.New(nil), step: 50 * time.Millisecond}
		var mu sync.Mutex
		var first, last time.Time
		s := newSched(t, store, "a", &anarchon.Options{BatchSize: 16})
		h := func(context.Context, *anarchon.Run) error {
			mu.Lock()
			if first.IsZero() {
				first = time.Now()
			}
			last = time.Now()
			mu.Unlock()
			return nil
		}
		for i := range 64 {
			if err := s.Every(fmt.Sprintf("job-%04d", i), time.Minute, h, &anarchon.JobOptions{NoLease: true}); err != nil {
				t.Fatal(err)
			}
		}
		mustStart(t, s)
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + 30*time.Second)))
		stopAll(t, s)
		store.mu.Lock()
		defer store.mu.Unlock()
		if last.Sub(first) < 3*store.step {
			t.Fatalf("handlers began from %v to %v: want the last batch's %v after the first's", first, last, 3*store.step)
		}
		if store.firstSave.Before(last) {
			t.Errorf("first result sent %v after the first handler began, %v before the last", store.firstSave.Sub(first), last.Sub(store.firstSave))
		}
	})
}
