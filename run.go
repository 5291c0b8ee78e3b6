package anarchon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anarchon/anarchon/internal/runner"
)

// attempt is an attempt to run a slot of a job; the run path lives in
// internal/runner.
type attempt = runner.Attempt[slotRun]

// fire handles one due slot of a job.
func (s *Scheduler) fire(ctx context.Context, j *job, slot time.Time) {
	if ctx.Err() != nil || j.removed.Load() {
		return // Stop has begun, or the job was removed or replaced: no new claims
	}
	if j.leased {
		s.lease(j, slot, j.opt.MaxLate).Run(ctx)
		return
	}
	s.run.Plain(slotRun{job: j}, j.name, slot, j.opt.MaxLate).Run(ctx)
}

// fireGroup handles slots due together: their claims go to the store in
// batches where it takes them (Options.BatchSize), in waves by the slots'
// rank among the live instances (waves, SPEC §4), and each slot then takes
// the path fire would have given it. A group of more slots than one batch
// is a burst: the results of plain runs wait for its claims and for the
// handlers of the plain runs they won to begin, and the finishes of
// leased runs for its first wave and the pause after it (claims first,
// SPEC §4).
//
// The timer loop hands a group over up to PrepareLead before it is due
// (SPEC §4, "Prepared ahead"): its waves and attempts are built then, and
// its claims sent once g.Wait says every slot of it is due.
func (s *Scheduler) fireGroup(ctx context.Context, g *runner.Group[*job]) {
	ws := s.waves(g.Due)
	prepared := make([]wave, len(ws))
	for i, w := range ws {
		prepared[i] = s.prepareWave(w)
	}
	if !g.Wait(ctx) {
		return // Stop began: no new claims
	}
	var done, firstDone func()
	var started sync.WaitGroup // the group's won plain slots until their handlers begin
	if len(g.Due) > s.opts.BatchSize {
		s.bursts.enter()
		s.firstWaves.enter()
		// Results wait for the burst's handlers to begin too: sent
		// sooner, they would take the processor from those still to
		// begin (SPEC §4, "Claims first").
		done = func() {
			started.Wait()
			s.bursts.leave()
		}
		firstDone = s.firstWaves.leave
	}
	s.fireWaves(ctx, prepared, &started, done, firstDone)
}

// wave is the attempts of one wave of a group, built ahead of its time.
type wave struct {
	plain  []*attempt
	leased []*runner.Leased[slotRun]
}

// empty reports whether the wave has no attempt.
func (w wave) empty() bool { return len(w.plain) == 0 && len(w.leased) == 0 }

// prepareWave builds the attempts of one wave's slots, in the order of
// their jobs' names (then slots), in which they are cut into batches
// (SPEC §4, "Batches"): each batch then claims one narrow range of the
// store's keys, where the group's own order (the queue's) spreads every
// batch over all of them. On SQLite a batch's commit writes the pages of
// the jobs table and of the runs' indexes its claims touch: a third of
// 10,000 jobs claimed in batches of 256 wrote 178 WAL frames in name
// order against 1,353 in the queue's order (lease claims; plain 150
// against 268; sqlitefile's TestBatchesInNameOrderWriteFewerPages).
// The group's slice is left as it is: its order is the queue's
// (runner.Group).
func (s *Scheduler) prepareWave(group []runner.Due[*job]) wave {
	group = slices.Clone(group)
	slices.SortFunc(group, func(a, b runner.Due[*job]) int {
		return cmp.Or(strings.Compare(a.V.name, b.V.name), a.Slot.Compare(b.Slot))
	})
	var w wave
	for _, d := range group {
		j := d.V
		if j.removed.Load() {
			continue // as in fire
		}
		if j.leased {
			w.leased = append(w.leased, s.lease(j, d.Slot, j.opt.MaxLate))
		} else {
			w.plain = append(w.plain, s.run.Plain(slotRun{job: j}, j.name, d.Slot, j.opt.MaxLate))
		}
	}
	return w
}

// fireWave claims one wave's slots, each batch counted in answered until
// its answers are acted on, and each won plain slot in started until its
// handler begins. A job removed or replaced since the wave was built is
// left out, as fire leaves it out.
func (s *Scheduler) fireWave(ctx context.Context, w wave, answered, started *sync.WaitGroup) {
	if ctx.Err() != nil {
		return // Stop has begun: no new claims
	}
	plain := slices.DeleteFunc(w.plain, func(a *attempt) bool { return a.Job.job.removed.Load() })
	leased := slices.DeleteFunc(w.leased, func(a *runner.Leased[slotRun]) bool { return a.Job.job.removed.Load() })
	if len(plain) > 0 {
		s.run.FirePlain(ctx, plain, &s.inflight, answered, started)
	}
	if len(leased) > 0 {
		s.run.FireLeased(ctx, leased, &s.inflight, answered)
	}
}

// batchSize is the batch size of claims of a store that takes batches
// (can), 1 for one that does not.
func (s *Scheduler) batchSize(can bool) int {
	if !can {
		return 1
	}
	return s.opts.BatchSize
}

// lease returns a leased attempt at j's slot; maxLate 0 means no limit.
func (s *Scheduler) lease(j *job, slot time.Time, maxLate time.Duration) *runner.Leased[slotRun] {
	a := s.run.Lease(slotRun{job: j}, j.name, slot, j.opt.Lease, maxLate)
	// BufferOne claims with overlap allowed and decides after the win
	// (bufferOne).
	// Replace claims with overlap allowed and settles the earlier runs
	// after the win (replaceEarlier).
	limit := j.overlapLimit()
	a.AllowOverlap = limit == 0
	if j.opt.Overlap == OverlapLimit {
		a.Limit = limit
	}
	return a
}

// execute runs the handler with the job's timeout, recovering a panic, and
// returns the result to store, what the job's Retry makes of it (zero for
// a manual run, which is never retried) and the handler's error. The plan
// is made before the run's end is reported, so that EventRunEnd and the
// "run failed" line say whether a retry follows.
//
// cs is the claim that won the run: the handler's context is the one its
// StartRun returns.
func (s *Scheduler) execute(ctx context.Context, j *job, run *Run, cs ClaimSpan) (StoredResult, retryPlan, error) {
	ctx, rs := cs.StartRun(ctx, run)
	if j.opt.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, j.opt.Timeout, ErrTimeout)
		defer cancel()
	}
	start := s.now().Round(0) // stored times carry no monotonic reading
	err := call(ctx, j.handler, run)
	end := s.now().Round(0)
	res := StoredResult{
		Slot: run.Slot.UnixMilli(), Token: run.Token, InstanceID: run.InstanceID, Attempt: run.Attempt,
		Status: StatusSuccess, StartedAt: start, FinishedAt: end, Manual: run.Manual, Output: run.output,
	}
	endErr := err // err, and why the handler's context ended if it returned on that
	if err != nil {
		res.Status = StatusError
		if cause := context.Cause(ctx); cause != nil && cause != err && !errors.Is(err, cause) &&
			(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			endErr = fmt.Errorf("%w (cause: %w)", err, cause)
		}
		res.Error = endErr.Error()
	}
	var plan retryPlan
	if err != nil && !run.Manual {
		var cut error // why the handler's context ended, its Timeout aside
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, ErrTimeout) {
			cut = cause
		}
		plan = j.planRetry(run.Slot, run.Attempt, err, cut, s.now)
	}
	s.emit(Event{Kind: EventRunEnd, Job: run.Job, Slot: run.Slot, Attempt: run.Attempt, Status: res.Status, Duration: end.Sub(start), Err: endErr, Manual: run.Manual,
		Retry: plan.retry, RetryIn: plan.in, Reason: plan.note})
	if err != nil {
		s.logRunFailed(context.WithoutCancel(ctx), run, end.Sub(start), endErr, plan.note)
	}
	re := RunEnd{Status: res.Status, StartedAt: start, FinishedAt: end, Err: endErr}
	if !run.Manual {
		re.Lateness = start.Sub(run.Slot)
	}
	rs.End(re)
	return res, plan, err
}

// manualSlotAt is the slot of a manual run that begins at now (Unix ms):
// now, or 1 ms after this instance's last manual run when that is not
// earlier, so that two manual runs of one instance never share a slot
// (RunNow twice in one millisecond, or a RunNow and a trigger), whatever
// the job: a run's slot is its name in history, the command line's and
// the dashboard's. Runs recorded by different instances in one
// millisecond still may (their tokens tell them apart, SPEC §3, "RunNow").
func (s *Scheduler) manualSlotAt(now int64) int64 {
	for {
		last := s.manualSlot.Load()
		slot := max(now, last+1)
		if s.manualSlot.CompareAndSwap(last, slot) {
			return slot
		}
	}
}

// runManual runs j once, at once, on this instance, outside its schedule:
// a RunNow, or a trigger request this instance won. run has every field
// set but Slot, which is the store's now (as RecordManualRun returned it).
// The run is recorded with RecordManualRun under run.Token, the handler
// runs under a context derived from parent and is not retried, and its
// result is stored, then checked against PauseOnFailure like any run's.
// ctx bounds the store calls. It returns the stored result (zero Status
// when the store did not record the run, so nothing ran) and the failed
// store call's error, which it has logged.
//
// lt, for a triggered run, makes the run known to Stop from its record to
// its result: if Stop's deadline takes it first (stopTriggers), Stop
// stores the run's outcome and runManual stores nothing, returning the
// result Stop stored and errSettledByStop.
func (s *Scheduler) runManual(ctx, parent context.Context, j *job, run *Run, lt *liveTrigger) (StoredResult, error) {
	in := ClaimInput{
		Job: j.name, Slot: s.manualSlotAt(s.now().UnixMilli()), Token: run.Token, InstanceID: run.InstanceID,
		HistorySize: j.opt.HistorySize, HistoryTTL: j.opt.HistoryTTL,
	}
	run.Slot = time.UnixMilli(in.Slot).UTC()
	cctx, cs := s.startClaim(ctx, j, run.Slot, false, true)
	slot, err := s.backend.RecordManualRun(cctx, in)
	if err != nil {
		cs.End(ClaimEnd{Err: err})
		s.storeError(ctx, "RecordManualRun", j.name, run.Slot, err)
		return StoredResult{}, err
	}
	cs.End(ClaimEnd{Outcome: "manual", Attempt: 1})
	if slot != 0 {
		run.Slot = time.UnixMilli(slot).UTC()
	}
	if lt != nil {
		lt.start = s.now().Round(0)
		s.addTrigger(lt) // runTrigger drops it once the outcome is stored
	}
	hctx, cancel := context.WithCancelCause(parent)
	res, _, _ := s.execute(hctx, j, run, cs)
	cancel(nil)
	if lt != nil {
		if !lt.taken.CompareAndSwap(false, true) {
			<-lt.settled
			return lt.res, errSettledByStop
		}
		// the outcome is this run's: runTrigger closes lt.settled once
		// it is stored, which Stop waits for
	}
	// The store holds the run as running: its result is stored however
	// long the handler ran and whether or not ctx ended meanwhile (a
	// caller of RunNow that gave up, the deadline of a trigger's store
	// calls), each call within controlTimeout of the handler's return, as
	// Stop stores a stopped run's (SPEC §3).
	sctx, scancel := storeCallCtx(ctx)
	defer scancel()
	if err := s.backend.SaveResult(sctx, SaveResultInput{Job: j.name, Result: res, HistorySize: j.opt.HistorySize, HistoryTTL: j.opt.HistoryTTL}); err != nil {
		s.storeError(sctx, "SaveResult", j.name, run.Slot, err)
		return res, err
	}
	if res.Status == StatusError {
		s.afterFailure(sctx, j, res.Error)
	}
	return res, nil
}

// call runs h, turning a panic into an error that carries the stack.
func call(ctx context.Context, h Handler, run *Run) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return h(ctx, run)
}

// logRunFailed logs a run whose handler returned err, as the scheduler
// logs a slot not run: a failure at WARN ("run failed"), a panic at ERROR
// with its stack ("run panicked"), and a run that Stop cut short at INFO,
// since that is not the job's fault (a leased one's backup runs the slot
// again). A run whose lease was lost or replaced is not logged again:
// the runner logged the loss. retry, the retry plan's sentence, says
// whether another attempt follows (attribute "retry"; "" for a job
// without retries). A caller that logs EventRunEnd itself drops these
// lines by message, as the daemon does.
func (s *Scheduler) logRunFailed(ctx context.Context, run *Run, d time.Duration, err error, retry string) {
	attrs := []slog.Attr{slog.String("job", run.Job), slog.Time("slot", run.Slot), slog.Int("attempt", run.Attempt),
		slog.Duration("duration", d), slog.String("error", err.Error())}
	if retry != "" {
		attrs = append(attrs, slog.String("retry", retry))
	}
	if run.Manual {
		attrs = append(attrs, slog.Bool("manual", true))
	}
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		s.log.LogAttrs(ctx, slog.LevelError, "run panicked", append(attrs, slog.String("stack", string(pe.Stack)))...)
	case errors.Is(err, ErrStopped):
		s.log.LogAttrs(ctx, slog.LevelInfo, "run cut short: the scheduler is stopping", attrs...)
	case errors.Is(err, ErrReplaced), errors.Is(err, ErrLeaseLost):
		// the heartbeats logged it when the lease went ("lease lost",
		// "run replaced by a later slot; cancelling it")
	default:
		s.log.LogAttrs(ctx, slog.LevelWarn, "run failed", attrs...)
	}
}

// PanicError is the error recorded for a handler that panicked. The
// scheduler recovers the panic and keeps going.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the goroutine's stack at the panic
}

// Error returns "panic: <value>".
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic's value when it is an error (panic(err), or a
// runtime.Error such as a nil dereference), so that errors.Is and
// errors.As see through the panic as they see through a returned error:
// a panic with an error marked [Permanent] is not retried either. It
// returns nil for any other value.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// catchUp claims, in the background, the slots of j missed inside its
// catch-up window: older ones are settled as missed first (at most
// HistorySize of them, since older records would be trimmed anyway), then
// the newest CatchUp.Max are run, oldest first. Claims make this
// exactly-once across instances that start together.
func (s *Scheduler) catchUp(j *job, now time.Time) {
	slots := j.recentSlots(now, j.opt.CatchUp.Window, j.opt.CatchUp.Max+j.opt.HistorySize)
	if len(slots) == 0 {
		return
	}
	split := max(len(slots)-j.opt.CatchUp.Max, 0)
	older, recent := slots[:split], slots[split:]
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Done()
		ctx := s.loopCtx
		for _, slotT := range older {
			a := s.lease(j, slotT, time.Millisecond)
			a.AllowOverlap = true
			a.MissedWhy = fmt.Sprintf("catch-up at start runs only the newest %d slot(s) of its window: this older slot was not run", j.opt.CatchUp.Max)
			a.MarkMissed(ctx)
		}
		// Catch-up slots may be as late as the window allows.
		for _, slotT := range recent {
			if ctx.Err() != nil {
				return
			}
			s.lease(j, slotT, j.opt.CatchUp.Window+j.opt.MaxLate).Run(ctx)
		}
	}()
}

// recentSlots returns the newest keep slots in [now-window, now], oldest
// first. Its cost follows keep, not the window: interval slots are counted
// back from now, and cron slots are scanned over a look-back that doubles
// until it holds keep slots or covers the window.
func (j *job) recentSlots(now time.Time, window time.Duration, keep int) []time.Time {
	from := now.Add(-window)
	if j.expr == nil {
		last := j.nextSlot(now).Add(-j.interval) // the newest slot <= now
		out := make([]time.Time, 0, keep)
		for t := last; len(out) < keep && !t.Before(from); t = t.Add(-j.interval) {
			out = append(out, t)
		}
		slices.Reverse(out)
		return out
	}
	var out []time.Time
	for back := min(window, time.Minute); ; back = min(2*back, window) {
		out = out[:0]
		for t := j.nextSlot(now.Add(-back - time.Nanosecond)); !t.After(now); t = j.nextSlot(t) {
			out = append(out, t)
		}
		if len(out) >= keep || back >= window {
			break
		}
	}
	return out[max(len(out)-keep, 0):]
}

// adoptActive makes a starting instance a backup for the job's runs that
// are still unfinished in the store: it stands by for live ones and takes
// over those whose holder died (or abandons them after MaxAttempts).
// Without it a slot whose holder and backups all died would stay running
// for good, since only instances that saw the slot due ever claim it.
func (s *Scheduler) adoptActive(ctx context.Context, j *job) {
	runs, err := s.runs.Active(ctx, j.name)
	if err != nil {
		s.storeError(ctx, "Active", j.name, time.Time{}, err)
		return
	}
	for _, r := range runs {
		slotT := time.UnixMilli(r.Slot).UTC()
		s.inflight.Add(1)
		go func() {
			defer s.inflight.Done()
			// The run exists, so lateness does not apply to it (0: no limit).
			s.lease(j, slotT, 0).Run(s.loopCtx)
		}()
	}
}

// slotsSkipped logs the slots of a job that this instance's timer loop
// skipped over because they were already past MaxLate when it looked: the
// process was stalled or the machine suspended (or its clock jumped).
// They were not claimed here, so nothing of them is recorded: another
// instance may have run them, and with none running they are lost, as
// SPEC §3 has it (a slot later than MaxLate is not run). One line per job
// and stall, whatever the number of slots.
func (s *Scheduler) slotsSkipped(j *job, first, next time.Time) {
	s.log.LogAttrs(context.Background(), slog.LevelWarn, "slots skipped: this instance fell behind their max_late (a stalled process, a suspended machine or a clock jump); another instance may have run them",
		slog.String("job", j.name), slog.Time("first_skipped", first), slog.Time("next_slot", next), slog.Duration("max_late", j.opt.MaxLate))
}
