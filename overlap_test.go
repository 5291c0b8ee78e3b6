package anarchon_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// OverlapBufferOne on three schedulers sharing a store, a 10 s job whose
// first run takes 25 s and the others 1 s. Timeline (seconds after the
// first slot, T):
//
//	T+0   slot 0 runs until T+25
//	T+10  slot 10 waits for slot 0, then runs (starts within PollInterval of T+25)
//	T+20  slot 20 comes while slot 10 waits: skipped
//	T+30  slot 30 runs at once (slot 10 ended at ~T+27)
//
// No two runs overlap, and each slot runs at most once.
func TestOverlapBufferOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		type span struct {
			slot       time.Time
			start, end time.Time
			inst       string
		}
		var mu sync.Mutex
		var spans []span
		var t0 time.Time
		h := func(ctx context.Context, run *anarchon.Run) error {
			start := time.Now()
			d := time.Second
			if run.Slot.Equal(t0) {
				d = 25 * time.Second
			}
			time.Sleep(d)
			mu.Lock()
			spans = append(spans, span{run.Slot, start, time.Now(), run.InstanceID})
			mu.Unlock()
			return nil
		}
		t0 = time.Now().Truncate(10 * time.Second).Add(10 * time.Second).UTC()
		ss := startEvery(t, store, nil, "buf", 10*time.Second, h, &anarchon.JobOptions{Overlap: anarchon.OverlapBufferOne, Lease: 3 * time.Second})
		time.Sleep(time.Until(t0.Add(35 * time.Second)))
		stopAll(t, ss...)

		mu.Lock()
		defer mu.Unlock()
		at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
		bySlot := map[int64]span{}
		for _, sp := range spans {
			if _, dup := bySlot[sp.slot.UnixMilli()]; dup {
				t.Errorf("slot %v ran twice", sp.slot)
			}
			bySlot[sp.slot.UnixMilli()] = sp
		}
		s0, ok0 := bySlot[at(0).UnixMilli()]
		s10, ok10 := bySlot[at(10).UnixMilli()]
		s30, ok30 := bySlot[at(30).UnixMilli()]
		if !ok0 || !ok10 || !ok30 {
			t.Fatalf("runs %+v, want slots 0, 10 and 30", spans)
		}
		if _, ran := bySlot[at(20).UnixMilli()]; ran {
			t.Errorf("slot 20 ran; want it skipped while slot 10 waited")
		}
		if !s0.start.Equal(at(0)) || !s30.start.Equal(at(30)) {
			t.Errorf("slot 0 started %v, slot 30 %v: want at their times", s0.start.Sub(t0), s30.start.Sub(t0))
		}
		if w := s10.start.Sub(s0.end); w < 0 || w > time.Second {
			t.Errorf("slot 10 started %v after slot 0 ended, want within PollInterval (1 s)", w)
		}
		for _, a := range spans {
			for _, b := range spans {
				if a != b && a.start.Before(b.end) && b.start.Before(a.end) {
					t.Errorf("runs of slots %v and %v overlap", a.slot.Sub(t0), b.slot.Sub(t0))
				}
			}
		}
		recs := historyBySlot(t, ss[0], "buf")[at(20).UnixMilli()]
		if len(recs) != 1 || recs[0].Status != anarchon.StatusSkipped || !strings.Contains(recs[0].Error, "overlap buffer_one") {
			t.Errorf("slot 20's history %+v, want one skipped record saying why", recs)
		}
	})
}

// OverlapLimit 2 on three schedulers sharing a store, a 10 s job whose
// runs each take 25 s. Timeline (seconds after the first slot, T):
//
//	T+0   slot 0 runs until T+25
//	T+10  slot 10 runs until T+35 (one other run)
//	T+20  slot 20: slots 0 and 10 run: skipped
//	T+30  slot 30 runs until T+55 (slot 0 ended; slot 10 runs)
//	T+40  slot 40 runs until T+65 (slot 10 ended; slot 30 runs)
//	T+50  slot 50: slots 30 and 40 run: skipped
//	T+60  slot 60 runs for 1 s (slot 30 ended; slot 40 runs); Stop at T+66
//
// Each slot runs at most once, on time, and never more than 2 at once.
func TestOverlapLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		type span struct {
			slot       time.Time
			start, end time.Time
		}
		var mu sync.Mutex
		var spans []span
		live, most := 0, 0
		t0 := time.Now().Truncate(10 * time.Second).Add(10 * time.Second).UTC()
		h := func(ctx context.Context, run *anarchon.Run) error {
			start := time.Now()
			mu.Lock()
			live++
			most = max(most, live)
			mu.Unlock()
			d := 25 * time.Second
			if run.Slot.Sub(t0) >= 60*time.Second {
				d = time.Second // so that nothing runs at Stop
			}
			time.Sleep(d)
			mu.Lock()
			live--
			spans = append(spans, span{run.Slot, start, time.Now()})
			mu.Unlock()
			return nil
		}
		ss := startEvery(t, store, nil, "lim", 10*time.Second, h, &anarchon.JobOptions{Overlap: anarchon.OverlapLimit, OverlapLimit: 2, Lease: 3 * time.Second})
		time.Sleep(time.Until(t0.Add(66 * time.Second)))
		stopAll(t, ss...)

		mu.Lock()
		defer mu.Unlock()
		at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
		ran := map[time.Time]span{}
		for _, sp := range spans {
			if _, dup := ran[sp.slot]; dup {
				t.Errorf("slot %v ran twice", sp.slot.Sub(t0))
			}
			ran[sp.slot] = sp
			if !sp.start.Equal(sp.slot) {
				t.Errorf("slot %v started at %v, want on time", sp.slot.Sub(t0), sp.start.Sub(t0))
			}
		}
		for _, sec := range []int{0, 10, 30, 40, 60} {
			if _, ok := ran[at(sec)]; !ok {
				t.Errorf("slot %d did not run; runs %+v", sec, spans)
			}
		}
		hist := historyBySlot(t, ss[0], "lim")
		for _, sec := range []int{20, 50} {
			if sp, ok := ran[at(sec)]; ok {
				t.Errorf("slot %d ran (%v to %v); want it skipped while two others ran", sec, sp.start.Sub(t0), sp.end.Sub(t0))
			}
			recs := hist[at(sec).UnixMilli()]
			if len(recs) != 1 || recs[0].Status != anarchon.StatusSkipped || recs[0].ClaimedAt.IsZero() ||
				!strings.Contains(recs[0].Error, "still held a live lease") {
				t.Errorf("slot %d's history %+v, want one skipped record with its claim time, saying why", sec, recs)
			}
		}
		if most != 2 {
			t.Errorf("at most %d runs at once, want 2", most)
		}
	})
}

// OverlapReplace on three schedulers sharing a store, a 10 s job with
// lease 3 s. Timeline (seconds after the first slot, T):
//
//	T+0   slot 0 runs, waiting 25 s on its context
//	T+10  slot 10 replaces slot 0: slot 0's context ends (ErrReplaced),
//	      slot 10 starts once slot 0 recorded its end, and runs 3 s
//	T+20  slot 20 runs (nothing to replace), waiting 25 s on its context
//	T+30  slot 30 replaces slot 20, then runs 25 s ignoring its context
//	T+40  slot 40 replaces slot 30, whose handler does not return: slot 40
//	      starts when slot 30's lease would have run out (at most 3 s)
//	T+50  slot 50 runs (slot 40 ended)
//
// Each slot runs once; replaced runs are recorded replaced. Without a
// watch, the replaced holder learns it at its next heartbeat (Lease/3).
func TestOverlapReplace(t *testing.T) {
	t.Run("Watch", func(t *testing.T) {
		testOverlapReplace(t, true, func() anarchon.Backend { return membackend.New(nil) })
	})
	t.Run("Poll", func(t *testing.T) {
		testOverlapReplace(t, false, func() anarchon.Backend { return replaceNoWatch{membackend.New(nil)} })
	})
}

// replaceNoWatch hides the Watcher of a membackend but keeps its
// Replacer.
type replaceNoWatch struct{ *membackend.Backend }

func (n replaceNoWatch) Runs() anarchon.RunStore {
	rs := n.Backend.Runs()
	return struct {
		anarchon.RunStore
		anarchon.Replacer
	}{rs, rs.(anarchon.Replacer)}
}
func (replaceNoWatch) WatchRuns() {}

func testOverlapReplace(t *testing.T, watch bool, newStore func() anarchon.Backend) {
	synctest.Test(t, func(t *testing.T) {
		store := newStore()
		type span struct {
			slot       time.Time
			start, end time.Time
			cause      error
		}
		var mu sync.Mutex
		var spans []span
		t0 := time.Now().Truncate(10 * time.Second).Add(10 * time.Second).UTC()
		h := func(ctx context.Context, run *anarchon.Run) error {
			start := time.Now()
			var err error
			switch run.Slot.Sub(t0) {
			case 0, 20 * time.Second:
				select {
				case <-time.After(25 * time.Second):
				case <-ctx.Done():
					err = ctx.Err()
				}
			case 30 * time.Second:
				time.Sleep(25 * time.Second) // ignores the cancellation
			case 10 * time.Second:
				time.Sleep(3 * time.Second)
			default:
				time.Sleep(time.Second)
			}
			mu.Lock()
			spans = append(spans, span{run.Slot, start, time.Now(), context.Cause(ctx)})
			mu.Unlock()
			return err
		}
		ss := startEvery(t, store, nil, "rep", 10*time.Second, h, &anarchon.JobOptions{Overlap: anarchon.OverlapReplace, Lease: 3 * time.Second})
		time.Sleep(time.Until(t0.Add(58 * time.Second)))
		stopAll(t, ss...)

		mu.Lock()
		defer mu.Unlock()
		at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
		ran := map[time.Time]span{}
		for _, sp := range spans {
			if _, dup := ran[sp.slot]; dup {
				t.Errorf("slot %v ran twice", sp.slot.Sub(t0))
			}
			ran[sp.slot] = sp
		}
		for sec := 0; sec <= 50; sec += 10 {
			if _, ok := ran[at(sec)]; !ok {
				t.Fatalf("slot %d did not run; runs %+v", sec, spans)
			}
		}
		hist := historyBySlot(t, ss[0], "rep")
		for _, c := range []struct{ replaced, by int }{{0, 10}, {20, 30}, {30, 40}} {
			old, nu := ran[at(c.replaced)], ran[at(c.by)]
			if !errors.Is(old.cause, anarchon.ErrReplaced) {
				t.Errorf("slot %d ended with cause %v, want ErrReplaced", c.replaced, old.cause)
			}
			if recs := hist[at(c.replaced).UnixMilli()]; len(recs) != 1 || recs[0].Status != anarchon.StatusReplaced {
				t.Errorf("slot %d's history %+v, want one replaced record", c.replaced, recs)
			}
			if c.replaced == 30 {
				continue // ignores its cancellation: see below
			}
			if old.end.Before(at(c.by)) || old.end.After(at(c.by).Add(time.Second)) {
				t.Errorf("slot %d ended at %v, want within 1 s (Lease/3) after slot %d came due", c.replaced, old.end.Sub(t0), c.by)
			}
			if nu.start.Before(old.end) || nu.start.After(old.end.Add(time.Second)) {
				t.Errorf("slot %d started at %v, want within PollInterval (1 s) after slot %d ended at %v", c.by, nu.start.Sub(t0), c.replaced, old.end.Sub(t0))
			}
			// With a Watcher the replaced run ends at once, and the
			// replacing one starts at one of its first, quick looks.
			if watch && nu.start.After(at(c.by).Add(100*time.Millisecond)) {
				t.Errorf("slot %d started at %v, want within 100 ms of its time: the replaced run ended at %v", c.by, nu.start.Sub(t0), old.end.Sub(t0))
			}
		}
		// Slot 30 ignored its cancellation: slot 40 waited for its lease
		// to run out (3 s at most), not for its end at T+55.
		if s40 := ran[at(40)]; !s40.start.After(at(40)) || s40.start.After(at(43)) {
			t.Errorf("slot 40 started at %v, want in (40s, 43s]: after slot 30's lease ran out", s40.start.Sub(t0))
		}
		for _, sec := range []int{10, 40, 50} {
			sp := ran[at(sec)]
			if sp.cause != nil {
				t.Errorf("slot %d ended with cause %v, want none", sec, sp.cause)
			}
			if recs := hist[at(sec).UnixMilli()]; len(recs) != 1 || recs[0].Status != anarchon.StatusSuccess {
				t.Errorf("slot %d's history %+v, want one success record", sec, recs)
			}
		}
		for _, sec := range []int{20, 50} {
			if !ran[at(sec)].start.Equal(at(sec)) {
				t.Errorf("slot %d started at %v, want on time (nothing to replace)", sec, ran[at(sec)].start.Sub(t0))
			}
		}
	})
}

// A job under OverlapReplace whose interval (2 s) is shorter than
// PollInterval (5 s), each run working until replaced: with a Watcher each
// run starts within 100 ms of its slot and works until the next slot
// replaces it, rather than waiting a PollInterval for the replaced run's
// end and being replaced before it starts.
func TestOverlapReplaceShortInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		t0 := time.Now().Truncate(10 * time.Second).Add(10 * time.Second).UTC()
		var mu sync.Mutex
		worked := map[time.Time]time.Duration{}
		late := map[time.Time]time.Duration{}
		h := func(ctx context.Context, run *anarchon.Run) error {
			start := time.Now()
			select { // works until replaced, or 3 s (the last run, which Stop waits for)
			case <-ctx.Done():
			case <-time.After(3 * time.Second):
			}
			mu.Lock()
			worked[run.Slot], late[run.Slot] = time.Since(start), start.Sub(run.Slot)
			mu.Unlock()
			return ctx.Err()
		}
		ss := startEvery(t, store, &anarchon.Options{PollInterval: 5 * time.Second}, "rep", 2*time.Second, h, &anarchon.JobOptions{Overlap: anarchon.OverlapReplace, Lease: 3 * time.Second})
		time.Sleep(time.Until(t0.Add(21 * time.Second)))
		stopAll(t, ss...)
		mu.Lock()
		defer mu.Unlock()
		for sec := 2; sec <= 18; sec += 2 {
			slot := t0.Add(time.Duration(sec) * time.Second)
			if w, ok := worked[slot]; !ok || w < 1800*time.Millisecond || late[slot] > 100*time.Millisecond {
				t.Errorf("slot %d: ran %v (%v), started %v late; want about 2 s of work from within 100 ms of its slot", sec, ok, w, late[slot])
			}
		}
	})
}

// TestOverlapReplaceBeforeFirstBeat: a run replaced before its first
// heartbeat (a 60 s lease: the first renewal is due 20 s after the claim)
// learns it at once, not at that first renewal. With a watch the store's
// event tells it (the heartbeat of a run starts only when something is
// due, see runner.beats, and the event is such a thing); without one, on
// a single instance, the new slot's holder is its holder too and cancels
// it itself.
func TestOverlapReplaceBeforeFirstBeat(t *testing.T) {
	t.Run("Watch", func(t *testing.T) {
		testReplaceBeforeFirstBeat(t, func() anarchon.Backend { return membackend.New(nil) })
	})
	t.Run("Poll", func(t *testing.T) {
		testReplaceBeforeFirstBeat(t, func() anarchon.Backend { return replaceNoWatch{membackend.New(nil)} })
	})
}

func testReplaceBeforeFirstBeat(t *testing.T, newStore func() anarchon.Backend) {
	synctest.Test(t, func(t *testing.T) {
		store := newStore()
		t0 := time.Now().Truncate(10 * time.Second).Add(10 * time.Second).UTC()
		ended := make(chan time.Time, 1)
		var mu sync.Mutex
		var causes []error
		h := func(ctx context.Context, run *anarchon.Run) error {
			if !run.Slot.Equal(t0) {
				return nil
			}
			select {
			case <-time.After(40 * time.Second):
			case <-ctx.Done():
			}
			mu.Lock()
			causes = append(causes, context.Cause(ctx))
			mu.Unlock()
			ended <- time.Now()
			return ctx.Err()
		}
		s := newSched(t, store, "i0", nil)
		if err := s.Every("rep", 10*time.Second, h, &anarchon.JobOptions{Overlap: anarchon.OverlapReplace, Lease: time.Minute}); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		time.Sleep(time.Until(t0.Add(15 * time.Second)))
		stopAll(t, s)
		select {
		case at := <-ended:
			if d := at.Sub(t0); d < 10*time.Second || d > 10*time.Second+100*time.Millisecond {
				t.Errorf("slot 0 ended at %v after it came due, want within 100 ms after 10s (when slot 10 replaced it)", d)
			}
		default:
			t.Fatal("slot 0's handler had not ended 5 s after slot 10 replaced it")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(causes) != 1 || !errors.Is(causes[0], anarchon.ErrReplaced) {
			t.Errorf("slot 0 ended with causes %v, want ErrReplaced", causes)
		}
	})
}

// startEvery starts three schedulers, i0 to i2, on store with opts, each
// with the job name every interval under jobOpts.
func startEvery(t *testing.T, store anarchon.Backend, opts *anarchon.Options, name string, every time.Duration, h anarchon.Handler, jobOpts *anarchon.JobOptions) []*anarchon.Scheduler {
	t.Helper()
	var ss []*anarchon.Scheduler
	for i := range 3 {
		s := newSched(t, store, fmt.Sprintf("i%d", i), opts)
		if err := s.Every(name, every, h, jobOpts); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		ss = append(ss, s)
	}
	return ss
}
