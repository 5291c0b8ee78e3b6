package anarchon_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// bareBackend offers only the Backend methods: no JobControl, no
// TriggerStore, no leases.
type bareBackend struct{ anarchon.Backend }

// Without JobControl or TriggerStore, Pause, Resume, JobState and Trigger
// say so with ErrNotSupported, and PauseOnFailure is refused with a code;
// RunNow still works.
func TestControlNotSupported(t *testing.T) {
	s := newSched(t, bareBackend{membackend.New(nil)}, "a", nil)
	h := func(context.Context, *anarchon.Run) error { return nil }
	if err := s.Every("j", time.Second, h, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Pause(ctx, "j", anarchon.PauseOptions{}); !errors.Is(err, anarchon.ErrNotSupported) {
		t.Errorf("Pause = %v, want ErrNotSupported", err)
	}
	if _, err := s.Resume(ctx, "j", anarchon.ResumeOptions{}); !errors.Is(err, anarchon.ErrNotSupported) {
		t.Errorf("Resume = %v, want ErrNotSupported", err)
	}
	if _, err := s.JobState(ctx, "j"); !errors.Is(err, anarchon.ErrNotSupported) {
		t.Errorf("JobState = %v, want ErrNotSupported", err)
	}
	if _, err := s.Trigger(ctx, "j", "k"); !errors.Is(err, anarchon.ErrNotSupported) {
		t.Errorf("Trigger = %v, want ErrNotSupported", err)
	}
	if err := s.Every("pof", time.Second, h, &anarchon.JobOptions{PauseOnFailure: 3}); !isCode(err, anarchon.CodeNeedsJobControl) {
		t.Errorf("PauseOnFailure without JobControl = %v, want CodeNeedsJobControl", err)
	}
	if rec, err := s.RunNow(ctx, "j"); err != nil || rec.Status != anarchon.StatusSuccess {
		t.Errorf("RunNow = %+v, %v", rec, err)
	}
}

// Pause and Trigger refuse a job this scheduler does not have; a trigger
// no instance runs ends with ctx, and the error names the job, the key and
// the wait.
func TestControlUnknownJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := membackend.New(nil)
		s := newSched(t, b, "cli", nil)
		h := func(context.Context, *anarchon.Run) error { return nil }
		if err := s.Every("known", time.Minute, h, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pause(context.Background(), "nope", anarchon.PauseOptions{}); !errors.Is(err, anarchon.ErrNotFound) {
			t.Errorf("Pause unknown = %v, want ErrNotFound", err)
		}
		if _, err := s.Trigger(context.Background(), "nope", "k"); !errors.Is(err, anarchon.ErrNotFound) {
			t.Errorf("Trigger unknown = %v, want ErrNotFound", err)
		}
		// "known" is on this (unstarted) scheduler only: nobody runs it.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := s.Trigger(ctx, "known", "k1")
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `job "known"`) ||
			!strings.Contains(err.Error(), `"k1"`) || !strings.Contains(err.Error(), "5s") ||
			!strings.Contains(err.Error(), "pending: no instance that has the job took it yet") {
			t.Errorf("Trigger nobody runs = %v, want a deadline error naming the job, key and wait", err)
		}
	})
}

// PauseOnFailure: after N failed runs in a row across instances, the job
// pauses itself with the reason, and no slot runs after that.
func TestPauseOnFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := membackend.New(nil)
		var runs atomic.Int32
		fail := func(context.Context, *anarchon.Run) error { runs.Add(1); return errors.New("exit status 2") }
		var ss []*anarchon.Scheduler
		for i := range 2 {
			s := newSched(t, b, fmt.Sprintf("inst-%d", i), nil)
			if err := s.Every("flaky", time.Second, fail, &anarchon.JobOptions{PauseOnFailure: 3}); err != nil {
				t.Fatal(err)
			}
			mustStart(t, s)
			ss = append(ss, s)
		}
		time.Sleep(10 * time.Second)
		stopAll(t, ss...)
		if n := runs.Load(); n != 3 {
			t.Errorf("%d runs, want 3 before the job paused itself", n)
		}
		st, err := ss[0].JobState(context.Background(), "flaky")
		if err != nil || !st.Paused || !strings.Contains(st.Reason, "3 failed runs in a row") || !strings.Contains(st.Reason, "exit status 2") {
			t.Errorf("state %+v, %v; want paused with the count and the last error", st, err)
		}
		hist, _ := ss[0].History(context.Background(), "flaky", 0)
		paused := 0
		for _, r := range hist {
			if r.Status == anarchon.StatusPaused {
				paused++
			}
		}
		if paused < 5 {
			t.Errorf("%d paused records, want the slots after the pause recorded paused", paused)
		}
	})
}

// Resume with CatchUp runs the job once in place of the paused slots,
// however many instances resume the same pause; without it nothing is
// replayed.
func TestResumeCatchUp(t *testing.T) {
	for _, catchUp := range []bool{false, true} {
		t.Run(fmt.Sprint("catchup=", catchUp), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := membackend.New(nil)
				var manual, scheduled atomic.Int32
				h := func(_ context.Context, r *anarchon.Run) error {
					if r.Manual {
						manual.Add(1)
					} else {
						scheduled.Add(1)
					}
					return nil
				}
				var ss []*anarchon.Scheduler
				for i := range 3 {
					s := newSched(t, b, fmt.Sprintf("inst-%d", i), nil)
					if err := s.Every("hourly", time.Hour, h, nil); err != nil {
						t.Fatal(err)
					}
					mustStart(t, s)
					ss = append(ss, s)
				}
				if _, err := ss[0].Pause(context.Background(), "hourly", anarchon.PauseOptions{Reason: "db migration"}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(3*time.Hour + 30*time.Minute) // slots 1:00, 2:00, 3:00 paused
				paused, err := ss[0].JobState(context.Background(), "hourly")
				if err != nil {
					t.Fatal(err)
				}
				for i, s := range ss {
					if _, err := s.Resume(context.Background(), "hourly", anarchon.ResumeOptions{CatchUp: catchUp, By: fmt.Sprint("op-", i)}); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(10 * time.Second)
				if catchUp {
					// The catch-up request is the first resume's, by its By.
					rec, err := ss[1].WaitTrigger(context.Background(), "hourly", anarchon.CatchUpKey(paused))
					if err != nil || rec.By != "op-0" {
						t.Errorf("catch-up request %+v, %v; want it by op-0", rec, err)
					}
				}
				stopAll(t, ss...)
				want := int32(0)
				if catchUp {
					want = 1
				}
				if scheduled.Load() != 0 || manual.Load() != want {
					t.Errorf("scheduled %d, manual %d; want 0 and %d", scheduled.Load(), manual.Load(), want)
				}
			})
		})
	}
}

// failingTriggers is a memory store whose trigger requests fail, as one
// that is down between a resume and its catch-up's request.
type failingTriggers struct{ *membackend.Backend }

func (failingTriggers) RequestTrigger(context.Context, anarchon.TriggerInput) (anarchon.TriggerRecord, error) {
	return anarchon.TriggerRecord{}, errors.New("store unreachable")
}

// Resume with CatchUp names the key of the catch-up run it requested in
// the state it returns: the key of the pause it resumed (not of an
// earlier one), also when the request failed after the resume was stored;
// a pause that covered no slot of the job is resumed with no run
// requested; a job not paused is left as it is and no key is named; a
// resume without CatchUp names none.
func TestResumeCatchUpKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := membackend.New(nil)
		s := newSched(t, mem, "a", nil)
		h := func(context.Context, *anarchon.Run) error { return nil }
		if err := s.Every("j", time.Hour, h, nil); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		pending := func() int {
			t.Helper()
			p, err := mem.PendingTriggers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return len(p)
		}
		// A first pause, resumed without catch-up.
		first, err := s.Pause(ctx, "j", anarchon.PauseOptions{By: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		if st, err := s.Resume(ctx, "j", anarchon.ResumeOptions{By: "ops"}); err != nil || st.CatchUpKey != "" {
			t.Errorf("Resume without CatchUp = %+v, %v; want no catch-up key", st, err)
		}
		// A pause of a minute, within the hour between two slots: resumed,
		// nothing missed, nothing requested.
		time.Sleep(time.Minute)
		if _, err := s.Pause(ctx, "j", anarchon.PauseOptions{By: "ops"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		st, err := s.Resume(ctx, "j", anarchon.ResumeOptions{By: "op-0", CatchUp: true})
		if err != nil || st.Paused || !st.Resumed || st.CatchUpKey != "" || pending() != 0 {
			t.Fatalf("Resume with CatchUp of a pause that covered no slot = %+v, %v, %d requests; want resumed, no key, none", st, err, pending())
		}
		// A pause across the next slot: the key is this pause's.
		second, err := s.Pause(ctx, "j", anarchon.PauseOptions{By: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		st, err = s.Resume(ctx, "j", anarchon.ResumeOptions{By: "op-1", CatchUp: true})
		want := anarchon.CatchUpKey(second)
		if err != nil || st.Paused || !st.Resumed || st.By != "op-1" || st.CatchUpKey != want || want == anarchon.CatchUpKey(first) {
			t.Fatalf("Resume with CatchUp = %+v, %v; want resumed by op-1, key %s", st, err, want)
		}
		if rec, err := mem.LookupTrigger(ctx, "j", want); err != nil || rec.By != "op-1" || rec.State != anarchon.TriggerPending {
			t.Errorf("catch-up request %s: %+v, %v; want pending, by op-1", want, rec, err)
		}
		// Again, on the job now resumed: the state is left as it is.
		time.Sleep(time.Minute)
		again, err := s.Resume(ctx, "j", anarchon.ResumeOptions{By: "op-2", CatchUp: true})
		if err != nil || again.Resumed || again.CatchUpKey != "" || again.By != "op-1" || !again.At.Equal(st.At) {
			t.Errorf("Resume with CatchUp of a job not paused = %+v, %v; want op-1's resume unchanged, no key", again, err)
		}
		if n := pending(); n != 1 {
			t.Errorf("%d pending requests; want only %s", n, want)
		}

		// Half done: the resume is stored, the request fails. The key
		// comes with the error.
		s2 := newSched(t, failingTriggers{mem}, "b", nil)
		if err := s2.Every("j", time.Hour, h, nil); err != nil {
			t.Fatal(err)
		}
		third, err := s2.Pause(ctx, "j", anarchon.PauseOptions{By: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		st, err = s2.Resume(ctx, "j", anarchon.ResumeOptions{By: "op-3", CatchUp: true})
		if err == nil || !strings.Contains(err.Error(), "store unreachable") || st.Paused || st.CatchUpKey != anarchon.CatchUpKey(third) {
			t.Errorf("Resume whose request failed = %+v, %v; want resumed, key %s, the request's error", st, err, anarchon.CatchUpKey(third))
		}
	})
}

// A RunNow's failure is a run like any other for PauseOnFailure: the one
// that completes the row pauses the job, as a triggered run's does.
func TestRunNowPauseOnFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSched(t, membackend.New(nil), "cli", nil)
		fail := func(context.Context, *anarchon.Run) error { return errors.New("exit status 1") }
		if err := s.Every("j", time.Hour, fail, &anarchon.JobOptions{PauseOnFailure: 2}); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for i := range 2 {
			time.Sleep(time.Second) // each run its own slot
			if rec, err := s.RunNow(ctx, "j"); err != nil || rec.Status != anarchon.StatusError {
				t.Fatalf("RunNow %d = %+v, %v; want a failed run", i, rec, err)
			}
			st, err := s.JobState(ctx, "j")
			if err != nil {
				t.Fatal(err)
			}
			if want := i == 1; st.Paused != want {
				t.Fatalf("after %d failed runs paused = %v, want %v", i+1, st.Paused, want)
			}
			if st.Paused && !strings.Contains(st.Reason, "2 failed runs in a row") {
				t.Errorf("reason %q, want the count", st.Reason)
			}
		}
	})
}

// With a Watcher, a started instance runs a trigger request as soon as it
// is made, not at its next poll (here an hour away).
func TestTriggerWatchRunsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := membackend.New(nil)
		s := newSched(t, b, "i0", &anarchon.Options{PollInterval: time.Hour})
		var runs atomic.Int32
		h := func(context.Context, *anarchon.Run) error { runs.Add(1); return nil }
		if err := s.Every("j", 24*time.Hour, h, nil); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		defer stopAll(t, s)
		synctest.Wait()
		start := time.Now()
		if _, err := s.RequestTrigger(context.Background(), "j", "k"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // every goroutine is idle again: the request was run, or waits for a poll
		rec, err := b.LookupTrigger(context.Background(), "j", "k")
		if err != nil || rec.State != anarchon.TriggerDone || runs.Load() != 1 {
			t.Errorf("after the request: %+v, %v, %d runs; want done, run once", rec, err, runs.Load())
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the run came %v after the request, want at once", d)
		}
	})
}

// A manual run's result is stored however long its handler ran, and a
// RunNow whose context ends while its handler runs still stores the
// result (the handler sees the end): no manual run's record is left
// running by a store call that timed out with the run, or by a caller that
// gave up (SPEC §12).
func TestManualRunOutlivesStoreTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ctxStore{membackend.New(nil)}
		s := newSched(t, b, "i0", nil)
		long := func(ctx context.Context, _ *anarchon.Run) error {
			select {
			case <-time.After(2 * time.Minute):
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		if err := s.Every("long", 24*time.Hour, long, nil); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		defer stopAll(t, s)
		if _, err := s.RequestTrigger(context.Background(), "long", "k"); err != nil {
			t.Fatal(err)
		}
		// a wait that gives up while the run goes on says where it runs
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		if _, err := s.WaitTrigger(sctx, "long", "k"); err == nil || !strings.Contains(err.Error(), "running on i0 since 2000-01-01T00:00:00.000Z") {
			t.Errorf("a wait shorter than the run = %v, want it to say where and since when the run goes on", err)
		}
		tctx, tcancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer tcancel()
		rec, err := s.WaitTrigger(tctx, "long", "k")
		if err != nil || rec.State != anarchon.TriggerDone || rec.Status != anarchon.StatusSuccess {
			t.Errorf("Trigger of a 2-minute run = %+v, %v; want done, success", rec, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		got, err := s.RunNow(ctx, "long")
		if err != nil || got.Status != anarchon.StatusError || !strings.Contains(got.Error, "deadline") {
			t.Errorf("RunNow cut short by its context = %+v, %v; want its record, status error", got, err)
		}
		hist, err := s.History(context.Background(), "long", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range hist {
			if r.Status == anarchon.StatusRunning {
				t.Errorf("slot %v is still running in the history: %+v", r.Slot, r)
			}
		}
		if len(hist) != 2 {
			t.Errorf("%d records, want 2: %+v", len(hist), hist)
		}
	})
}

// ctxStore is the memory store with a network store's answer to a call
// whose context has ended: the context's error, and nothing written.
type ctxStore struct{ *membackend.Backend }

func (c ctxStore) SaveResult(ctx context.Context, in anarchon.SaveResultInput) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.Backend.SaveResult(ctx, in)
}

func (c ctxStore) FinishTrigger(ctx context.Context, in anarchon.FinishTriggerInput) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.Backend.FinishTrigger(ctx, in)
}

// Stop's deadline settles a triggered run whose handler has not returned:
// its result is stored (an error naming the stop) and its request
// finished before Stop returns, as a plain run's is, and the handler that
// returns later stores nothing (SPEC §3, §12). Before, the run's own
// goroutine stored them after Stop, if the process was still there.
func TestStopSettlesTriggeredRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := membackend.New(nil)
		s := newSched(t, b, "i0", nil)
		started, release := make(chan struct{}), make(chan struct{})
		var once atomic.Bool
		stubborn := func(context.Context, *anarchon.Run) error {
			if once.CompareAndSwap(false, true) {
				close(started)
			}
			<-release // ignores its context
			return nil
		}
		if err := s.Every("stubborn", 24*time.Hour, stubborn, nil); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		ctx := context.Background()
		if _, err := s.RequestTrigger(ctx, "stubborn", "k"); err != nil {
			t.Fatal(err)
		}
		<-started
		stopCtx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := s.Stop(stopCtx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Stop = %v, want its deadline", err)
		}
		check := func(when string) {
			t.Helper()
			rec, err := b.LookupTrigger(ctx, "stubborn", "k")
			if err != nil || rec.State != anarchon.TriggerDone || rec.Status != anarchon.StatusError || !strings.Contains(rec.Error, "scheduler stopped") {
				t.Errorf("%s: request %+v, %v; want done, error naming the stop", when, rec, err)
			}
			hist, err := s.History(ctx, "stubborn", 0)
			if err != nil || len(hist) != 1 || hist[0].Status != anarchon.StatusError || !strings.Contains(hist[0].Error, "scheduler stopped") || !hist[0].Manual {
				t.Errorf("%s: history %+v, %v; want one manual run, error naming the stop", when, hist, err)
			}
		}
		check("after Stop")
		close(release) // the handler returns now: it stores nothing
		synctest.Wait()
		check("after the handler returned")
	})
}

// A trigger's wait ends, with ErrTriggerRunnerGone, once the instance
// running the request is gone by the registry: its record dead, or started
// again after it took the request; the request is left running, and the
// instance, if it lives, still finishes it (SPEC §12). Before, the wait
// lasted until its context ended. While the instance renews its record,
// the wait goes on. CancelTrigger answers the same way.
func TestTriggerRunnerGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := membackend.New(nil)
		sr := &failingRegistry{Backend: b}
		const ttl = 3 * time.Second
		r := newSched(t, sr, "r", &anarchon.Options{RegistryTTL: ttl})
		started, release := make(chan struct{}, 2), make(chan struct{})
		stuck := func(context.Context, *anarchon.Run) error {
			started <- struct{}{}
			<-release // ignores its context
			return nil
		}
		w := newSched(t, b, "w", nil) // the waiter: has the job, not started
		for _, s := range []*anarchon.Scheduler{r, w} {
			if err := s.Every("stuck", 24*time.Hour, stuck, nil); err != nil {
				t.Fatal(err)
			}
		}
		mustStart(t, r)
		var freed sync.Once
		free := func() { freed.Do(func() { close(release) }) }
		defer func() { free(); stopAll(t, r) }()
		ctx := context.Background()
		if _, err := w.RequestTrigger(ctx, "stuck", "k"); err != nil {
			t.Fatal(err)
		}
		<-started

		// r renews its record: the wait lasts until its context ends.
		wctx, cancel := context.WithTimeout(ctx, 4*ttl)
		_, err := w.WaitTrigger(wctx, "stuck", "k")
		cancel()
		// The error wraps the deadline, and its text does not repeat it
		// after "not done after waiting".
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, anarchon.ErrTriggerRunnerGone) ||
			!strings.Contains(err.Error(), "not done after waiting") || strings.Contains(err.Error(), "deadline exceeded") {
			t.Fatalf("wait while r lives = %v, want its deadline", err)
		}
		// A wait canceled otherwise names the cause.
		cctx, ccancel := context.WithCancelCause(ctx)
		ccancel(errors.New("operator gave up"))
		if _, err := w.WaitTrigger(cctx, "stuck", "k"); !strings.HasSuffix(err.Error(), ": operator gave up") {
			t.Fatalf("canceled wait = %v, want it to end with its cause", err)
		}
		if rec, err := w.CancelTrigger(ctx, "stuck", "k", ""); err != nil || rec.State != anarchon.TriggerRunning {
			t.Fatalf("cancel while r lives = %+v, %v; want it running, no error", rec, err)
		}

		// r's renewals fail: its record is dead ttl later, and the wait
		// says so long before its deadline.
		sr.fail.Store(true)
		t0 := time.Now()
		wctx, cancel = context.WithTimeout(ctx, time.Hour)
		rec, err := w.WaitTrigger(wctx, "stuck", "k")
		cancel()
		if !errors.Is(err, anarchon.ErrTriggerRunnerGone) || !strings.Contains(err.Error(), "registry record is dead") ||
			rec.State != anarchon.TriggerRunning || rec.InstanceID != "r" || time.Since(t0) > 2*ttl {
			t.Fatalf("wait after r went silent = %+v, %v after %v; want running on r, ErrTriggerRunnerGone naming the dead record, within %v", rec, err, time.Since(t0), 2*ttl)
		}
		// A cancel is answered the same way, and cancels nothing.
		if rec, err := w.CancelTrigger(ctx, "stuck", "k", ""); !errors.Is(err, anarchon.ErrTriggerRunnerGone) ||
			!strings.Contains(err.Error(), "registry record is dead") || rec.State != anarchon.TriggerRunning || rec.InstanceID != "r" {
			t.Fatalf("cancel after r went silent = %+v, %v; want running on r, ErrTriggerRunnerGone", rec, err)
		}

		// Another process with r's ID starts: its record is live, but it
		// started after the claim, so the run is not its.
		info := anarchon.InstanceInfo{ID: "r", StartedAt: time.Now()}
		if err := b.RegisterInstance(ctx, info, time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := w.WaitTrigger(ctx, "stuck", "k"); !errors.Is(err, anarchon.ErrTriggerRunnerGone) || !strings.Contains(err.Error(), "started again") {
			t.Fatalf("wait after r restarted = %v, want ErrTriggerRunnerGone naming the restart", err)
		}

		// The request was left as it was: r, alive after all, finishes it.
		free()
		synctest.Wait()
		got, err := w.WaitTrigger(ctx, "stuck", "k")
		if err != nil || got.State != anarchon.TriggerDone || got.Status != anarchon.StatusSuccess {
			t.Errorf("after r's run returned: %+v, %v; want done, success", got, err)
		}
	})
}

// A canceled request never runs, on an instance started after the cancel
// as on one running; a wait for it ends with its record, canceled; a
// cancel of a request that ran answers its record, unchanged (SPEC §12).
func TestCancelTrigger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := membackend.New(nil)
		s := newSched(t, b, "op", nil)
		var ran atomic.Int64
		if err := s.Every("j", 24*time.Hour, func(context.Context, *anarchon.Run) error { ran.Add(1); return nil }, nil); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := s.RequestTrigger(ctx, "j", "k"); err != nil {
			t.Fatal(err)
		}
		rec, err := s.CancelTrigger(ctx, "j", "k", "")
		if err != nil || rec.State != anarchon.TriggerDone || rec.Status != anarchon.StatusCanceled || rec.Error != anarchon.CanceledError("op") {
			t.Fatalf("CancelTrigger = %+v, %v; want done, canceled by op", rec, err)
		}
		mustStart(t, s)
		defer stopAll(t, s)
		time.Sleep(time.Minute) // many polls
		got, err := s.WaitTrigger(ctx, "j", "k")
		if err != nil || got.Status != anarchon.StatusCanceled || ran.Load() != 0 {
			t.Errorf("after a minute: %+v, %v, %d runs; want canceled, none", got, err, ran.Load())
		}
		done, err := s.Trigger(ctx, "j", "k2")
		if err != nil || done.Status != anarchon.StatusSuccess {
			t.Fatalf("Trigger = %+v, %v", done, err)
		}
		if rec, err := s.CancelTrigger(ctx, "j", "k2", ""); err != nil || rec.Status != anarchon.StatusSuccess || rec.State != anarchon.TriggerDone {
			t.Errorf("cancel of a request that ran = %+v, %v; want its record", rec, err)
		}
		if _, err := s.CancelTrigger(ctx, "j", "nope", ""); !errors.Is(err, anarchon.ErrNotFound) {
			t.Errorf("cancel of an unknown request = %v, want ErrNotFound", err)
		}
	})
}

// A trigger still pending when its wait ends says what the registry tells
// of the live instances: none of them lists the job, or they run another
// job set (whose names they publish only while sets differ) that may lack
// it; nothing more when one of them has the job.
func TestTriggerPendingSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := membackend.New(nil)
		const ttl = 3 * time.Second
		nop := func(context.Context, *anarchon.Run) error { return nil }
		r := newSched(t, b, "r", &anarchon.Options{RegistryTTL: ttl})
		if err := r.Every("x", time.Hour, nop, nil); err != nil {
			t.Fatal(err)
		}
		mustStart(t, r)
		defer stopAll(t, r)
		w := newSched(t, b, "w", nil) // the waiter: not started, has y too
		for _, j := range []string{"x", "y"} {
			if err := w.Every(j, time.Hour, nop, nil); err != nil {
				t.Fatal(err)
			}
		}
		wait := func(key string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err := w.Trigger(ctx, "y", key)
			return err
		}
		// r published its job list at Start: it has no y.
		if err := wait("k1"); err == nil || !strings.Contains(err.Error(), `no live instance (r) has job "y" in its job set`) {
			t.Errorf("wait with r's list published = %v", err)
		}
		// Alone, r leaves its list out after a renewal: only the sets'
		// fingerprints differ.
		time.Sleep(2 * ttl)
		if err := wait("k2"); err == nil || !strings.Contains(err.Error(), `the live instances (r) run another job set than this scheduler`) ||
			!strings.Contains(err.Error(), `job "y" may not be among them`) {
			t.Errorf("wait with r's list left out = %v", err)
		}
	})
}
