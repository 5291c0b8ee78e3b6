package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// recorder collects durations from many goroutines without locks.
type recorder struct {
	buf []time.Duration
	n   atomic.Int64
}

func newRecorder(capacity int) *recorder { return &recorder{buf: make([]time.Duration, capacity)} }

func (r *recorder) add(d time.Duration) {
	if i := r.n.Add(1) - 1; i < int64(len(r.buf)) {
		r.buf[i] = d
	}
}

func (r *recorder) values() []time.Duration {
	n := min(int(r.n.Load()), len(r.buf))
	return r.buf[:n]
}

// TimerLateness is Go's own lateness for jobs timers that each wait, in
// their own goroutine, for the next whole interval boundary (the deadlines
// a scheduler's slots have) for d: how long after the deadline the
// goroutine runs.
func TimerLateness(jobs int, interval, d time.Duration) Summary {
	rec := newRecorder(jobs * (int(d/interval) + 2))
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next := time.Now().Truncate(interval).Add(interval)
				if next.After(stop) {
					return
				}
				t := time.NewTimer(time.Until(next))
				<-t.C
				rec.add(time.Since(next))
			}
		}()
	}
	wg.Wait()
	return Summarize(rec.values())
}

// TimingMode chooses the run path of the scheduled jobs.
type TimingMode string

// Run paths.
const (
	ModePlain TimingMode = "plain" // NoLease: plain claims
	ModeLease TimingMode = "lease" // the default on a store with a RunStore
	ModeNull  TimingMode = "null"  // plain claims on NullBackend: the scheduler alone
)

// SchedulerLateness runs jobs interval jobs on one scheduler over the
// memory store with jitter 0 for d and returns how late handlers start
// after their slot (time.Now at handler start minus Run.Slot), skipping
// the first two slots (start-up).
func SchedulerLateness(ctx context.Context, jobs int, interval, d time.Duration, mode TimingMode) (Summary, error) {
	var be anarchon.Backend = NullBackend{}
	if mode != ModeNull {
		mem := membackend.New(&membackend.Options{DedupeWindow: 10 * time.Minute})
		defer mem.Close(context.Background())
		be = mem
	}
	s := anarchon.New(be, &anarchon.Options{InstanceID: "timing", Logger: quietLogger()})
	rec := newRecorder(jobs * (int(d/interval) + 2))
	begin := time.Now().Add(2 * interval)
	h := func(_ context.Context, run *anarchon.Run) error {
		now := time.Now()
		if run.Slot.After(begin) {
			rec.add(now.Sub(run.Slot))
		}
		return nil
	}
	opts := &anarchon.JobOptions{NoLease: mode == ModePlain, HistorySize: 1}
	for i := range jobs {
		if err := s.Every(fmt.Sprintf("t%06d", i), interval, h, opts); err != nil {
			return Summary{}, err
		}
	}
	if err := s.Start(ctx); err != nil {
		return Summary{}, err
	}
	time.Sleep(d + 2*interval)
	sctx, cancel := deadline(10 * time.Second)
	defer cancel()
	if err := s.Stop(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return Summary{}, err
	}
	// A Stop that timed out had handlers still queued behind the store:
	// the samples taken are still the lateness of the ones that started.
	return Summarize(rec.values()), nil
}
