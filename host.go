package anarchon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/anarchon/anarchon/internal/runner"
)

// slotRun is what the scheduler keeps in an attempt: the job, and the Run
// its handler is given.
type slotRun struct {
	job   *job
	run   Run
	claim ClaimSpan // the Tracer's span of the latest claim; the run's parent when it won

	backfill bool // started by Backfill: the overlap policy does not apply
}

// newRunner returns a run path whose handlers run under runCtx: the
// scheduler's (Start) or a backfill's own.
func (s *Scheduler) newRunner(runCtx context.Context) *runner.Runner[slotRun] {
	return runner.New[slotRun](host{s}, runCtx, runner.Config{
		Log: s.log, PollInterval: s.opts.PollInterval, Watch: s.watcher != nil,
		ErrLeaseLost: ErrLeaseLost, ErrStopped: ErrStopped, ErrClosed: ErrClosed, ErrPermanent: ErrPermanent, ErrReplaced: ErrReplaced,
	})
}

// host gives the run path (internal/runner) the scheduler's store calls,
// events and logs, converting between its types and anarchon's.
type host struct{ s *Scheduler }

var _ runner.Host[slotRun] = host{}

func (h host) Now() time.Time        { return h.s.now() }
func (h host) NewToken() string      { return h.s.newToken() }
func (h host) CanFinishResult() bool { return h.s.finisher != nil }

func (h host) claimInput(a *attempt) ClaimInput {
	j := a.Job.job
	return ClaimInput{
		Job: j.name, Slot: a.Slot, Token: a.Token, InstanceID: h.s.opts.InstanceID,
		HistorySize: j.opt.HistorySize, HistoryTTL: j.opt.HistoryTTL,
	}
}

// SlowStoreCall is how long a claim may take before the scheduler logs a
// WARN naming the job, the slot and the time taken: a store that blocks
// (a table lock, a stalled server) otherwise leaves no trace until the
// call fails, and slots are meanwhile not run.
const SlowStoreCall = 2 * time.Second

// slow logs a claim that took longer than SlowStoreCall.
func (h host) slow(ctx context.Context, op string, a *attempt, start time.Time) {
	if d := time.Since(start); d > SlowStoreCall {
		h.s.log.LogAttrs(ctx, slog.LevelWarn, "slow store call",
			slog.String("op", op), slog.String("job", a.Name), slog.Time("slot", a.SlotTime()), slog.Duration("took", d))
	}
}

func (h host) Claim(ctx context.Context, a *attempt) (bool, error) {
	defer h.slow(ctx, "Claim", a, time.Now())
	ctx, cs := h.s.startClaim(ctx, a.Job.job, a.SlotTime(), false, false)
	a.Job.claim = cs
	won, err := h.s.backend.Claim(ctx, h.claimInput(a))
	if err != nil {
		cs.End(ClaimEnd{Err: err})
		return false, err
	}
	outcome := "lost"
	if won {
		outcome = "won"
	}
	cs.End(ClaimEnd{Outcome: outcome, Attempt: 1})
	h.s.emit(Event{Kind: EventClaim, Job: a.Name, Slot: a.SlotTime(), Attempt: 1, Outcome: outcome, Lateness: h.s.now().Sub(a.SlotTime())})
	return won, nil
}

func (h host) RecordClaim(ctx context.Context, a *attempt) error {
	if h.s.recorder == nil {
		return nil
	}
	return h.s.recorder.RecordClaim(ctx, h.claimInput(a))
}

func (h host) ClaimLease(ctx context.Context, a *runner.Leased[slotRun]) (runner.Outcome, error) {
	defer h.slow(ctx, "RunStore.Claim", &a.Attempt, time.Now())
	ctx, cs := h.s.startClaim(ctx, a.Job.job, a.SlotTime(), true, false)
	a.Job.claim = cs
	out, err := h.s.runs.Claim(ctx, RunClaim{
		ClaimInput:   h.claimInput(&a.Attempt),
		Lease:        a.Lease,
		MaxLate:      a.MaxLate,
		AllowOverlap: a.AllowOverlap,
		Limit:        a.Limit,
		MaxAttempts:  a.Job.job.opt.MaxAttempts + a.Job.job.opt.Retry.MaxRetries,
	})
	cs.End(ClaimEnd{Outcome: outcomeName(out, err), Attempt: out.Attempt, Err: err})
	if err != nil {
		return runner.Outcome{}, err
	}
	// A kind this version does not know passes through: the run path
	// handles it like done (SPEC §9), and the event names it.
	return runner.Outcome{Kind: runner.Kind(out.Kind), Attempt: out.Attempt, LeaseUntil: out.LeaseUntil, Abandoned: out.Status == StatusAbandoned}, nil
}

func (h host) LeaseAnswered(ctx context.Context, a *runner.Leased[slotRun], out runner.Outcome) {
	h.s.emit(Event{Kind: EventClaim, Job: a.Name, Slot: a.SlotTime(), Attempt: out.Attempt, Outcome: OutcomeKind(out.Kind).String(), Lateness: h.s.now().Sub(a.SlotTime())})
}

func (h host) LostCause(ctx context.Context, a *runner.Leased[slotRun]) error {
	return h.s.lostCause(ctx, a.Job.job, &a.Attempt)
}

func (h host) Heartbeat(ctx context.Context, a *runner.Leased[slotRun], lease time.Duration) (bool, error) {
	return h.s.runs.Heartbeat(ctx, HeartbeatInput{Job: a.Name, Slot: a.Slot, Token: a.Token, Lease: lease})
}

func (h host) Release(ctx context.Context, a *attempt) error {
	_, err := h.s.runs.Release(ctx, ReleaseInput{Job: a.Name, Slot: a.Slot, Token: a.Token})
	return err
}

func (h host) Finish(ctx context.Context, a *attempt, st runner.Status) (bool, error) {
	return h.s.runs.Finish(ctx, FinishInput{Job: a.Name, Slot: a.Slot, Token: a.Token, Status: Status(st)})
}

func (h host) result(a *attempt, r *runner.Result) SaveResultInput {
	return SaveResultInput{
		Job: a.Name,
		Result: StoredResult{
			Slot: a.Slot, Token: r.Token, InstanceID: h.s.opts.InstanceID, Attempt: r.Attempt,
			Status: Status(r.Status), StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Error: r.Error, Output: r.Output,
		},
		HistorySize: a.Job.job.opt.HistorySize, HistoryTTL: a.Job.job.opt.HistoryTTL,
	}
}

func (h host) FinishResult(ctx context.Context, a *attempt, r *runner.Result) error {
	_, err := h.s.finisher.FinishResult(ctx, h.result(a, r))
	h.stored(ctx, a, r, err)
	return err
}

func (h host) SaveResult(ctx context.Context, a *attempt, r *runner.Result) error {
	err := h.s.backend.SaveResult(ctx, h.result(a, r))
	h.stored(ctx, a, r, err)
	return err
}

// stored checks PauseOnFailure once a failed run's result is in the store.
// An attempt that will be retried (JobOptions.Retry) is not checked: its
// slot has not failed yet.
func (h host) stored(ctx context.Context, a *attempt, r *runner.Result, err error) {
	if err == nil && r.Status == runner.StatusError && !r.Retry && a.Job.job.opt.PauseOnFailure > 0 {
		h.s.afterFailure(ctx, a.Job.job, r.Error)
	}
}

func (h host) Execute(ctx context.Context, a *attempt) runner.Result {
	// The Run lives in the attempt: one allocation for both.
	run := &a.Job.run
	*run = Run{Job: a.Name, Slot: a.SlotTime(), InstanceID: h.s.opts.InstanceID, Token: a.Token, Attempt: a.Number}
	if j := a.Job.job; a.Leased && !a.Job.backfill && j.lateRetry(run.Slot, a.Number, h.s.now) {
		return runner.Result{Token: a.Token, Attempt: a.Number, Status: runner.StatusError,
			Error: fmt.Sprintf("attempt %d not run: it came after the job's next slot was due (overlap %s)", a.Number, j.opt.Overlap)}
	}
	if j := a.Job.job; j.opt.Overlap == OverlapBufferOne && a.Leased && !a.Job.backfill {
		if skip := h.s.bufferOne(ctx, j, a.Slot); skip {
			h.Settled(ctx, a, runner.StatusSkipped)
			return runner.Result{Token: a.Token, Attempt: a.Number, Status: runner.StatusSkipped}
		}
	}
	if j := a.Job.job; j.opt.Overlap == OverlapReplace && a.Leased && !a.Job.backfill {
		h.s.replaceEarlier(ctx, j, a)
	}
	res, err := h.s.execute(ctx, a.Job.job, run, a.Job.claim) // the won claim's span: every claim sets it
	out := runner.Result{
		Token: res.Token, Attempt: res.Attempt, Status: runner.Status(res.Status),
		StartedAt: res.StartedAt, FinishedAt: res.FinishedAt, Error: res.Error, Output: res.Output,
	}
	out.RetryIn, out.Retry = a.Job.job.retryIn(run.Slot, run.Attempt, err, h.s.now)
	return out
}

func (h host) Missed(ctx context.Context, a *attempt, late time.Duration) {
	h.s.log.LogAttrs(ctx, slog.LevelWarn, "slot missed: too late to run",
		slog.String("job", a.Name), slog.Time("slot", a.SlotTime()), slog.Duration("late", late), slog.Duration("max_late", a.Job.job.opt.MaxLate))
	h.s.emit(Event{Kind: EventSlotSkipped, Job: a.Name, Slot: a.SlotTime(), Status: StatusMissed, Lateness: late})
}

func (h host) Retrying(ctx context.Context, a *runner.Leased[slotRun], res *runner.Result) {
	h.s.log.LogAttrs(ctx, slog.LevelWarn, "run failed; retrying",
		slog.String("job", a.Name), slog.Time("slot", a.SlotTime()), slog.Int("attempt", res.Attempt),
		slog.Duration("backoff", res.RetryIn), slog.String("error", res.Error))
	h.s.emit(Event{Kind: EventRetry, Job: a.Name, Slot: a.SlotTime(), Attempt: res.Attempt, Status: Status(res.Status), Duration: res.RetryIn})
}

func (h host) Settled(ctx context.Context, a *attempt, st runner.Status) {
	h.s.log.LogAttrs(ctx, slog.LevelInfo, "slot not run",
		slog.String("job", a.Name), slog.Time("slot", a.SlotTime()), slog.String("status", string(st)))
	h.s.emit(Event{Kind: EventSlotSkipped, Job: a.Name, Slot: a.SlotTime(), Status: Status(st), Lateness: h.s.now().Sub(a.SlotTime())})
}

func (h host) StoreError(ctx context.Context, op string, a *attempt, err error) {
	if op == "Claim" && errors.Is(err, ErrEarly) {
		h.s.claimedEarly(ctx, a.Name, a.SlotTime(), err)
		return
	}
	h.s.storeError(ctx, op, a.Name, a.SlotTime(), err)
}
