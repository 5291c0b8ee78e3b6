package anarchon_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// runSlowToStop starts a scheduler on a memory store with one plain
// job, "job", and returns once its handler runs. Once its context ends,
// the handler cleans up for 5 s (past Stop's return) before it closes
// returned and returns the context's cause. Call it inside a bubble.
func runSlowToStop(t *testing.T) (store *membackend.Backend, s *anarchon.Scheduler, returned chan struct{}) {
	t.Helper()
	store = membackend.New(nil)
	s = newSched(t, store, "i0", nil)
	started := make(chan struct{})
	returned = make(chan struct{})
	h := func(ctx context.Context, run *anarchon.Run) error {
		close(started)
		<-ctx.Done()
		time.Sleep(5 * time.Second)
		defer close(returned)
		return context.Cause(ctx)
	}
	if err := s.Every("job", time.Hour, h, &anarchon.JobOptions{NoLease: true}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, s)
	<-started
	return store, s, returned
}

// A plain run that Stop's deadline interrupts is recorded before Stop
// returns, as an error naming the stop, and keeps that record when its
// handler returns later: no record says running after Stop, even if the
// caller closes the backend at once.
func TestStopRecordsInterruptedPlainRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, s, returned := runSlowToStop(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := s.Stop(ctx); err == nil {
			t.Fatal("Stop returned nil; want its context's error (it cancelled a handler)")
		}
		check := func(when string) {
			t.Helper()
			recs, err := store.History(context.Background(), "job", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 {
				t.Fatalf("%s: %d records, want 1: %+v", when, len(recs), recs)
			}
			r := recs[0]
			if r.Status != anarchon.StatusError || !strings.HasPrefix(r.Error, "interrupted: the scheduler stopped") || r.StartedAt.IsZero() || r.FinishedAt.IsZero() {
				t.Fatalf("%s: record %+v; want an error naming the stop, with start and end", when, r)
			}
		}
		check("when Stop returned")
		<-returned
		synctest.Wait()
		check("after the handler returned")
	})
}

// A handler that returns its context's error when Stop hands its run over
// ends with an EventRunEnd whose Err wraps both that error and the cause,
// ErrStopped, as the stored result's text says.
func TestRunEndCarriesTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var ends []anarchon.Event
		s := newSched(t, membackend.New(nil), "a", &anarchon.Options{OnEvent: func(e anarchon.Event) {
			if e.Kind == anarchon.EventRunEnd {
				mu.Lock()
				ends = append(ends, e)
				mu.Unlock()
			}
		}})
		started := make(chan struct{})
		h := func(ctx context.Context, run *anarchon.Run) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		}
		if err := s.Every("job", time.Minute, h, nil); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		<-started
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // no time to finish: the run is handed over at once
		if err := s.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Stop: %v", err)
		}
		// Stop's context had ended, so it returned without waiting for the
		// handler; the run's end comes once the handler has returned.
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(ends) != 1 || !errors.Is(ends[0].Err, anarchon.ErrStopped) || !errors.Is(ends[0].Err, context.Canceled) {
			t.Fatalf("run ends %+v, want one whose Err is both context.Canceled and ErrStopped", ends)
		}
		if !strings.Contains(ends[0].Err.Error(), "(cause: "+anarchon.ErrStopped.Error()+")") {
			t.Errorf("Err %q, want the cause in its text", ends[0].Err)
		}
	})
}

// A handler that returns its context's error when JobOptions.Timeout ends
// it ends with an EventRunEnd whose Err is both context.DeadlineExceeded
// and ErrTimeout.
func TestRunEndCarriesTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ends := make(chan anarchon.Event, 1)
		s := newSched(t, membackend.New(nil), "a", &anarchon.Options{OnEvent: func(e anarchon.Event) {
			if e.Kind == anarchon.EventRunEnd {
				select {
				case ends <- e:
				default:
				}
			}
		}})
		h := func(ctx context.Context, run *anarchon.Run) error {
			<-ctx.Done()
			return ctx.Err()
		}
		if err := s.Every("job", time.Minute, h, &anarchon.JobOptions{Timeout: time.Second}); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		e := <-ends
		stopAll(t, s)
		if !errors.Is(e.Err, anarchon.ErrTimeout) || !errors.Is(e.Err, context.DeadlineExceeded) {
			t.Fatalf("run end %+v, want an Err that is both context.DeadlineExceeded and ErrTimeout", e)
		}
	})
}

// Stop called by several goroutines at once stops once, and none returns
// before the interrupted run is recorded: a later call waits for the
// first. Before, a concurrent Stop returned nil at once, with the run
// still recorded running. Start after Stop is ErrStopped.
func TestConcurrentStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, s, returned := runSlowToStop(t)
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				err := s.Stop(ctx)
				recs, herr := store.History(context.Background(), "job", 0)
				if !errors.Is(err, context.DeadlineExceeded) || herr != nil || len(recs) != 1 || recs[0].Status != anarchon.StatusError {
					t.Errorf("Stop #%d returned %v; history then %+v, %v; want its deadline, and the run recorded as an error", i, err, recs, herr)
				}
			})
		}
		wg.Wait()
		// A later Stop, its ctx ended already, returns what the first did.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := s.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Stop after Stop returned %v; want the first one's deadline", err)
		}
		if err := s.Start(context.Background()); !errors.Is(err, anarchon.ErrStopped) {
			t.Errorf("Start after Stop = %v, want ErrStopped", err)
		}
		<-returned
		// RunNow after Stop runs nothing: the history keeps its one record.
		if rec, err := s.RunNow(context.Background(), "job"); !errors.Is(err, anarchon.ErrStopped) {
			t.Errorf("RunNow after Stop = %+v, %v; want ErrStopped", rec, err)
		}
		if recs, err := store.History(context.Background(), "job", 0); err != nil || len(recs) != 1 {
			t.Errorf("history after RunNow after Stop: %d records, %v; want 1", len(recs), err)
		}
	})
}
