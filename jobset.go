package anarchon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/anarchon/anarchon/internal/runner"
)

// controlTimeout bounds the store calls of a job-set change made while
// the scheduler runs (PrepareJob in Add and Update), and each store call
// that must be made whatever ended its caller's context (storeCallCtx).
const controlTimeout = 30 * time.Second

// storeCallCtx is the context of one such call: ctx's values, not its end
// or deadline, and controlTimeout of its own.
func storeCallCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), controlTimeout)
}

// enqueue puts a started scheduler's job in the queue: in old's place if
// old is set (Update), else as a new job, which then catches up and adopts
// its unfinished runs when leased, as at Start.
func (s *Scheduler) enqueue(ctx context.Context, j *job, old *job) {
	j.entry = runner.Entry[*job]{Value: j, Next: j.nextSlot, Delay: j.jitter, MaxDelay: j.opt.Jitter, MaxLate: j.opt.MaxLate}
	now := s.now()
	if j.leased {
		s.startWatch()
	}
	if old != nil {
		s.queue.Replace(&old.entry, &j.entry, now)
		return
	}
	s.queue.Add(&j.entry, now)
	s.startOnce(j, now)
	if !j.leased {
		return
	}
	if j.opt.CatchUp.Window > 0 && j.at.IsZero() {
		s.catchUp(j, now)
	}
	s.adoptActive(ctx, j)
}

// startWatch starts the goroutine that feeds the store's run events to
// standing-by attempts, once, when the backend has a Watcher.
func (s *Scheduler) startWatch() {
	if s.watcher == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watching || s.state != stateStarted {
		return
	}
	s.watching = true
	s.bg.Add(1)
	go func() { defer s.bg.Done(); s.watchLoop(s.loopCtx) }()
}

// RemoveOptions say what Remove does with a job's running runs. A nil
// *RemoveOptions means the zero value.
type RemoveOptions struct {
	// Cancel cancels the handlers of the job's runs still going on this
	// instance, with Cause as their context's cause; their results are
	// stored as usual. Defaults to false: running runs finish.
	Cancel bool
	// Cause is the cause given to cancelled handlers. Defaults to
	// ErrRemoved.
	Cause error
}

// Remove unregisters the named job, from any goroutine, before or after
// Start. No slot of it is claimed on this instance after Remove returns
// (a slot already being claimed may still run); its runs in progress
// finish, or are cancelled if opts.Cancel is set. It calls no store
// method. Other instances that still have the job keep running it: remove
// it on each (a rolling change). It returns ErrNotFound for a job that is
// not registered.
func (s *Scheduler) Remove(name string, opts *RemoveOptions) error {
	var o RemoveOptions
	if opts != nil {
		o = *opts
	}
	if o.Cause == nil {
		o.Cause = ErrRemoved
	}
	s.cmu.Lock()
	defer s.cmu.Unlock()
	s.mu.Lock()
	j := s.jobs[name]
	if j == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	delete(s.jobs, name)
	s.dropOrder(j)
	started := s.state == stateStarted
	s.mu.Unlock()
	j.removed.Store(true)
	if !started {
		return nil
	}
	s.queue.Remove(&j.entry)
	n := 0
	if o.Cancel {
		n = s.run.Cancel(name, o.Cause)
	}
	s.refreshRegistration()
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "job removed", slog.String("job", name), slog.Int("cancelled", n))
	return nil
}

// dropOrder removes j from s.order. s.mu is held.
func (s *Scheduler) dropOrder(j *job) {
	for i, o := range s.order {
		if o == j {
			s.order = append(s.order[:i:i], s.order[i+1:]...)
			return
		}
	}
}

// Update replaces the registered job of the same name with j (its
// schedule, handler or options), from any goroutine, before or after
// Start. It returns ErrNotFound when no job has the name, and a
// *ValidationError for bad input, keeping the old job.
//
// While the scheduler runs, the change takes effect at once: the old
// schedule's slots that have not come due are dropped and the new
// schedule's run from the earlier of now and the old schedule's pending
// slot (one its jitter still delays). A slot both schedules contain runs
// once, and no slot runs twice across versions, on this instance or
// across instances that switch at different times (a rolling change):
// the claim is keyed by the job's name and slot, whatever the schedule.
// Runs in progress finish under the old version. A change between plain
// and leased claims (NoLease, or leasing options on a backend with a
// RunStore) is the exception: the two kinds of claim do not see each
// other, so during a rolling change a slot could run once of each kind;
// stop the job on every instance first (Remove, then Add).
func (s *Scheduler) Update(j Job) error {
	jb, err := s.compile(j)
	if err != nil {
		return err
	}
	s.cmu.Lock()
	defer s.cmu.Unlock()
	s.mu.Lock()
	old := s.jobs[j.Name]
	state := s.state
	s.mu.Unlock()
	if old == nil {
		return fmt.Errorf("%w: %q", ErrNotFound, j.Name)
	}
	if state == stateStarted && jb.opt.HistorySize != old.opt.HistorySize {
		ctx, cancel := storeCallCtx(s.loopCtx)
		err := s.backend.PrepareJob(ctx, PrepareJobInput{Job: jb.name, HistorySize: jb.opt.HistorySize})
		cancel()
		if err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.jobs[j.Name] = jb
	for i, o := range s.order {
		if o == old {
			s.order[i] = jb
		}
	}
	started := s.state == stateStarted
	s.mu.Unlock()
	old.removed.Store(true)
	if !started {
		return nil
	}
	s.enqueue(context.WithoutCancel(s.loopCtx), jb, old)
	s.refreshRegistration()
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "job changed",
		slog.String("job", jb.name), slog.String("schedule", jb.sched), slog.String("was", old.sched))
	return nil
}
