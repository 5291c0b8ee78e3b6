package anarchon

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultBackfillMaxSlots is how many slots a backfill may run without
// BackfillOptions.Confirm.
const DefaultBackfillMaxSlots = 1_000

// BackfillOptions configure [Scheduler.Backfill]. A nil *BackfillOptions,
// and each zero field, means the default stated on the field.
type BackfillOptions struct {
	// Concurrency is how many slots this caller runs at once. Defaults to
	// 1: one slot after another, oldest first.
	Concurrency int
	// MaxSlots is the largest range, in slots, run without Confirm; a
	// larger one is refused with CodeTooManySlots, so that a typo in a date
	// does not run a year of a minutely job. Defaults to
	// DefaultBackfillMaxSlots (1,000).
	MaxSlots int
	// Confirm runs a range of more than MaxSlots slots.
	Confirm bool
	// OnProgress, if set, is called after each slot, from the goroutine
	// that handled it (calls may be concurrent with Concurrency > 1).
	OnProgress func(BackfillProgress)
}

// BackfillProgress reports one slot of a backfill.
type BackfillProgress struct {
	Job    string
	Slot   time.Time
	Ran    bool   // this caller ran the slot (Status is its result)
	Status Status // Ran: how the run ended
	Done   int    // slots handled so far, this one included
	Total  int    // slots in the range
}

// BackfillResult sums up a backfill.
type BackfillResult struct {
	Total   int // slots in [from, to)
	Ran     int // slots this caller ran
	Skipped int // slots already settled, or run by another caller or instance
}

// Backfill runs every slot of the named job in [from, to) that has not
// run, exactly once across the cluster (SPEC §6, backfill): each slot is
// claimed through the RunStore with no lateness limit, so that a slot
// already settled (done, missed, skipped) is skipped, a slot running
// elsewhere is waited for and not run again, and two callers backfilling
// the same range run each slot once between them. Slots run oldest first,
// at most opts.Concurrency at a time whatever the job's overlap policy,
// with the job's handler, lease,
// retries (a retry is only made within the backfill if the overlap policy
// is allow, as a retry never runs after the next slot is due) and history.
// The scheduler need not be started: Backfill initialises the backend and
// prepares the job itself. Its runs are its own: Stop does not end them,
// cancelling ctx does.
//
// It returns ErrNotFound for an unknown job and a *ValidationError for bad
// input: CodeNeedsRunStore for a job that does not run under leases,
// CodeBadRange when from is not before to or to is after the store's now,
// CodeDedupeWindow when from is older than the backend remembers claims,
// CodeTooManySlots for more than MaxSlots slots without Confirm. It stops
// when ctx ends: running slots are handed over as at Stop (leases
// released to whoever claims them next, recorded handed_over, handlers'
// contexts cancelled with ctx's cause); it then returns ctx's cause with
// the counts so far.
func (s *Scheduler) Backfill(ctx context.Context, name string, from, to time.Time, opts *BackfillOptions) (BackfillResult, error) {
	j, err := s.knownJob(name)
	if err != nil {
		return BackfillResult{}, err
	}
	var o BackfillOptions
	if opts != nil {
		o = *opts
	}
	slots, err := s.backfillSlots(j, from, to, &o)
	if err != nil {
		return BackfillResult{}, err
	}
	res := BackfillResult{Total: len(slots)}
	if len(slots) == 0 {
		return res, nil
	}
	if err := s.ensureInit(ctx); err != nil {
		return res, err
	}
	if err := s.backend.PrepareJob(ctx, PrepareJobInput{Job: j.name, HistorySize: j.opt.HistorySize}); err != nil {
		return res, err
	}
	// Handlers run under their own context, as under Start, so that when
	// ctx ends their runs are handed over (leases released, records
	// stored) before they are cancelled, instead of ending as errors.
	runCtx, cancelRuns := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelRuns(nil)
	run := s.newRunner(runCtx)
	if s.watcher != nil {
		// Wake this backfill's standing-by slots as soon as a run they
		// wait on ends, instead of at the next poll.
		wctx, stopWatch := context.WithCancel(ctx)
		var watching sync.WaitGroup
		watching.Go(func() {
			ch, err := s.watcher.WatchRuns(wctx)
			if err != nil {
				return // polling still works
			}
			run.WatchUp(true)
			for ev := range ch {
				run.Notify(ev.Job, ev.Slot, ev.Kind == RunFinished)
			}
			run.WatchUp(false) // backups poll from now on
		})
		defer watching.Wait()
		defer stopWatch()
	}
	finished, handedOver := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(handedOver)
		select {
		case <-ctx.Done():
			run.HandOver(context.WithoutCancel(ctx), func() { cancelRuns(context.Cause(ctx)) })
		case <-finished:
		}
	}()

	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for range min(o.Concurrency, len(slots)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				mu.Lock()
				if next == len(slots) {
					mu.Unlock()
					return
				}
				slot := slots[next]
				next++
				mu.Unlock()

				a := run.Lease(slotRun{job: j, backfill: true}, j.name, slot, j.opt.Lease, 0) // 0: no lateness limit
				a.AllowOverlap = true                                                         // the backfill's own slots overlap by design
				a.Run(ctx)
				if ctx.Err() != nil {
					return // handed over, or never run: not counted
				}
				ran := !a.Started.IsZero()
				mu.Lock()
				if ran {
					res.Ran++
				} else {
					res.Skipped++
				}
				p := BackfillProgress{Job: j.name, Slot: slot, Ran: ran, Done: res.Ran + res.Skipped, Total: res.Total}
				if ran {
					p.Status = Status(a.LastResult().Status)
				}
				mu.Unlock()
				s.emit(Event{Kind: EventBackfill, Job: j.name, Slot: slot, Attempt: a.Number, Status: p.Status, Outcome: backfillOutcome(ran)})
				if o.OnProgress != nil {
					o.OnProgress(p)
				}
			}
		})
	}
	wg.Wait()
	close(finished)
	<-handedOver
	if ctx.Err() != nil {
		return res, context.Cause(ctx)
	}
	return res, nil
}

func backfillOutcome(ran bool) string {
	if ran {
		return "ran"
	}
	return "skipped"
}

// backfillSlots checks a backfill's input and lists its slots, oldest
// first. o gets its defaults.
func (s *Scheduler) backfillSlots(j *job, from, to time.Time, o *BackfillOptions) ([]time.Time, error) {
	bad := func(field string, code Code, reason string) error {
		return &ValidationError{Job: j.name, Field: field, Code: code, Reason: reason}
	}
	if !j.leased {
		return nil, bad("Job", CodeNeedsRunStore, "a backfill claims slots through the RunStore: the job must run under leases")
	}
	if o.Concurrency < 0 || o.MaxSlots < 0 {
		return nil, bad("Concurrency", CodeBadOption, "Concurrency and MaxSlots must not be negative")
	}
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	if o.MaxSlots == 0 {
		o.MaxSlots = DefaultBackfillMaxSlots
	}
	if !from.Before(to) {
		return nil, bad("From", CodeBadRange, fmt.Sprintf("from %s is not before to %s", from.UTC().Format(msLayout), to.UTC().Format(msLayout)))
	}
	now := s.now()
	if to.After(now) {
		return nil, bad("To", CodeBadRange, fmt.Sprintf("to %s is after now %s: a backfill runs past slots only", to.UTC().Format(msLayout), now.UTC().Format(msLayout)))
	}
	if w := s.backend.DedupeWindow(); w != Forever && now.Sub(from) >= w {
		return nil, bad("From", CodeDedupeWindow, fmt.Sprintf("from %s is older than the backend's dedupe window %v: a slot it forgot could run twice", from.Format(time.RFC3339Nano), w))
	}
	var slots []time.Time
	for t := j.nextSlot(from.Add(-time.Nanosecond)); t.Before(to); t = j.nextSlot(t) {
		if len(slots) == o.MaxSlots && !o.Confirm {
			return nil, bad("To", CodeTooManySlots, fmt.Sprintf("the range holds more than %d slots; confirm to run them all", o.MaxSlots))
		}
		slots = append(slots, t)
	}
	return slots, nil
}
