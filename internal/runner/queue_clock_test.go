package runner

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// stepClock is the now of a queue whose offset a test moves, as the
// scheduler moves its estimate of the store's clock.
type stepClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *stepClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.off) }
func (c *stepClock) set(d time.Duration) {
	c.mu.Lock()
	c.off = d
	c.mu.Unlock()
}

// runQueue runs q with now until the returned stop is called; fire gets
// each slot with the true time (time.Now) at which it fired.
func runQueue[T any](q *Queue[T], now func() time.Time, fire func(v T, slot, at time.Time)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var inflight sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.Run(ctx, now, &inflight, func(_ context.Context, v T, slot time.Time) { fire(v, slot, time.Now()) })
	}()
	return func() { cancel(); <-done; inflight.Wait() }
}

// A clock set an hour back makes Run wait an hour; Wake after the clock
// is corrected makes it fire the next slot on time.
func TestQueueWakeAfterClockCorrected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue[int]
		var clk stepClock
		var mu sync.Mutex
		var fired []time.Time
		q.Add(&Entry[int]{Next: every(time.Second), MaxLate: time.Minute}, clk.now())
		stop := runQueue(&q, clk.now, func(_ int, slot, at time.Time) { mu.Lock(); fired = append(fired, slot); mu.Unlock() })
		time.Sleep(1500 * time.Millisecond) // one slot
		clk.set(-time.Hour)
		time.Sleep(time.Second) // the timer fires, the head is an hour away
		clk.set(0)
		q.Wake()
		time.Sleep(1200 * time.Millisecond)
		stop()
		mu.Lock()
		defer mu.Unlock()
		// Slots at 1 s; at 2 s nothing (clock an hour back); the wake at
		// 2.5 s fires 2 s late (within MaxLate) and 3 s, 4 s... ones due.
		if len(fired) < 3 {
			t.Fatalf("after Wake the queue fired %d slots in all, want at least 3: %v", len(fired), fired)
		}
	})
}

// Rewind moves a queue that ran an hour ahead back to the first slot
// after the corrected now: every slot fires once when due by the true
// clock, and the ones taken while the clock was ahead are refused.
func TestQueueRewind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue[int]
		var clk stepClock
		var mu sync.Mutex
		type firing struct{ slot, at time.Time }
		var fired []firing
		e := &Entry[int]{Next: every(time.Second), MaxLate: 5 * time.Second}
		q.Add(e, clk.now())
		start := time.Now()
		var refused []time.Time
		stop := runQueue(&q, clk.now, func(_ int, slot, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if at.Before(slot) { // the store refuses: not due by its clock
				refused = append(refused, slot)
				return
			}
			fired = append(fired, firing{slot, at})
		})
		time.Sleep(300 * time.Millisecond)
		clk.set(time.Hour) // the host clock steps ahead
		time.Sleep(time.Second)
		clk.set(0) // the step is detected and the offset re-measured
		mu.Lock()
		early := append([]time.Time(nil), refused...)
		mu.Unlock()
		if len(early) == 0 {
			stop()
			t.Fatal("the queue fired nothing while its clock was an hour ahead")
		}
		q.Rewind(clk.now())
		time.Sleep(3*time.Second + 100*time.Millisecond)

		// The same step again, with the clock corrected before Rewind.
		clk.set(time.Hour)
		time.Sleep(time.Second)
		clk.set(0)
		q.Rewind(clk.now())
		time.Sleep(2*time.Second + 100*time.Millisecond)
		stop()
		if len(refused) <= len(early) {
			t.Error("the second step fired nothing early")
		}
		mu.Lock()
		defer mu.Unlock()
		var want []time.Time
		for s := start.Truncate(time.Second).Add(time.Second); !s.After(time.Now()); s = s.Add(time.Second) {
			want = append(want, s)
		}
		if len(fired) != len(want) {
			t.Fatalf("fired %d slots by the true clock, want %d (every second): %v", len(fired), len(want), fired)
		}
		for i, f := range fired {
			if !f.slot.Equal(want[i]) {
				t.Errorf("slot %d = %v, want %v", i, f.slot, want[i])
			}
		}
	})
}

// runGroupsLead runs q with RunGroups (no window) and lead until the
// returned stop is called; each group's Wait is timed, and fire gets each
// slot with the true time at which its group's Wait returned and now's
// reading then.
func runGroupsLead[T any](q *Queue[T], now func() time.Time, lead time.Duration, fire func(v T, slot, at, clock time.Time)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var inflight sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.RunGroups(ctx, now, 0, lead, &inflight, func(ctx context.Context, g *Group[T]) {
			if !g.Wait(ctx) {
				return
			}
			at, clock := time.Now(), now()
			for _, d := range g.Due {
				fire(d.V, d.Slot, at, clock)
			}
		})
	}()
	return func() { cancel(); <-done; inflight.Wait() }
}

// A group handed over ahead of its time waits for it by the queue's clock
// as that clock moves: stepped back while it waits, it waits the step
// longer; stepped forward, it goes as soon as the clock says the slot is
// due.
func TestQueueLeadWaitsForTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue[int]
		var clk stepClock
		type firing struct{ slot, at, clock time.Time }
		var mu sync.Mutex
		var fired []firing
		q.Add(&Entry[int]{Next: every(time.Minute), MaxLate: time.Minute}, clk.now())
		const lead = 100 * time.Millisecond
		stop := runGroupsLead(&q, clk.now, lead, func(_ int, slot, at, clock time.Time) {
			mu.Lock()
			fired = append(fired, firing{slot, at, clock})
			mu.Unlock()
		})
		slot := time.Now().Truncate(time.Minute).Add(time.Minute)
		time.Sleep(time.Until(slot.Add(-lead / 2))) // handed over, waiting
		clk.set(-time.Second)
		q.Wake()
		time.Sleep(time.Until(slot.Add(time.Second + time.Millisecond)))
		second := slot.Add(time.Minute)
		clk.set(0)
		q.Wake()
		time.Sleep(time.Until(second.Add(-lead / 2)))
		clk.set(30 * time.Millisecond)
		q.Wake()
		time.Sleep(time.Until(second.Add(time.Millisecond)))
		stop()
		mu.Lock()
		defer mu.Unlock()
		if len(fired) != 2 {
			t.Fatalf("fired %v, want the two slots once each", fired)
		}
		for _, f := range fired {
			if f.clock.Before(f.slot) {
				t.Errorf("slot %v went at %v by the queue's clock: early", f.slot, f.clock)
			}
		}
		if want := slot.Add(time.Second); !fired[0].at.Equal(want) {
			t.Errorf("with the clock a second behind, the slot went at %v, want %v (the slot by that clock)", fired[0].at, want)
		}
		if want := second.Add(-30 * time.Millisecond); !fired[1].at.Equal(want) {
			t.Errorf("with the clock 30ms ahead, the slot went at %v, want %v (the slot by that clock)", fired[1].at, want)
		}
	})
}

// Rewind while a slot is pending (handed over ahead of its time, not yet
// due) does not take that slot again: it fires once.
func TestQueueRewindKeepsPendingSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue[int]
		var clk stepClock
		var mu sync.Mutex
		var fired []time.Time
		q.Add(&Entry[int]{Next: every(time.Second), MaxLate: 5 * time.Second}, clk.now())
		const lead = 100 * time.Millisecond
		stop := runGroupsLead(&q, clk.now, lead, func(_ int, slot, _, _ time.Time) {
			mu.Lock()
			fired = append(fired, slot)
			mu.Unlock()
		})
		slot := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(slot.Add(-lead / 2)))
		q.Rewind(clk.now())
		time.Sleep(time.Until(slot.Add(time.Second / 2)))
		stop()
		mu.Lock()
		defer mu.Unlock()
		if len(fired) != 1 || !fired[0].Equal(slot) {
			t.Fatalf("fired %v, want the slot %v once", fired, slot)
		}
	})
}

// A Rewind back past earlier slots while one is pending hands the earlier
// ones over again, each when due by the corrected clock, and passes over
// the pending one, which its group claims: every slot fires once.
func TestQueueRewindPastPendingSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue[int]
		var clk stepClock
		var mu sync.Mutex
		fired := map[time.Time]int{}
		q.Add(&Entry[int]{Next: every(time.Second), MaxLate: 5 * time.Second}, clk.now())
		const lead = 100 * time.Millisecond
		stop := runGroupsLead(&q, clk.now, lead, func(_ int, slot, _, clock time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if clock.Before(slot) {
				t.Errorf("slot %v went at %v by the queue's clock: early", slot, clock)
			}
			fired[slot]++
		})
		slot := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(slot.Add(-lead / 2))) // slot is pending
		clk.set(-2 * time.Second)                   // the clock was 2 s ahead
		q.Rewind(clk.now())
		time.Sleep(time.Until(slot.Add(2*time.Second + time.Millisecond)))
		stop()
		mu.Lock()
		defer mu.Unlock()
		for _, s := range []time.Time{slot.Add(-2 * time.Second), slot.Add(-time.Second), slot} {
			if fired[s] != 1 {
				t.Errorf("slot %v fired %d times, want once (all: %v)", s, fired[s], fired)
			}
		}
	})
}
