package anarchon

import "context"

// DefaultBatchSize is the most claims the scheduler sends in one batch to a
// [BatchClaimer] or [RunBatchClaimer] (SPEC §4, batches).
const DefaultBatchSize = 256

// BatchClaimer is an optional Backend ability: many plain claims in one
// call, so that the slots of a burst (many jobs due at one instant) cost
// the store a bounded number of round trips instead of one per slot.
//
// ClaimBatch answers in[i] with out[i], exactly as Claim(ctx, in[i]) would
// have answered alone: one winner per (job, slot) across every caller,
// whether it claims in batches or one at a time, the same repeat safety,
// never early (an early slot's answer carries an [*EarlyError]). The
// claims of one batch are independent: a batch need not be atomic as a
// whole, and one slot's refusal does not affect the others. len(out) must
// equal len(in). A non-nil error means no answer is known for any slot
// (the batch as a whole failed, e.g. the connection broke); the caller
// then treats every slot as a failed Claim.
//
// The scheduler sends at most [Options.BatchSize] ([DefaultBatchSize]
// unless set) claims per call, of any mix of jobs, for the slots due at
// one instant (or within [BatchWindow]); a slot due alone goes to Claim.
// A backend may split a batch further. Without this ability the scheduler
// calls Claim once per slot.
type BatchClaimer interface {
	ClaimBatch(ctx context.Context, in []ClaimInput) (out []ClaimAnswer, err error)
}

// ClaimAnswer is one slot's answer in [BatchClaimer.ClaimBatch]: Won and Err
// are what Claim would have returned for it.
type ClaimAnswer struct {
	Won bool
	Err error
}

// RunBatchClaimer is an optional [RunStore] ability: many lease claims in
// one call. ClaimRuns answers in[i] with out[i] exactly as
// RunStore.Claim(ctx, in[i]) would have answered alone (SPEC §6's table,
// applied to each claim in turn), with the same rules as
// [BatchClaimer.ClaimBatch]: independent answers, len(out) == len(in), and
// a non-nil error only when no answer is known.
type RunBatchClaimer interface {
	ClaimRuns(ctx context.Context, in []RunClaim) (out []RunClaimAnswer, err error)
}

// RunClaimAnswer is one slot's answer in [RunBatchClaimer.ClaimRuns]:
// Outcome and Err are what RunStore.Claim would have returned for it.
type RunClaimAnswer struct {
	Outcome ClaimOutcome
	Err     error
}

// HeartbeatBatcher is an optional [RunStore] ability: many heartbeats in
// one call, so that the runs of a burst, whose renewals come due together,
// cost one round trip per batch instead of one per run. Heartbeats
// answers in[i] with out[i] exactly as RunStore.Heartbeat(ctx, in[i])
// would have answered alone (SPEC §6): independent answers, len(out) ==
// len(in), and a non-nil error only when no answer is known.
//
// The scheduler gathers the heartbeats that come due within
// [BatchWindow] of each other, at most [Options.BatchSize] per call, and
// sends them with the earliest safe end among them as the call's
// deadline; a heartbeat due alone goes in a batch of one.
type HeartbeatBatcher interface {
	Heartbeats(ctx context.Context, in []HeartbeatInput) (out []HeldAnswer, err error)
}

// HeldAnswer is one run's answer in [HeartbeatBatcher.Heartbeats] and
// [FinishBatcher.FinishResults]: Held and Err are what the single call
// would have returned (true: the token still held the run).
type HeldAnswer struct {
	Held bool
	Err  error
}

// ResultBatcher is an optional Backend ability: many results in one call,
// so that the runs of a burst, which end together, cost one round trip
// per batch to record. SaveResults stores in[i] exactly as
// SaveResult(ctx, in[i]) would have alone and answers its error in
// errs[i]: independent entries, len(errs) == len(in), and a non-nil err
// only when nothing is known of any entry (the caller then retries them
// as failed single calls; SaveResult is idempotent per token).
//
// The scheduler sends through it the results of plain runs as their
// handlers end, gathered within [BatchWindow], at most
// [Options.BatchSize] a call; other records (settled slots, retries,
// hand-overs) go alone through SaveResult.
type ResultBatcher interface {
	SaveResults(ctx context.Context, in []SaveResultInput) (errs []error, err error)
}

// ClaimRecordBatcher is an optional ability of a [ClaimRecorder]: many
// RecordClaim calls in one, so that the won claims of a burst cost one
// round trip per batch to enter in the history instead of one each.
// RecordClaims records in[i] exactly as RecordClaim(ctx, in[i]) would have
// alone (a repeat of a token records nothing more) and answers its error
// in errs[i], with the rules of [ResultBatcher]: independent entries,
// len(errs) == len(in), and a non-nil err only when nothing is known of
// any entry.
//
// The scheduler sends through it the claims it won in one
// [BatchClaimer.ClaimBatch] call, at most [Options.BatchSize], before it
// starts their handlers; a claim won alone goes to RecordClaim. It uses
// the ability only on the value that is the ClaimRecorder.
type ClaimRecordBatcher interface {
	RecordClaims(ctx context.Context, in []ClaimInput) (errs []error, err error)
}

// FinishBatcher is an optional [RunStore] ability, next to
// [ResultFinisher]: many FinishResult calls in one. FinishResults answers
// in[i] with out[i] exactly as FinishResult(ctx, in[i]) would have
// answered alone (Held: the token still held the run), with the rules of
// [ResultBatcher]. The scheduler sends through it the finishes of leased
// runs whose handlers end within [BatchWindow] of each other; it uses it
// only when the RunStore is a ResultFinisher too.
type FinishBatcher interface {
	FinishResults(ctx context.Context, in []SaveResultInput) (out []HeldAnswer, err error)
}
