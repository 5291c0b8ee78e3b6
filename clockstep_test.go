package anarchon_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// stepClock is a host clock that a test steps, as NTP or a resumed
// virtual machine does: its wall time jumps, the runtime's timers do not.
type stepClock struct{ off atomic.Int64 }

func (c *stepClock) Now() time.Time       { return time.Now().Round(0).Add(time.Duration(c.off.Load())) }
func (c *stepClock) step(d time.Duration) { c.off.Add(int64(d)) }

// The clock of one of two instances steps by ±30 s or ±1 h in the middle
// of a run. No slot runs before its time by the store's clock (the store
// refuses the early claims), every slot runs exactly once (the healthy
// instance loses none, even the slot the stepped instance wins before it
// sees the step), and the stepped instance claims every slot again within
// a few seconds (the step is seen, the offset re-measured, the timer loop
// rewound, a batch gathered meanwhile handed over).
func TestClockStep(t *testing.T) {
	for _, leased := range []bool{false, true} {
		for _, step := range []time.Duration{30 * time.Second, time.Hour, -30 * time.Second, -time.Hour} {
			t.Run(fmt.Sprintf("leased=%v/step=%v", leased, step), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { testClockStep(t, leased, step) })
			})
		}
	}
}

func testClockStep(t *testing.T, leased bool, step time.Duration) {
	store := membackend.New(nil) // the store's clock is the bubble's time.Now
	l := newLedger(time.Now)
	var mu sync.Mutex
	var early, steps int
	claimed := map[int64]bool{} // slots the stepped instance claimed, not early
	clk := &stepClock{}
	var ss []*anarchon.Scheduler
	for i := range 2 {
		opts := &anarchon.Options{ClockSyncInterval: time.Hour}
		if i == 0 {
			opts.Clock = clk
			opts.OnEvent = func(e anarchon.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case e.Kind == anarchon.EventClaim && e.Outcome == "early":
					early++
				case e.Kind == anarchon.EventClaim:
					claimed[e.Slot.UnixMilli()] = true
				case e.Kind == anarchon.EventClockOffset && e.Op == "step":
					steps++
				}
			}
		}
		s := newSched(t, store, fmt.Sprintf("i%d", i), opts)
		if err := s.Every("tick", time.Second, l.handler(nil), &anarchon.JobOptions{NoLease: !leased, MaxLate: 2 * time.Second}); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		ss = append(ss, s)
	}
	first := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(10*time.Second + 300*time.Millisecond)
	clk.step(step)
	stepped := time.Now()
	time.Sleep(20 * time.Second)
	last := time.Now().Truncate(time.Second).Add(-time.Second)
	stopAll(t, ss...)
	l.checkOnce(t, first, last, time.Second)

	mu.Lock()
	defer mu.Unlock()
	if steps == 0 {
		t.Errorf("the step of %v was not seen", step)
	}
	t.Logf("claims refused as early: %d", early) // none when the step is seen before the next slot
	if got := ss[0].ClockOffset(); got != -step {
		t.Errorf("stepped instance's ClockOffset %v, want %v", got, -step)
	}
	// Which of two instances wins a slot is a race, so the stepped
	// instance's recovery is measured by its claims: from 3 s after the
	// step it claims every slot (won or lost), none refused as early.
	var missed []time.Time
	for slot := stepped.Add(3 * time.Second).Truncate(time.Second).Add(time.Second); !slot.After(last); slot = slot.Add(time.Second) {
		if !claimed[slot.UnixMilli()] {
			missed = append(missed, slot)
		}
	}
	if len(missed) > 0 {
		t.Errorf("the stepped instance did not claim %d slots from 3 s after the step on: %v", len(missed), missed)
	}
}

// liarClock reports the store's clock 30 s fast while lie is set: the
// scheduler's estimate of the store's clock is then wrong, as after a
// host clock step that no look caught.
type liarClock struct {
	anarchon.Backend
	lie atomic.Bool
}

func (b *liarClock) ServerTime(ctx context.Context) (time.Time, error) {
	if b.lie.Load() {
		return time.Now().Add(30 * time.Second), nil
	}
	return time.Now(), nil
}

// A scheduler whose estimate of the store's clock is 30 s fast claims
// slots early; the store refuses them, the scheduler re-measures at once,
// and the slots run when due, exactly once, none early.
func TestEarlyClaimRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &liarClock{Backend: membackend.New(nil)}
		b.lie.Store(true)
		l := newLedger(time.Now)
		var early, remeasured atomic.Int32
		s := newSched(t, b, "fast", &anarchon.Options{ClockSyncInterval: time.Hour, OnEvent: func(e anarchon.Event) {
			switch {
			case e.Kind == anarchon.EventClaim && e.Outcome == "early":
				early.Add(1)
			case e.Kind == anarchon.EventClockOffset && e.Op == "early":
				remeasured.Add(1)
			}
		}})
		if err := s.Every("tick", time.Second, l.handler(nil), &anarchon.JobOptions{MaxLate: 2 * time.Second}); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		if got := s.ClockOffset(); got != 30*time.Second {
			t.Fatalf("ClockOffset %v, want the lie, 30s", got)
		}
		b.lie.Store(false)
		// The first slot is claimed (30 s early) when it is due and the
		// re-measure follows its refusal: the slot after it is the first
		// the instance can run. (With other instances, one runs it.)
		first := time.Now().Truncate(time.Second).Add(2 * time.Second)
		time.Sleep(10 * time.Second)
		last := time.Now().Truncate(time.Second).Add(-time.Second)
		stopAll(t, s)
		l.checkOnce(t, first, last, time.Second)
		if early.Load() == 0 || remeasured.Load() == 0 {
			t.Errorf("%d claims refused as early, %d re-measures after them; want both", early.Load(), remeasured.Load())
		}
		if got := s.ClockOffset(); got != 0 {
			t.Errorf("ClockOffset %v after the re-measure, want 0", got)
		}
	})
}

// RunNow on a scheduler that was not started (a command-line tool) on a
// host whose clock is an hour fast records the run at the store's now.
func TestRunNowSlotByStoreClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSched(t, membackend.New(nil), "fast", &anarchon.Options{Clock: anarchon.OffsetClock{Offset: time.Hour}})
		if err := s.Every("job", time.Minute, func(context.Context, *anarchon.Run) error { return nil }, nil); err != nil {
			t.Fatal(err)
		}
		rec, err := s.RunNow(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Until(rec.Slot); d > time.Second || d < -time.Second {
			t.Errorf("manual run's slot is %v off the store's clock", d)
		}
	})
}

// The look at the local clock takes a move of more than StepThreshold
// against the monotonic clock for a step, and a smaller one (slewing, a
// late tick) for none.
func TestClockStepThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &stepClock{}
		var steps atomic.Int32
		s := newSched(t, membackend.New(nil), "i0", &anarchon.Options{Clock: clk, ClockSyncInterval: time.Hour, OnEvent: func(e anarchon.Event) {
			if e.Kind == anarchon.EventClockOffset && e.Op == "step" {
				steps.Add(1)
			}
		}})
		mustStart(t, s)
		defer stopAll(t, s)
		below := anarchon.StepThreshold - 50*time.Millisecond
		for _, d := range []time.Duration{below, -below} {
			time.Sleep(1500 * time.Millisecond)
			clk.step(d)
		}
		time.Sleep(2 * time.Second)
		if n := steps.Load(); n != 0 {
			t.Fatalf("moves of ±%v were taken for %d steps, want none below StepThreshold", below, n)
		}
		clk.step(anarchon.StepThreshold + 50*time.Millisecond)
		time.Sleep(2 * time.Second)
		if n := steps.Load(); n != 1 {
			t.Errorf("a move of %v was taken for %d steps, want 1", anarchon.StepThreshold+50*time.Millisecond, n)
		}
	})
}
