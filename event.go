package anarchon

import "time"

// EventKind is the kind of an [Event].
type EventKind int

// Event kinds.
const (
	// EventClaim: a claim was answered. Outcome is "won", "lost" (plain
	// claims), a lease OutcomeKind's name, or "early" when the store
	// refused the claim because its clock had not reached the slot (Err
	// is the *EarlyError; SPEC §4, never early); Lateness is how late
	// after the slot the claim was sent (store clock). Retry is set on a
	// won lease claim of an attempt that ran the slot's handler on this
	// instance before, which failed and set up the retry this claim wins
	// (JobOptions.Retry): this instance's own retry. A later attempt
	// won without it is a retry another instance set up or a takeover of
	// a run that did not finish (its holder stopped, died or lost its
	// lease): the claim's answer does not say how the attempt before
	// ended, the slot's history does (that attempt's record is its
	// error for a retry; lease_lost or handed_over for a takeover).
	EventClaim EventKind = iota + 1
	// EventRunEnd: a handler returned. Status and Duration are set; Err is
	// the handler's error. When the handler returned a context error
	// because its context was cancelled, Err also wraps the cancellation's
	// cause (its text adds "(cause: …)", as the stored result's does), so
	// that errors.Is tells ErrStopped (Stop hands the run over, or a plain
	// one is interrupted), ErrLeaseLost, ErrReplaced and ErrTimeout apart.
	// For a failed run of a job with JobOptions.Retry, Retry says whether
	// a further attempt of the slot follows, RetryIn after how long, and
	// Reason says so in words (SPEC §6, retries).
	EventRunEnd
	// EventSlotSkipped: a slot was not run: Status is StatusMissed,
	// StatusSkipped or (leased jobs) StatusPaused, Lateness is set for
	// missed slots. Attempt is the won attempt that the scheduler
	// settled instead of running it (OverlapBufferOne, a takeover under
	// OverlapSkip or OverlapLimit: SPEC §6, overlap; a win found past
	// MaxLate: SPEC §3), 0 when the store settled the slot. A plain claim that a pause settled is
	// reported as a lost EventClaim.
	EventSlotSkipped
	// EventStoreError: a store call failed. Op names the call ("Claim",
	// "SaveResult", …) and Err is the error. Failed claims are not run (fail
	// closed).
	EventStoreError
	// EventClockOffset: the offset to the store's clock was measured; see
	// Offset. Op says why: "sync" (the periodic measure), "step" (the
	// local clock was seen to step), "early" (the store refused a claim
	// as early) or "late" (a won claim looked later than its MaxLate, which
	// a local clock step not yet seen would also cause).
	EventClockOffset
	// EventJobSetMismatch: the set of live instances in the registry whose
	// job set differs from this instance's changed (SPEC §10). JobSetDiffs
	// lists them, each compared with this instance (its Reference); it is
	// empty when every live instance runs the same job set again.
	EventJobSetMismatch
	// EventRetry: a handler failed and its slot will be run again by a
	// further attempt (JobOptions.Retry): Attempt is the failed attempt,
	// Status its status and Duration the backoff before the retry.
	EventRetry
	// EventBackfill: Scheduler.Backfill handled a slot: Outcome is "ran"
	// (this caller ran it; Status is its result) or "skipped" (settled
	// already, or run elsewhere).
	EventBackfill
)

// Event reports something the scheduler did, for metrics and tracing. It is
// delivered synchronously to [Options.OnEvent]; fields that do not apply to
// the kind are zero.
type Event struct {
	Kind     EventKind
	Job      string
	Slot     time.Time
	Attempt  int
	Outcome  string
	Status   Status
	Lateness time.Duration
	Duration time.Duration
	Op       string
	Err      error
	Offset   time.Duration
	Manual   bool // EventRunEnd: a manual run (RunNow, Trigger), which has no lease and no backup
	// Reason is, for EventSlotSkipped, the reason the scheduler wrote into
	// the slot's history record (Run history's Error, SPEC §12): a
	// catch-up's older slot, an overlap or buffer_one skip, a MaxLate
	// miss the store answered, a win found past MaxLate (a plain slot
	// late before its claim, or any claim answered late). It is "" when
	// the store wrote the record (a paused slot).
	//
	// For EventRunEnd of a failed run of a job that retries errors
	// (Retry.MaxRetries > 0, leased), it says whether the slot is run
	// again: "attempt 3 (of at most 4) follows in 2s", or "no retry: "
	// and why (the last attempt the retry limit allows, an error marked
	// Permanent, a retry that would reach the next slot, a run cut
	// short). It is "" for a success, a manual run, and a job without
	// retries. The history record does not carry it (SPEC §6, retries).
	Reason string
	// Retry is, for EventRunEnd, true when the failed run's slot will be
	// run again as a further attempt (JobOptions.Retry) after RetryIn, the
	// backoff by the store's clock; EventRetry follows once the failure
	// is stored. A lost lease or Stop after the handler returned can still
	// end the slot otherwise: their own lines and events say so.
	Retry   bool
	RetryIn time.Duration

	JobSetDiffs []JobSetDiff // EventJobSetMismatch only
}

func (s *Scheduler) emit(e Event) {
	if s.opts.OnEvent != nil {
		s.opts.OnEvent(e)
	}
}
