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
		BatchSize: s.batchSize(s.batcher != nil), LeaseBatchSize: s.batchSize(s.runBatcher != nil),
		ErrLeaseLost: ErrLeaseLost, ErrClosed: ErrClosed, ErrPermanent: ErrPermanent, ErrReplaced: ErrReplaced,
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
	return h.claimed(a, won, err)
}

// claimed ends a plain claim's span with its answer and emits its event.
func (h host) claimed(a *attempt, won bool, err error) (bool, error) {
	cs := a.Job.claim
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

// ClaimBatch claims as with one BatchClaimer call, or with Claim when
// there is one slot or the backend has no batches. Each slot has its
// Tracer span and its event, as a single claim has; the span's context
// does not reach the store, which gets one call for all of them.
func (h host) ClaimBatch(ctx context.Context, as []*attempt) []runner.PlainAnswer {
	out := make([]runner.PlainAnswer, len(as))
	if h.s.batcher == nil || len(as) == 1 {
		for i, a := range as {
			out[i].Won, out[i].Err = h.Claim(ctx, a)
		}
		return out
	}
	defer h.slowBatch(ctx, "ClaimBatch", len(as), time.Now())
	in := make([]ClaimInput, len(as))
	for i, a := range as {
		_, a.Job.claim = h.s.startClaim(ctx, a.Job.job, a.SlotTime(), false, false)
		in[i] = h.claimInput(a)
	}
	answers, err := h.s.batcher.ClaimBatch(ctx, in)
	if err == nil && len(answers) != len(in) {
		err = fmt.Errorf("anarchon: %s: ClaimBatch answered %d of %d claims", h.s.backend.Name(), len(answers), len(in))
	}
	for i, a := range as {
		won, aerr := false, err
		if err == nil {
			won, aerr = answers[i].Won, answers[i].Err
		}
		out[i].Won, out[i].Err = h.claimed(a, won, aerr)
	}
	return out
}

// slowBatch logs a batch of claims that took longer than SlowStoreCall.
func (h host) slowBatch(ctx context.Context, op string, n int, start time.Time) {
	if d := time.Since(start); d > SlowStoreCall {
		h.s.log.LogAttrs(ctx, slog.LevelWarn, "slow store call",
			slog.String("op", op), slog.Int("claims", n), slog.Duration("took", d))
	}
}

func (h host) RecordClaim(ctx context.Context, a *attempt) error {
	if h.s.recorder == nil {
		return nil
	}
	return h.s.recorder.RecordClaim(ctx, h.claimInput(a))
}

// RecordClaims records the won claims of one batch in one
// ClaimRecordBatcher call; ok is false when the store has no such call
// (the runner then records each claim alone). A failed call is every
// claim's error.
func (h host) RecordClaims(ctx context.Context, as []*attempt) (errs []error, ok bool) {
	if h.s.records == nil {
		return nil, false
	}
	defer h.slowBatch(ctx, "RecordClaims", len(as), time.Now())
	in := make([]ClaimInput, len(as))
	for i, a := range as {
		in[i] = h.claimInput(a)
	}
	errs, err := h.s.records.RecordClaims(ctx, in)
	if err == nil && len(errs) != len(in) {
		err = fmt.Errorf("anarchon: %s: RecordClaims answered %d of %d claims", h.s.backend.Name(), len(errs), len(in))
	}
	if err != nil {
		errs = make([]error, len(in))
		for i := range errs {
			errs[i] = err
		}
	}
	return errs, true
}

func (h host) ClaimLease(ctx context.Context, a *runner.Leased[slotRun]) (runner.Outcome, error) {
	return h.leaseClaim(ctx, a, h.s.runs.Claim)
}

// Reclaim is a backup's lease claim again: in a RunBatchClaimer call with
// the others sent within BatchWindow where the store has one.
func (h host) Reclaim(ctx context.Context, a *runner.Leased[slotRun]) (runner.Outcome, error) {
	if h.s.reclaims == nil {
		return h.ClaimLease(ctx, a)
	}
	return h.leaseClaim(ctx, a, func(ctx context.Context, c RunClaim) (ClaimOutcome, error) {
		ans, err := h.s.reclaims.Do(ctx, c)
		if err != nil {
			return ClaimOutcome{}, err
		}
		return ans.Outcome, ans.Err
	})
}

// leaseClaim sends a's lease claim with send, within its span.
func (h host) leaseClaim(ctx context.Context, a *runner.Leased[slotRun], send func(context.Context, RunClaim) (ClaimOutcome, error)) (runner.Outcome, error) {
	defer h.slow(ctx, "RunStore.Claim", &a.Attempt, time.Now())
	ctx, cs := h.s.startClaim(ctx, a.Job.job, a.SlotTime(), true, false)
	a.Job.claim = cs
	out, err := send(ctx, h.runClaim(a))
	return h.leaseClaimed(a, out, err)
}

func (h host) runClaim(a *runner.Leased[slotRun]) RunClaim {
	return RunClaim{
		ClaimInput:   h.claimInput(&a.Attempt),
		Lease:        a.Lease,
		MaxLate:      a.MaxLate,
		AllowOverlap: a.AllowOverlap,
		Limit:        a.Limit,
		MaxAttempts:  a.Job.job.opt.MaxAttempts + a.Job.job.opt.Retry.MaxRetries,
	}
}

// leaseClaimed ends a lease claim's span with its answer and converts it.
func (h host) leaseClaimed(a *runner.Leased[slotRun], out ClaimOutcome, err error) (runner.Outcome, error) {
	a.Job.claim.End(ClaimEnd{Outcome: outcomeName(out, err), Attempt: out.Attempt, Err: err})
	if err != nil {
		return runner.Outcome{}, err
	}
	// A kind this version does not know passes through: the run path
	// handles it like done (SPEC §9), and the event names it.
	return runner.Outcome{Kind: runner.Kind(out.Kind), Attempt: out.Attempt, Holder: out.Holder, LeaseUntil: out.LeaseUntil, Abandoned: out.Status == StatusAbandoned, Fence: out.Fence}, nil
}

// ClaimLeaseBatch is ClaimBatch for lease claims, with one
// RunBatchClaimer call.
func (h host) ClaimLeaseBatch(ctx context.Context, as []*runner.Leased[slotRun]) []runner.LeaseAnswer {
	out := make([]runner.LeaseAnswer, len(as))
	if h.s.runBatcher == nil || len(as) == 1 {
		for i, a := range as {
			out[i].Outcome, out[i].Err = h.ClaimLease(ctx, a)
		}
		return out
	}
	defer h.slowBatch(ctx, "ClaimRuns", len(as), time.Now())
	in := make([]RunClaim, len(as))
	for i, a := range as {
		_, a.Job.claim = h.s.startClaim(ctx, a.Job.job, a.SlotTime(), true, false)
		in[i] = h.runClaim(a)
	}
	answers, err := h.s.runBatcher.ClaimRuns(ctx, in)
	if err == nil && len(answers) != len(in) {
		err = fmt.Errorf("anarchon: %s: ClaimRuns answered %d of %d claims", h.s.backend.Name(), len(answers), len(in))
	}
	for i, a := range as {
		var o ClaimOutcome
		aerr := err
		if err == nil {
			o, aerr = answers[i].Outcome, answers[i].Err
		}
		out[i].Outcome, out[i].Err = h.leaseClaimed(a, o, aerr)
	}
	return out
}

func (h host) LeaseAnswered(ctx context.Context, a *runner.Leased[slotRun], out runner.Outcome) {
	// An attempt that ran the slot before (its handler failed and it
	// stood by for the retry) wins its own retry, not another's run.
	own := out.Kind == runner.KindWon && a.LastResult().Token != ""
	h.s.emit(Event{Kind: EventClaim, Job: a.Name, Slot: a.SlotTime(), Attempt: out.Attempt, Outcome: OutcomeKind(out.Kind).String(), Lateness: h.s.now().Sub(a.SlotTime()), Retry: own})
}

func (h host) LostCause(ctx context.Context, a *runner.Leased[slotRun]) error {
	return h.s.lostCause(ctx, a.Job.job, &a.Attempt)
}

func (h host) Heartbeat(ctx context.Context, a *runner.Leased[slotRun], lease time.Duration) (bool, error) {
	return h.s.runs.Heartbeat(ctx, HeartbeatInput{Job: a.Name, Slot: a.Slot, Token: a.Token, Lease: lease})
}

// Renew sends a's periodic heartbeat, in a HeartbeatBatcher call with the
// others due within BatchWindow where the store has one.
func (h host) Renew(ctx context.Context, a *runner.Leased[slotRun]) (bool, error) {
	if h.s.beats == nil {
		return h.Heartbeat(ctx, a, a.Lease)
	}
	ans, err := h.s.beats.Do(ctx, HeartbeatInput{Job: a.Name, Slot: a.Slot, Token: a.Token, Lease: a.Lease})
	if err != nil {
		return false, err
	}
	return ans.Held, ans.Err
}

func (h host) Release(ctx context.Context, a *attempt) error {
	_, err := h.s.runs.Release(ctx, ReleaseInput{Job: a.Name, Slot: a.Slot, Token: a.Token})
	return err
}

func (h host) Finish(ctx context.Context, a *attempt, st runner.Status) (bool, error) {
	h.s.firstWaves.wait(ctx, h.s.finishHold(a))
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

// FinishResult finishes a leased run at its handler's end, in a
// FinishBatcher call with the others ending within BatchWindow where the
// store has one.
func (h host) FinishResult(ctx context.Context, a *attempt, r *runner.Result) error {
	h.s.firstWaves.wait(ctx, h.s.finishHold(a))
	var err error
	if h.s.finishes == nil {
		_, err = h.s.finisher.FinishResult(ctx, h.result(a, r))
	} else {
		var ans HeldAnswer
		if ans, err = h.s.finishes.Do(ctx, h.result(a, r)); err == nil {
			err = ans.Err
		}
	}
	h.stored(ctx, a, r, err)
	return err
}

func (h host) SaveResult(ctx context.Context, a *attempt, r *runner.Result) error {
	err := h.s.backend.SaveResult(ctx, h.result(a, r))
	h.stored(ctx, a, r, err)
	return err
}

// SaveEnd saves a plain run's result at its handler's end, in a
// ResultBatcher call with the others ending within BatchWindow where the
// store has one.
func (h host) SaveEnd(ctx context.Context, a *attempt, r *runner.Result) error {
	if h.s.results == nil {
		h.s.bursts.wait(ctx, ResultHold)
		return h.SaveResult(ctx, a, r)
	}
	saveErr, err := h.s.results.Do(ctx, h.result(a, r))
	if err == nil {
		err = saveErr
	}
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
	*run = Run{Job: a.Name, Slot: a.SlotTime(), InstanceID: h.s.opts.InstanceID, Token: a.Token, Attempt: a.Number, Fence: a.Fence}
	if late, ok := h.wonLate(ctx, a); ok {
		why := fmt.Sprintf("the claim was won %s after the slot, beyond MaxLate %v (a slow store, a store failing over, or a MaxLate shorter than a claim's round trip): the handler did not run", runner.Lateness(late, a.MaxLate), a.MaxLate)
		if a.LateAtClaim {
			// Late before the claim was sent (a plain slot; a lease
			// store judges its own at the claim): said as a leased
			// slot's missed record says it.
			why = fmt.Sprintf("the claim came %s after the slot, beyond MaxLate %v: the slot was not run", runner.Lateness(late, a.MaxLate), a.MaxLate)
		}
		h.Missed(ctx, a, late, why)
		return runner.Result{Token: a.Token, Attempt: a.Number, Status: runner.StatusMissed, Error: why}
	}
	if j := a.Job.job; a.Leased && !a.Job.backfill && j.lateRetry(run.Slot, a.Number, h.s.now) {
		return runner.Result{Token: a.Token, Attempt: a.Number, Status: runner.StatusError,
			Error: fmt.Sprintf("attempt %d not run: it came after the job's next slot was due (overlap %s)", a.Number, j.opt.Overlap)}
	}
	if j := a.Job.job; a.Leased && a.Number > 1 && !a.Job.backfill {
		if limit := j.overlapLimit(); limit > 0 && h.s.takeoverOverlaps(ctx, j, a.Slot, limit) {
			why := fmt.Sprintf("attempt %d took over a run whose holder stopped while other runs of the job held live leases (overlap %s): recorded skipped instead of running beside them", a.Number, j.opt.Overlap)
			h.Settled(ctx, a, runner.StatusSkipped, why)
			return runner.Result{Token: a.Token, Attempt: a.Number, Status: runner.StatusSkipped, Error: why}
		}
	}
	if j := a.Job.job; j.opt.Overlap == OverlapBufferOne && a.Leased && !a.Job.backfill {
		if skip := h.s.bufferOne(ctx, j, a.Slot); skip {
			const why = "one run of the job was running and another already waited behind it (overlap buffer_one): the slot was not run"
			h.Settled(ctx, a, runner.StatusSkipped, why)
			return runner.Result{Token: a.Token, Attempt: a.Number, Status: runner.StatusSkipped, Error: why}
		}
	}
	if j := a.Job.job; j.opt.Overlap == OverlapReplace && a.Leased && !a.Job.backfill {
		h.s.replaceEarlier(ctx, j, a)
	}
	res, plan, _ := h.s.execute(ctx, a.Job.job, run, a.Job.claim) // the won claim's span: every claim sets it
	return runner.Result{
		Token: res.Token, Attempt: res.Attempt, Status: runner.Status(res.Status),
		StartedAt: res.StartedAt, FinishedAt: res.FinishedAt, Error: res.Error, Output: res.Output,
		Retry: plan.retry, RetryIn: plan.in,
	}
}

// wonLate reports how late a won first attempt is, and whether that is
// past its MaxLate by the store's clock (SPEC §3, step 3). The slot was
// judged on time before the claim was sent, and a lease store judges it
// again when the claim arrives; but the answer can come much later (a
// store failing over, a frozen server, a lock), and a handler started then
// would run a slot that every instance has given up as missed. So the
// lateness is checked once more when the answer is in, on every path that
// starts a handler: plain claims, leased claims, catch-up and one-off
// slots. A local clock step that the scheduler has not seen yet is ruled
// out before a slot is given up (Scheduler.lateBy). Takeovers and retries
// (attempt > 1) continue a run that began in time, and Backfill and
// adopted runs have no lateness limit (MaxLate 0).
func (h host) wonLate(ctx context.Context, a *attempt) (time.Duration, bool) {
	if a.Number > 1 || a.MaxLate <= 0 || a.Job.backfill {
		return 0, false
	}
	late := h.s.lateBy(ctx, a.SlotTime(), a.MaxLate)
	return late, late > a.MaxLate
}

// Missed reports a won attempt that Execute found too late to run, and
// recorded missed with why.
func (h host) Missed(ctx context.Context, a *attempt, late time.Duration, why string) {
	h.s.log.LogAttrs(ctx, slog.LevelWarn, "slot missed: too late to run",
		slog.String("job", a.Name), slog.Time("slot", a.SlotTime()), slog.Duration("late", late), slog.Duration("max_late", a.Job.job.opt.MaxLate))
	h.s.emit(Event{Kind: EventSlotSkipped, Job: a.Name, Slot: a.SlotTime(), Attempt: a.Number, Status: StatusMissed, Lateness: late, Reason: why})
}

func (h host) Retrying(ctx context.Context, a *runner.Leased[slotRun], res *runner.Result) {
	// The failure itself was logged as the handler returned ("run
	// failed"): this line says what comes of it.
	h.s.log.LogAttrs(ctx, slog.LevelInfo, "slot to be retried",
		slog.String("job", a.Name), slog.Time("slot", a.SlotTime()), slog.Int("failed_attempt", res.Attempt),
		slog.Duration("backoff", res.RetryIn))
	h.s.emit(Event{Kind: EventRetry, Job: a.Name, Slot: a.SlotTime(), Attempt: res.Attempt, Status: Status(res.Status), Duration: res.RetryIn})
}

// Settled and Missed log lines that cmd/anarchon drops by their messages
// (its eventLines), logging the same events with a reason instead.
func (h host) Settled(ctx context.Context, a *attempt, st runner.Status, why string) {
	attrs := []slog.Attr{slog.String("job", a.Name), slog.Time("slot", a.SlotTime()), slog.String("status", string(st))}
	if why != "" {
		attrs = append(attrs, slog.String("reason", why))
	}
	h.s.log.LogAttrs(ctx, slog.LevelInfo, "slot not run", attrs...)
	h.s.emit(Event{Kind: EventSlotSkipped, Job: a.Name, Slot: a.SlotTime(), Attempt: a.Number, Status: Status(st),
		Lateness: h.s.now().Sub(a.SlotTime()), Reason: why})
}

func (h host) StoreError(ctx context.Context, op string, a *attempt, err error) {
	if op == "Claim" && errors.Is(err, ErrEarly) {
		h.s.claimedEarly(ctx, a.Name, a.SlotTime(), err)
		return
	}
	h.s.storeError(ctx, op, a.Name, a.SlotTime(), err)
}
