package anarchon

import (
	"context"
	"time"
)

// Tracer is told when each claim and each run of a scheduler begins and
// ends, with a context in which to carry a span: set it in
// [Options.Tracer]. The otelanarchon module implements it with
// OpenTelemetry. Unlike [Options.OnEvent] it sees the contexts: the claim's
// store calls get the context StartClaim returns, and the handler's context
// is the one [ClaimSpan.StartRun] returns, so that a span started there is
// the parent of whatever the handler traces. Claims sent in one batch
// ([BatchClaimer], [RunBatchClaimer]) each have their span, started and
// ended around the one store call, which gets the scheduler's context:
// one call cannot carry several spans.
//
// Its methods are called on the slot's goroutine (for a batch, the
// batch's), synchronously; they must be quick and must not call back into
// the Scheduler.
type Tracer interface {
	// StartClaim is called before the scheduler asks the store for a slot:
	// a plain claim, each lease claim (a backup standing by claims again
	// after every wait, each time with a new call), and the record of a
	// manual run (RunNow, or a trigger request this instance won). The
	// returned span's End is called once, when the store has answered or
	// failed.
	StartClaim(ctx context.Context, c ClaimStart) (context.Context, ClaimSpan)
}

// ClaimSpan is a claim in progress, as a [Tracer] returned it.
type ClaimSpan interface {
	// End is called once with the claim's answer.
	End(ClaimEnd)
	// StartRun is called after End when the claim was won (or, for a
	// manual run, recorded), just before the handler starts; ctx is the
	// handler's context (it carries the run's cancellation), and the
	// context returned becomes the handler's. The RunSpan's End is called
	// once when the handler returned.
	StartRun(ctx context.Context, run *Run) (context.Context, RunSpan)
}

// RunSpan is a run in progress, as a [ClaimSpan] returned it.
type RunSpan interface {
	// End is called once when the handler returned.
	End(RunEnd)
}

// ClaimStart describes a claim about to be sent.
// New fields may be added.
type ClaimStart struct {
	Job        string
	Slot       time.Time     // the slot, UTC
	InstanceID string        // this instance
	Leased     bool          // a lease claim through the RunStore
	Manual     bool          // the record of a manual run (RunNow, Trigger), not a claim of a scheduled slot
	Lateness   time.Duration // the store's time now minus Slot (0 for a manual run)
}

// ClaimEnd is a claim's answer.
// New fields may be added.
type ClaimEnd struct {
	// Outcome is "won" or "lost" for a plain claim, the [OutcomeKind] name
	// for a lease claim ("won", "running", "done", …), "manual" for a
	// recorded manual run (RunNow, Trigger), and "" when the store call failed (then Err is
	// set).
	Outcome string
	// Attempt is the attempt the answer names (the caller's on a win, the
	// holder's while another instance runs); 1 for plain claims.
	Attempt int
	// Err is the store's error, nil when it answered.
	Err error
}

// RunEnd is how a handler ended.
// New fields may be added.
type RunEnd struct {
	Status     Status // StatusSuccess or StatusError
	StartedAt  time.Time
	FinishedAt time.Time
	Lateness   time.Duration // StartedAt minus the slot (store clock); 0 for a manual run
	Err        error         // the handler's error; see EventRunEnd for the cause it wraps
}

// nopSpan is the span of a scheduler without a Tracer.
type nopSpan struct{}

func (nopSpan) End(ClaimEnd) {}
func (nopSpan) StartRun(ctx context.Context, _ *Run) (context.Context, RunSpan) {
	return ctx, nopRunSpan{}
}

type nopRunSpan struct{}

func (nopRunSpan) End(RunEnd) {}

// startClaim opens the Tracer's claim span, if there is a Tracer.
func (s *Scheduler) startClaim(ctx context.Context, j *job, slot time.Time, leased, manual bool) (context.Context, ClaimSpan) {
	t := s.opts.Tracer
	if t == nil {
		return ctx, nopSpan{}
	}
	c := ClaimStart{Job: j.name, Slot: slot, InstanceID: s.opts.InstanceID, Leased: leased, Manual: manual}
	if !manual {
		c.Lateness = s.now().Sub(slot)
	}
	cctx, span := t.StartClaim(ctx, c)
	if span == nil {
		return cctx, nopSpan{}
	}
	return cctx, span
}

// outcomeName names a lease claim's answer for ClaimEnd: "" on an error.
func outcomeName(out ClaimOutcome, err error) string {
	if err != nil {
		return ""
	}
	return out.Kind.String()
}
