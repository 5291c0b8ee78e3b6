package anarchon_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// startEmpty starts n schedulers with no job on one store.
func startEmpty(t *testing.T, b anarchon.Backend, n int) []*anarchon.Scheduler {
	t.Helper()
	var ss []*anarchon.Scheduler
	for i := range n {
		s := newSched(t, b, fmt.Sprintf("inst-%d", i), nil)
		mustStart(t, s)
		ss = append(ss, s)
	}
	return ss
}

// A job added to three running schedulers at different moments runs each
// slot once from its first slot after the first Add; removing it from all
// three stops it everywhere. Both claim paths.
func TestAddRemoveWhileRunning(t *testing.T) {
	for _, leased := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "leased"}[leased], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := membackend.New(nil)
				ss := startEmpty(t, b, 3)
				time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1300 * time.Millisecond)))
				l := newLedger(nil)
				opts := &anarchon.JobOptions{NoLease: !leased, Jitter: 200 * time.Millisecond}
				first := time.Now().Truncate(time.Second).Add(time.Second)
				for i, s := range ss {
					if err := s.Every("added", time.Second, l.handler(nil), opts); err != nil {
						t.Fatalf("Add on %d: %v", i, err)
					}
					time.Sleep(700 * time.Millisecond)
				}
				time.Sleep(20 * time.Second)
				for _, s := range ss {
					if err := s.Remove("added", nil); err != nil {
						t.Fatal(err)
					}
				}
				last := time.Now().Truncate(time.Second) // slots up to now may be running; none after
				time.Sleep(10 * time.Second)
				stopAll(t, ss...)
				if n := l.checkOnce(t, first, last.Add(-time.Second), time.Second); n < 20 {
					t.Errorf("checked %d slots, want >= 20", n)
				}
				l.mu.Lock()
				defer l.mu.Unlock()
				for slot := range l.runs {
					if time.UnixMilli(slot).After(last) {
						t.Errorf("slot %v ran after the job was removed everywhere", time.UnixMilli(slot))
					}
				}
				if err := ss[0].Remove("added", nil); !errors.Is(err, anarchon.ErrNotFound) {
					t.Errorf("second Remove = %v, want ErrNotFound", err)
				}
			})
		})
	}
}

// Changing */2 to */3 seconds replica by replica (a rolling change) runs
// every slot of either schedule at most once; the slots both schedules
// contain, and every slot of the schedule all replicas run, run once.
func TestRollingScheduleChange(t *testing.T) {
	for _, leased := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "leased"}[leased], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := membackend.New(nil)
				l := newLedger(nil)
				opts := &anarchon.JobOptions{NoLease: !leased, Jitter: 300 * time.Millisecond}
				var ss []*anarchon.Scheduler
				for i := range 3 {
					s := newSched(t, b, fmt.Sprintf("inst-%d", i), nil)
					if err := s.Cron("roll", "*/2 * * * * *", l.handler(nil), opts); err != nil {
						t.Fatal(err)
					}
					mustStart(t, s)
					ss = append(ss, s)
				}
				// Start on a whole minute so that */2 and */3 are easy to tell.
				time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
				t0 := time.Now()
				time.Sleep(10 * time.Second)
				for _, s := range ss {
					if err := s.Update(anarchon.Job{Name: "roll", Schedule: anarchon.CronSchedule("*/3 * * * * *"), Handler: l.handler(nil), Options: opts}); err != nil {
						t.Fatal(err)
					}
					time.Sleep(5500 * time.Millisecond)
				}
				switched := time.Now()
				time.Sleep(15 * time.Second)
				end := time.Now()
				stopAll(t, ss...)
				l.mu.Lock()
				defer l.mu.Unlock()
				for slot, runs := range l.runs {
					ts := time.UnixMilli(slot)
					if len(runs) > 1 {
						t.Errorf("slot %v ran %d times", ts, len(runs))
					}
					if ts.Second()%2 != 0 && ts.Second()%3 != 0 {
						t.Errorf("slot %v belongs to neither schedule", ts)
					}
				}
				// Before the first switch every */2 slot runs; after the
				// last, every */3 slot; throughout, every slot both share.
				for ts := t0.Add(2 * time.Second); ts.Before(end.Add(-time.Second)); ts = ts.Add(time.Second) {
					sec := ts.Second()
					want := (ts.Before(t0.Add(10*time.Second)) && sec%2 == 0) ||
						(ts.After(switched) && sec%3 == 0) || sec%6 == 0
					if want && len(l.runs[ts.UnixMilli()]) != 1 {
						t.Errorf("slot %v ran %d times, want 1", ts, len(l.runs[ts.UnixMilli()]))
					}
				}
				if l.early != 0 {
					t.Errorf("%d runs before their slot", l.early)
				}
				if got := ss[0].Jobs()[0].Schedule; got != "*/3 * * * * *" {
					t.Errorf("Jobs() schedule = %q after Update", got)
				}
			})
		})
	}
}

// Remove with Cancel cancels the running handler with the cause given (or
// ErrRemoved), and its result is stored.
func TestRemoveCancelsRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := membackend.New(nil)
		s := newSched(t, b, "a", nil)
		causes := make(chan error, 1)
		var runs atomic.Int32
		if err := s.Every("long", time.Second, func(ctx context.Context, _ *anarchon.Run) error {
			if runs.Add(1) > 1 {
				return nil
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		}, &anarchon.JobOptions{Lease: 3 * time.Second}); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		time.Sleep(1500 * time.Millisecond)
		if err := s.Remove("long", &anarchon.RemoveOptions{Cancel: true}); err != nil {
			t.Fatal(err)
		}
		if c := <-causes; !errors.Is(c, anarchon.ErrRemoved) {
			t.Errorf("cause %v, want ErrRemoved", c)
		}
		time.Sleep(5 * time.Second)
		stopAll(t, s)
		if n := runs.Load(); n != 1 {
			t.Errorf("%d runs, want 1: slots ran after Remove", n)
		}
		hist, err := b.History(context.Background(), "long", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 1 || hist[0].Status != anarchon.StatusError {
			t.Errorf("history %+v, want the cancelled run as an error", hist)
		}
	})
}

// Update refuses an unknown name and bad input, keeping the old job.
func TestUpdateErrors(t *testing.T) {
	s := newSched(t, membackend.New(nil), "a", nil)
	h := func(context.Context, *anarchon.Run) error { return nil }
	if err := s.Update(anarchon.Job{Name: "x", Schedule: anarchon.Interval(time.Second), Handler: h}); !errors.Is(err, anarchon.ErrNotFound) {
		t.Errorf("Update unknown = %v, want ErrNotFound", err)
	}
	if err := s.Every("x", time.Second, h, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(anarchon.Job{Name: "x", Schedule: anarchon.CronSchedule("bad"), Handler: h}); !isCode(err, anarchon.CodeBadCron) {
		t.Errorf("Update bad cron = %v, want CodeBadCron", err)
	}
	if got := s.Jobs()[0].Schedule; got != "every 1s" {
		t.Errorf("schedule %q after a refused Update", got)
	}
}

// A slot's group is taken from the timer queue PrepareLead before it is
// due (SPEC §4, "Prepared ahead"); a job removed within that lead does
// not run the slot, and one updated within it runs the slot once, with
// the new handler. Both claim paths.
func TestChangeWithinPrepareLead(t *testing.T) {
	for _, leased := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "leased"}[leased], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := membackend.New(nil)
				s := newSched(t, b, "a", nil)
				var removedRuns, oldRuns, newRuns atomic.Int32
				count := func(n *atomic.Int32) anarchon.Handler {
					return func(context.Context, *anarchon.Run) error { n.Add(1); return nil }
				}
				opts := &anarchon.JobOptions{NoLease: !leased}
				if err := s.Every("removed", time.Minute, count(&removedRuns), opts); err != nil {
					t.Fatal(err)
				}
				if err := s.Every("updated", time.Minute, count(&oldRuns), opts); err != nil {
					t.Fatal(err)
				}
				mustStart(t, s)
				slot := time.Now().Truncate(time.Minute).Add(time.Minute)
				time.Sleep(time.Until(slot.Add(-anarchon.PrepareLead / 2)))
				if err := s.Remove("removed", nil); err != nil {
					t.Fatal(err)
				}
				if err := s.Update(anarchon.Job{Name: "updated", Schedule: anarchon.Interval(time.Minute), Handler: count(&newRuns), Options: opts}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Until(slot.Add(5 * time.Second)))
				stopAll(t, s)
				if n := removedRuns.Load(); n != 0 {
					t.Errorf("the job removed %v before its slot ran it %d times", anarchon.PrepareLead/2, n)
				}
				if o, n := oldRuns.Load(), newRuns.Load(); o != 0 || n != 1 {
					t.Errorf("the job updated %v before its slot ran it %d times with the old handler and %d with the new, want 0 and 1", anarchon.PrepareLead/2, o, n)
				}
			})
		})
	}
}
