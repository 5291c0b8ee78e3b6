package anarchon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"
)

// storeTimeout bounds the store calls made after a handler returns (results,
// finish, release): they must not hang a slot goroutine forever, and they
// must not be cut short by Stop.
const storeTimeout = 30 * time.Second

func storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeTimeout)
}

// claimCtx bounds one claim call by storeTimeout, keeping ctx's values but
// not its cancellation: a claim already sent when Stop begins may win at
// the store, and an answer thrown away would leave the slot claimed and
// never run (a plain claim has no backup). A claim won that way runs, and
// Stop waits for it or hands it over as for any other run.
func claimCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
}

// activeRun is a handler running under this instance, tracked so that Stop
// can hand it over.
type activeRun struct {
	job     *job
	slot    int64
	token   string
	attempt int
	started time.Time
	cancel  context.CancelCauseFunc

	mu    sync.Mutex
	state int // runActive, runFinishing, runHandedOver
}

const (
	runActive = iota
	runFinishing
	runHandedOver
)

// transition moves the run from runActive to state; it reports false when
// the run had already left runActive (the handler finished, or Stop handed
// it over first).
func (a *activeRun) transition(state int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state != runActive {
		return false
	}
	a.state = state
	return true
}

func (s *Scheduler) track(a *activeRun) {
	s.amu.Lock()
	s.active[a] = struct{}{}
	s.amu.Unlock()
}

func (s *Scheduler) untrack(a *activeRun) {
	s.amu.Lock()
	delete(s.active, a)
	s.amu.Unlock()
}

// fire handles one due slot of a job.
func (s *Scheduler) fire(ctx context.Context, j *job, slot time.Time) {
	if ctx.Err() != nil {
		return // Stop has begun: no new claims
	}
	if j.leased {
		s.runLeased(ctx, j, slot, j.opt.MaxLate)
		return
	}
	s.runPlain(ctx, j, slot)
}

func (s *Scheduler) claimInput(j *job, slot int64) ClaimInput {
	return ClaimInput{
		Job: j.name, Slot: slot, Token: s.newToken(), InstanceID: s.opts.InstanceID,
		HistorySize: j.opt.HistorySize, HistoryTTL: j.opt.HistoryTTL,
	}
}

// runPlain is SPEC §3's run path with a plain claim: lateness, claim,
// handler, result.
func (s *Scheduler) runPlain(ctx context.Context, j *job, slotT time.Time) {
	late := s.now().Sub(slotT)
	if late > j.opt.MaxLate {
		s.missed(ctx, j, slotT, late)
		return
	}
	in := s.claimInput(j, slotT.UnixMilli())
	cctx, cancelClaim := claimCtx(ctx)
	defer cancelClaim()
	won, err := s.backend.Claim(cctx, in)
	if err != nil {
		s.storeError(ctx, "Claim", j.name, slotT, err) // fail closed: the slot is not run here
		return
	}
	outcome := "lost"
	if won {
		outcome = "won"
	}
	s.emit(Event{Kind: EventClaim, Job: j.name, Slot: slotT, Attempt: 1, Outcome: outcome, Lateness: late})
	if !won {
		return
	}
	if rec := s.recorder; rec != nil {
		if err := rec.RecordClaim(cctx, in); err != nil {
			// The claim is won and the slot is ours; only its history entry
			// is missing until the result is saved.
			s.storeError(ctx, "RecordClaim", j.name, slotT, err)
		}
	}
	hctx, cancel := context.WithCancelCause(s.runCtx)
	defer cancel(nil)
	run := &Run{Job: j.name, Slot: slotT, InstanceID: s.opts.InstanceID, Token: in.Token, Attempt: 1}
	res := s.execute(hctx, j, run)
	s.saveResult(j, res)
}

func (s *Scheduler) missed(ctx context.Context, j *job, slotT time.Time, late time.Duration) {
	s.log.LogAttrs(ctx, slog.LevelWarn, "slot missed: too late to run",
		slog.String("job", j.name), slog.Time("slot", slotT), slog.Duration("late", late), slog.Duration("max_late", j.opt.MaxLate))
	s.emit(Event{Kind: EventSlotSkipped, Job: j.name, Slot: slotT, Status: StatusMissed, Lateness: late})
}

// execute runs the handler with the job's timeout, recovering a panic, and
// returns the result to store.
func (s *Scheduler) execute(ctx context.Context, j *job, run *Run) StoredResult {
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
	if err != nil {
		res.Status = StatusError
		res.Error = err.Error()
		if cause := context.Cause(ctx); cause != nil && cause != err && !errors.Is(err, cause) &&
			(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			res.Error = fmt.Sprintf("%v (cause: %v)", err, cause)
		}
	}
	s.emit(Event{Kind: EventRunEnd, Job: run.Job, Slot: run.Slot, Attempt: run.Attempt, Status: res.Status, Duration: end.Sub(start), Err: err})
	return res
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

// PanicError is the error recorded for a handler that panicked. The
// scheduler recovers the panic and keeps going.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the goroutine's stack at the panic
}

// Error returns "panic: <value>".
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

func (s *Scheduler) saveResult(j *job, res StoredResult) {
	ctx, cancel := storeCtx()
	defer cancel()
	s.retry(ctx, "SaveResult", j.name, time.UnixMilli(res.Slot).UTC(), storeTimeout, func() error {
		return s.backend.SaveResult(ctx, SaveResultInput{Job: j.name, Result: res, HistorySize: j.opt.HistorySize, HistoryTTL: j.opt.HistoryTTL})
	})
}

// retry calls f until it succeeds, backing off from 50 ms to 1 s between
// tries, for at most budget; every failure is reported. It gives up at once
// on ErrClosed and when ctx ends. It reports whether f succeeded.
func (s *Scheduler) retry(ctx context.Context, op, job string, slot time.Time, budget time.Duration, f func() error) bool {
	deadline := time.Now().Add(budget)
	wait := 50 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return true
		}
		s.storeError(ctx, op, job, slot, err)
		if errors.Is(err, ErrClosed) || ctx.Err() != nil || time.Now().Add(wait).After(deadline) || !sleepCtx(ctx, wait) {
			return false
		}
		wait = min(2*wait, time.Second)
	}
}

// runLeased is the run path under leases (SPEC §6): claim through the
// RunStore, run on a win, stand by as a backup while another instance holds
// a live lease, and record why a slot did not run.
func (s *Scheduler) runLeased(ctx context.Context, j *job, slotT time.Time, maxLate time.Duration) {
	slot := slotT.UnixMilli()
	rc := RunClaim{
		ClaimInput:   s.claimInput(j, slot),
		Lease:        j.opt.Lease,
		MaxLate:      maxLate,
		AllowOverlap: j.opt.Overlap == OverlapAllow,
		MaxAttempts:  j.opt.MaxAttempts,
	}
	key := slotKey{j.name, slot}
	standing := false
	lateWins := 0 // wins of rc.Token in a row answered past the safe end
	for {
		// Listen before asking, so a release between the answer and the
		// wait is not missed.
		wake, unwait := s.waitFor(key)
		sent := time.Now()
		cctx, cancelClaim := claimCtx(ctx)
		out, err := s.runs.Claim(cctx, rc)
		cancelClaim()
		if err != nil {
			unwait()
			s.storeError(ctx, "Claim", j.name, slotT, err)
			if !standing || !sleepCtx(ctx, s.opts.PollInterval) {
				return // fail closed
			}
			continue
		}
		s.emit(Event{Kind: EventClaim, Job: j.name, Slot: slotT, Attempt: out.Attempt, Outcome: out.Kind.String(), Lateness: s.now().Sub(slotT)})
		switch out.Kind {
		case OutcomeWon:
			unwait()
			if !s.wonInTime(j, slotT, out.Attempt, sent) {
				standing = true
				if lateWins++; lateWins < maxLateWins {
					// Ask again at once: the same token's claim renews the
					// lease if it is still ours (SPEC §6), or shows who
					// holds it now.
					continue
				}
				// The store answers slower than the lease allows: give
				// this attempt up and stand by under a new token, so the
				// lease runs out and the attempts with it (the slot ends
				// abandoned) instead of renewing it for ever.
				s.saveResult(j, StoredResult{
					Slot: slot, Token: rc.Token, InstanceID: s.opts.InstanceID, Attempt: out.Attempt, Status: StatusLeaseLost,
					Error: fmt.Sprintf("%d wins in a row were answered past the lease's safe end (the last after %v, lease %v); the handler did not run", lateWins, time.Since(sent).Round(time.Millisecond), j.opt.Lease),
				})
				rc.ClaimInput, lateWins = s.claimInput(j, slot), 0
				continue
			}
			s.runWon(j, slotT, rc, out.Attempt, sent)
			return
		case OutcomeRunning:
			standing = true
			wait := s.opts.PollInterval
			if !out.LeaseUntil.IsZero() {
				// Ask again just after the lease runs out by the store's clock.
				wait = min(wait, max(out.LeaseUntil.Sub(s.now())+time.Millisecond, time.Millisecond))
			}
			t := time.NewTimer(wait)
			select {
			case <-wake:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			unwait()
			if ctx.Err() != nil {
				return
			}
		case OutcomeLate:
			unwait()
			s.settle(j, slotT, rc.Token, StatusMissed, 0)
			return
		case OutcomeOverlap:
			unwait()
			s.settle(j, slotT, rc.Token, StatusSkipped, 0)
			return
		case OutcomeDone:
			unwait()
			if out.Status == StatusAbandoned && standing {
				// Every backup that saw the slot through to abandonment
				// records it under one token, so history shows it once.
				s.settle(j, slotT, AbandonedToken(slot), StatusAbandoned, out.Attempt)
			}
			return
		default: // OutcomeNone, and kinds this version does not know: like done
			unwait()
			return
		}
	}
}

// settle records a slot that did not run.
func (s *Scheduler) settle(j *job, slotT time.Time, token string, status Status, attempt int) {
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "slot not run",
		slog.String("job", j.name), slog.Time("slot", slotT), slog.String("status", string(status)))
	s.emit(Event{Kind: EventSlotSkipped, Job: j.name, Slot: slotT, Status: status, Lateness: s.now().Sub(slotT)})
	s.saveResult(j, StoredResult{Slot: slotT.UnixMilli(), Token: token, InstanceID: s.opts.InstanceID, Status: status, Attempt: attempt})
}

// runWon runs a slot whose lease this instance holds: heartbeats every
// Lease/3, finish on return, or hand-over when Stop released it.
func (s *Scheduler) runWon(j *job, slotT time.Time, rc RunClaim, attempt int, claimSent time.Time) {
	hctx, cancel := context.WithCancelCause(s.runCtx)
	defer cancel(nil)
	ar := &activeRun{job: j, slot: rc.Slot, token: rc.Token, attempt: attempt, started: s.now().Round(0), cancel: cancel}
	s.track(ar)
	stopHB := make(chan struct{})
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		s.heartbeat(hctx, ar, j.opt.Lease, claimSent, stopHB)
	}()
	run := &Run{Job: j.name, Slot: slotT, InstanceID: s.opts.InstanceID, Token: rc.Token, Attempt: attempt}
	res := s.execute(hctx, j, run)
	close(stopHB)
	<-hbDone
	finishing := ar.transition(runFinishing)
	s.untrack(ar)

	cause := context.Cause(hctx)
	switch {
	case !finishing:
		// Stop released the lease and recorded the hand-over; a backup owns
		// the slot, and the store may be closed by now.
		return
	case errors.Is(cause, ErrLeaseLost):
		res.Status = StatusLeaseLost
	default:
		// The store must hear of the end, or a backup runs the slot again:
		// retry a failed finish. Past the lease a finish can still land (if
		// no backup took over, the run is still ours) or be refused (then it
		// was lost). One never confirmed is recorded as unconfirmed, which
		// does not settle the slot.
		ctx, cancelStore := storeCtx()
		defer cancelStore()
		var confirmed bool
		if f := s.finisher; f != nil {
			confirmed = s.retry(ctx, "FinishResult", j.name, slotT, storeTimeout, func() error {
				_, err := f.FinishResult(ctx, SaveResultInput{Job: j.name, Result: res, HistorySize: j.opt.HistorySize, HistoryTTL: j.opt.HistoryTTL})
				return err
			})
			if confirmed {
				return
			}
		} else {
			var held bool
			confirmed = s.retry(ctx, "Finish", j.name, slotT, storeTimeout, func() (err error) {
				held, err = s.runs.Finish(ctx, FinishInput{Job: j.name, Slot: rc.Slot, Token: rc.Token, Status: res.Status})
				return err
			})
			if confirmed && !held {
				res.Status = StatusLeaseLost // a backup took the slot while we ran
			}
		}
		if !confirmed {
			note := fmt.Sprintf("the run ended (%s) but the store never confirmed it: the slot may run again", res.Status)
			if res.Error != "" {
				note = res.Error + "; " + note
			}
			res.Status, res.Error = StatusUnconfirmed, note
		}
	}
	s.saveResult(j, res)
}

// leaseMargin is how long before the store's expiry of a lease its holder
// stops: lease/6 (5 s of the default 30 s). A holder process that is not
// scheduled for longer than that can overlap its backup (see Run.Attempt).
func leaseMargin(lease time.Duration) time.Duration { return lease / 6 }

// heartbeat renews the lease every lease/3 until stop closes. A store that
// answers false ends the lease at once. Otherwise the lease is ours until
// its safe end: lease − lease/6 after the send time of the last renewal,
// by our own monotonic clock, which is never later than the store's expiry.
// At the safe end the handler's context is cancelled with ErrLeaseLost,
// whatever a heartbeat call in flight is doing: a call that hangs on a dead
// connection must not keep a holder running past the moment a backup may
// take over (fencing).
func (s *Scheduler) heartbeat(ctx context.Context, ar *activeRun, lease time.Duration, lastOK time.Time, stop <-chan struct{}) {
	every := lease / 3
	margin := leaseMargin(lease)
	retry := max(every/4, time.Millisecond)
	slotT := time.UnixMilli(ar.slot).UTC()
	type answer struct {
		ok  bool
		err error
	}
	answers := make(chan answer, 1)
	// Both timers count from lastOK, the claim's send time, not from now:
	// the store started the lease when it got the claim, and the answer
	// may have taken a while to come back.
	next := time.NewTimer(time.Until(lastOK.Add(every)))
	defer next.Stop()
	safeEnd := time.NewTimer(time.Until(lastOK.Add(lease - margin)))
	defer safeEnd.Stop()
	inFlight := false
	var sent time.Time // send time of the call in flight
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-safeEnd.C:
			// late is how long after the safe end this runs: time the
			// process was not scheduled, which eats into the margin the
			// holder has to stop before a backup may win.
			late := time.Since(lastOK.Add(lease - margin))
			s.log.LogAttrs(ctx, slog.LevelWarn, "lease lost: no renewal before its safe end",
				slog.String("job", ar.job.name), slog.Time("slot", slotT),
				slog.Duration("late", late), slog.Duration("margin", margin))
			ar.cancel(ErrLeaseLost)
			return
		case <-next.C:
			if inFlight {
				continue // still waiting for the previous call; the safe end bounds it
			}
			inFlight = true
			sent = time.Now()
			callCtx, cancel := context.WithDeadline(ctx, lastOK.Add(lease-margin))
			go func() {
				defer cancel()
				ok, err := s.runs.Heartbeat(callCtx, HeartbeatInput{Job: ar.job.name, Slot: ar.slot, Token: ar.token, Lease: lease})
				answers <- answer{ok, err} // buffered: never blocks, even after we return
			}()
		case a := <-answers:
			inFlight = false
			switch {
			case a.err == nil && a.ok:
				lastOK = sent
				safeEnd.Reset(time.Until(lastOK.Add(lease - margin)))
				next.Reset(every)
			case a.err == nil:
				s.log.LogAttrs(ctx, slog.LevelWarn, "lease lost", slog.String("job", ar.job.name), slog.Time("slot", slotT))
				ar.cancel(ErrLeaseLost)
				return
			default:
				if ctx.Err() != nil {
					return
				}
				s.storeError(ctx, "Heartbeat", ar.job.name, slotT, a.err)
				next.Reset(retry)
			}
		}
	}
}

// handOver runs at the Stop deadline: it marks every run still going as
// handed over, cancels the handlers (cause ErrStopped) and releases their
// leases so that backups take the runs over at once. Marking comes first so
// a handler that returns on the cancellation does not finish the slot.
func (s *Scheduler) handOver() {
	s.amu.Lock()
	runs := make([]*activeRun, 0, len(s.active))
	for a := range s.active {
		if a.transition(runHandedOver) {
			runs = append(runs, a)
		}
	}
	s.amu.Unlock()
	s.runCancel(ErrStopped)
	var wg sync.WaitGroup
	for _, a := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := storeCtx()
			defer cancel()
			slotT := time.UnixMilli(a.slot).UTC()
			if _, err := s.runs.Release(ctx, ReleaseInput{Job: a.job.name, Slot: a.slot, Token: a.token}); err != nil {
				s.storeError(ctx, "Release", a.job.name, slotT, err)
			}
			// Recorded here rather than when the handler returns, so that
			// the record is stored when Stop returns.
			s.saveResult(a.job, StoredResult{
				Slot: a.slot, Token: a.token, InstanceID: s.opts.InstanceID, Attempt: a.attempt,
				Status: StatusHandedOver, StartedAt: a.started, FinishedAt: s.now(),
				Error: "handed over: " + ErrStopped.Error(),
			})
		}()
	}
	wg.Wait()
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
			s.markMissed(ctx, j, slotT)
		}
		// Catch-up slots may be as late as the window allows.
		for _, slotT := range recent {
			if ctx.Err() != nil {
				return
			}
			s.runLeased(ctx, j, slotT, j.opt.CatchUp.Window+j.opt.MaxLate)
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
			s.runLeased(s.loopCtx, j, slotT, 0)
		}()
	}
}

// markMissed settles an old slot as missed unless it was already run or
// settled: a claim that is late by any margin makes the store record it
// missed, and only the instance whose claim did so records the history.
func (s *Scheduler) markMissed(ctx context.Context, j *job, slotT time.Time) {
	rc := RunClaim{
		ClaimInput: s.claimInput(j, slotT.UnixMilli()), Lease: j.opt.Lease, MaxLate: time.Millisecond,
		AllowOverlap: true, MaxAttempts: j.opt.MaxAttempts,
	}
	for range maxLateWins {
		sent := time.Now()
		out, err := s.runs.Claim(ctx, rc)
		if err != nil {
			s.storeError(ctx, "Claim", j.name, slotT, err)
			return
		}
		switch out.Kind {
		case OutcomeLate:
			s.settle(j, slotT, rc.Token, StatusMissed, 0)
		case OutcomeWon:
			// The store's clock is behind ours by more than the slot's
			// age: the slot is not late for the store, so it is ours to
			// run.
			if !s.wonInTime(j, slotT, out.Attempt, sent) {
				continue // renew by asking again, as in runLeased, a few times
			}
			s.runWon(j, slotT, rc, out.Attempt, sent)
		}
		return
	}
}

// maxLateWins is how many wins in a row, each answered past the lease's
// safe end, one token claims before it gives the attempt up.
const maxLateWins = 3

// wonInTime reports whether a won lease claim sent at sent was answered
// before the lease's safe end. The store started the lease when it got the
// claim; an answer that took longer than Lease − Lease/6 (a slow or delayed
// connection, a store waiting on a lock) leaves the holder no time to stop
// before a backup may win, so the handler must not start on it.
func (s *Scheduler) wonInTime(j *job, slotT time.Time, attempt int, sent time.Time) bool {
	took := time.Since(sent)
	if took < j.opt.Lease-leaseMargin(j.opt.Lease) {
		return true
	}
	s.log.LogAttrs(context.Background(), slog.LevelWarn, "lease won too late to run; claiming again",
		slog.String("job", j.name), slog.Time("slot", slotT), slog.Int("attempt", attempt),
		slog.Duration("answer_after", took), slog.Duration("lease", j.opt.Lease))
	return false
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
