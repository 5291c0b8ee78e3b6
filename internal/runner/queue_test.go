package runner

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// every returns the Next function of an epoch-aligned interval.
func every(d time.Duration) func(time.Time) time.Time {
	return func(t time.Time) time.Time { return t.Truncate(d).Add(d) }
}

// The queue fires every slot of each job once, in order, never before its
// time, and after a pause longer than MaxLate skips to the slots still
// within it instead of replaying the backlog.
func TestQueueFiresSlotsOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue[string]
		var mu sync.Mutex
		fired := map[string][]time.Time{}
		var early []string
		now := func() time.Time { return time.Now() }
		q.Add(&Entry[string]{Value: "1s", Next: every(time.Second), MaxLate: time.Minute}, now())
		q.Add(&Entry[string]{Value: "3s", Next: every(3 * time.Second), MaxLate: time.Minute, MaxDelay: 500 * time.Millisecond,
			Delay: func(slot time.Time) time.Duration { return time.Duration(slot.Unix()%5) * 100 * time.Millisecond }}, now())
		ctx, cancel := context.WithCancel(context.Background())
		var inflight sync.WaitGroup
		done := make(chan struct{})
		go func() {
			defer close(done)
			q.Run(ctx, now, &inflight, func(_ context.Context, v string, slot time.Time) {
				mu.Lock()
				defer mu.Unlock()
				if time.Now().Before(slot) {
					early = append(early, v)
				}
				fired[v] = append(fired[v], slot)
			})
		}()
		start := time.Now()
		time.Sleep(10*time.Second + 600*time.Millisecond)
		cancel()
		<-done
		inflight.Wait()
		if len(early) > 0 {
			t.Errorf("slots fired before their time: %v", early)
		}
		for v, step := range map[string]time.Duration{"1s": time.Second, "3s": 3 * time.Second} {
			slots := fired[v]
			want := int(10 * time.Second / step)
			if len(slots) != want {
				t.Errorf("%s: %d slots fired, want %d: %v", v, len(slots), want, slots)
			}
			for i, s := range slots {
				if w := start.Truncate(step).Add(time.Duration(i+1) * step); !s.Equal(w) {
					t.Errorf("%s: slot %d = %v, want %v", v, i, s, w)
				}
			}
		}
	})
}

func TestQueueSkipsAheadAfterPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue[int]
		var mu sync.Mutex
		var slots []time.Time
		// A clock that jumps an hour ahead after the first slot, as a
		// machine that was suspended.
		var jumped time.Duration
		now := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(jumped) }
		type skipped struct{ first, next time.Time }
		var skips []skipped
		q.Skipped = func(_ int, first, next time.Time) { skips = append(skips, skipped{first, next}) }
		q.Add(&Entry[int]{Next: every(time.Second), MaxLate: 5 * time.Second}, now())
		ctx, cancel := context.WithCancel(context.Background())
		var inflight sync.WaitGroup
		done := make(chan struct{})
		go func() {
			defer close(done)
			q.Run(ctx, now, &inflight, func(_ context.Context, _ int, slot time.Time) {
				mu.Lock()
				defer mu.Unlock()
				slots = append(slots, slot)
				if len(slots) == 1 {
					jumped = time.Hour
				}
			})
		}()
		time.Sleep(2500 * time.Millisecond)
		cancel()
		<-done
		inflight.Wait()
		// Slot 1 fired, then the clock read an hour later: the next slot
		// (already taken from the queue) fires, then those within MaxLate
		// of the new time (5 or 6 of them), not 3600.
		if len(slots) < 3 || len(slots) > 8 {
			t.Fatalf("%d slots fired after an hour's pause with MaxLate 5s, want a handful: %v", len(slots), slots)
		}
		// A batch fires in goroutines of its own, in any order.
		slices.SortFunc(slots, time.Time.Compare)
		if late := slots[len(slots)-1].Sub(slots[0]); late < time.Hour-5*time.Second {
			t.Errorf("the last slot is %v after the first; want the backlog skipped", late)
		}
		// The skipped run is reported once: from the slot after the one
		// taken before the jump to the first slot fired after it.
		if len(skips) != 1 || !skips[0].first.Equal(slots[1].Add(time.Second)) || !skips[0].next.Equal(slots[2]) {
			t.Errorf("skips %v, want one from %v to %v", skips, slots[1].Add(time.Second), slots[2])
		}
	})
}

// Entries added, removed and replaced while Run runs: an entry added to an
// empty running queue fires from its first slot; a removed one fires no
// more; a replacement fires the slots of its own schedule from where the
// old one stopped, and a slot both schedules contain fires once.
func TestQueueChangesWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue[string]
		var mu sync.Mutex
		fired := map[string][]int64{}
		ctx, cancel := context.WithCancel(context.Background())
		var inflight sync.WaitGroup
		done := make(chan struct{})
		go func() {
			defer close(done)
			q.Run(ctx, time.Now, &inflight, func(_ context.Context, v string, slot time.Time) {
				mu.Lock()
				defer mu.Unlock()
				fired[v] = append(fired[v], slot.Unix())
			})
		}()
		start := time.Now().Truncate(time.Minute).Add(time.Minute) // the fake clock starts on a whole second
		time.Sleep(time.Until(start))
		synctest.Wait()
		a := &Entry[string]{Value: "a", Next: every(2 * time.Second), MaxLate: time.Minute}
		q.Add(a, time.Now()) // slots start+2, +4, ...
		time.Sleep(5 * time.Second)
		b := &Entry[string]{Value: "b", Next: every(3 * time.Second), MaxLate: time.Minute}
		q.Replace(a, b, time.Now()) // at +5: b fires +6, +9, ...
		time.Sleep(5 * time.Second)
		if !q.Remove(b) { // at +10
			t.Error("Remove(b) = false for a queued entry")
		}
		if q.Remove(b) {
			t.Error("second Remove(b) = true")
		}
		time.Sleep(5 * time.Second)
		cancel()
		<-done
		inflight.Wait()
		s := start.Unix()
		rel := func(v string) []int64 {
			var out []int64
			for _, x := range fired[v] {
				out = append(out, x-s)
			}
			return out
		}
		if got, want := rel("a"), []int64{2, 4}; !slices.Equal(got, want) {
			t.Errorf("a fired at %v, want %v", got, want)
		}
		if got, want := rel("b"), []int64{6, 9}; !slices.Equal(got, want) {
			t.Errorf("b fired at %v, want %v", got, want)
		}
		q.mu.Lock()
		n := len(q.h)
		q.mu.Unlock()
		if n != 0 {
			t.Errorf("%d entries queued after removing the only one", n)
		}
	})
}

// Replace keeps a slot that old's jitter still delays when the new
// schedule contains it.
func TestQueueReplaceKeepsDelayedSlot(t *testing.T) {
	var q Queue[string]
	now := time.Unix(1000, 0)
	a := &Entry[string]{Value: "a", Next: every(2 * time.Second), MaxLate: time.Minute, MaxDelay: time.Second,
		Delay: func(time.Time) time.Duration { return 900 * time.Millisecond }}
	q.Add(a, now.Add(-time.Second-time.Millisecond)) // pending slot 1000, fires at 1000.9
	b := &Entry[string]{Value: "b", Next: every(time.Second), MaxLate: time.Minute}
	q.Replace(a, b, now.Add(500*time.Millisecond))
	if got := b.slot.Unix(); got != 1000 {
		t.Errorf("replacement's first slot = %d, want 1000 (old's pending slot)", got)
	}
}

// RunGroups hands slots due at one instant to fire together, gathers
// those that come due within the window after the first, and starts a new
// group for a slot after the window. Each group is handed over a lead
// before its first slot, and its Wait returns no sooner than its last
// slot's time.
func TestQueueRunGroupsGathersWithinWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue[string]
		now := time.Now
		const lead = 100 * time.Millisecond
		jitter := map[string]time.Duration{"a": 0, "b": 0, "c": time.Millisecond, "d": 2 * time.Millisecond, "e": 3 * time.Millisecond}
		for v, d := range jitter {
			q.Add(&Entry[string]{Value: v, Next: every(time.Minute), MaxLate: time.Minute, MaxDelay: d,
				Delay: func(time.Time) time.Duration { return d }}, now())
		}
		type group struct {
			handed, at time.Time
			slots      []string
		}
		var mu sync.Mutex
		var groups []group
		var early []string
		ctx, cancel := context.WithCancel(context.Background())
		var inflight sync.WaitGroup
		done := make(chan struct{})
		go func() {
			defer close(done)
			q.RunGroups(ctx, now, 2*time.Millisecond, lead, &inflight, func(ctx context.Context, g *Group[string]) {
				handed := time.Now()
				if !g.Wait(ctx) {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				var vs []string
				for _, d := range g.Due {
					if time.Now().Before(d.Slot.Add(jitter[d.V])) {
						early = append(early, d.V)
					}
					vs = append(vs, d.V)
				}
				slices.Sort(vs)
				groups = append(groups, group{handed, time.Now(), vs})
			})
		}()
		slot := time.Now().Truncate(time.Minute).Add(time.Minute)
		time.Sleep(time.Until(slot.Add(time.Second)))
		cancel()
		<-done
		inflight.Wait()
		if len(early) > 0 {
			t.Errorf("slots handed over before their time: %v", early)
		}
		if len(groups) != 2 || !slices.Equal(groups[0].slots, []string{"a", "b", "c", "d"}) || !slices.Equal(groups[1].slots, []string{"e"}) {
			t.Fatalf("groups %v, want [a b c d] (due within 2ms of the first) then [e]", groups)
		}
		if d := groups[0].at.Sub(slot); d != 2*time.Millisecond {
			t.Errorf("first group's Wait returned %v after the slot, want 2ms (its last member's time)", d)
		}
		if d := slot.Sub(groups[0].handed); d != lead {
			t.Errorf("first group handed over %v before the slot, want the lead, %v", d, lead)
		}
		if d := groups[1].at.Sub(slot); d != 3*time.Millisecond {
			t.Errorf("second group's Wait returned %v after the slot, want 3ms", d)
		}
	})
}

// Replace while the old entry's slot is handed over ahead of its time and
// still delayed by its jitter gives that slot to the new entry: the
// caller leaves the old entry's copy out, so the slot is not lost.
func TestQueueReplaceWithinLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue[string]
		const lead = 100 * time.Millisecond
		const jitter = 80 * time.Millisecond
		delay := func(time.Time) time.Duration { return jitter }
		old := &Entry[string]{Value: "old", Next: every(time.Minute), MaxLate: time.Minute, MaxDelay: jitter, Delay: delay}
		q.Add(old, time.Now())
		var mu sync.Mutex
		fired := map[string][]time.Time{}
		ctx, cancel := context.WithCancel(context.Background())
		var inflight sync.WaitGroup
		done := make(chan struct{})
		go func() {
			defer close(done)
			q.RunGroups(ctx, time.Now, 0, lead, &inflight, func(ctx context.Context, g *Group[string]) {
				if !g.Wait(ctx) {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, d := range g.Due {
					fired[d.V] = append(fired[d.V], d.Slot)
				}
			})
		}()
		slot := time.Now().Truncate(time.Minute).Add(time.Minute)
		time.Sleep(time.Until(slot.Add(30 * time.Millisecond))) // handed over at slot+80ms−100ms, due at slot+80ms
		q.Replace(old, &Entry[string]{Value: "new", Next: every(time.Minute), MaxLate: time.Minute, MaxDelay: jitter, Delay: delay}, time.Now())
		time.Sleep(time.Until(slot.Add(time.Second)))
		cancel()
		<-done
		inflight.Wait()
		mu.Lock()
		defer mu.Unlock()
		if got := fired["new"]; len(got) != 1 || !got[0].Equal(slot) {
			t.Errorf("the replacement fired %v, want the slot %v once (old fired %v)", got, slot, fired["old"])
		}
	})
}
