package anarchon

import (
	"context"
	"time"
)

// Handler is a job's work. ctx is cancelled when the job's Timeout elapses
// (cause [ErrTimeout]), when its lease is lost (cause [ErrLeaseLost]), when
// a later slot replaces it (OverlapReplace, cause [ErrReplaced]) or when
// the scheduler's Stop deadline passes (cause [ErrStopped]); read the cause
// with [context.Cause]. A returned error is recorded as the run's error; a
// panic is recovered and recorded the same way. With JobOptions.Retry, an
// error is retried unless the handler marks it with [Permanent] (returned,
// or given to panic).
type Handler func(ctx context.Context, run *Run) error

// Run describes the run a handler is executing.
type Run struct {
	Job        string    // the job name
	Slot       time.Time // the scheduled time (UTC); for manual runs, when RunNow was called
	InstanceID string    // this instance
	Token      string    // the claim's token, unique to this attempt
	// Attempt is 1 for the first holder of the slot and grows by one with
	// each takeover by a backup and with each retry (JobOptions.Retry). Pass it with Slot to a downstream system as
	// a fencing number: a write tagged (slot, attempt) older than one already
	// seen for the same slot comes from a holder that lost its lease and is
	// rejected.
	//
	// Attempt fences only as long as the store keeps what it acknowledged.
	// A store that lost its data (Redis flushed or restarted without
	// persistence, a NATS bucket deleted or its disk lost, a SQLite file
	// replaced, a PostgreSQL restored from an older backup, or failed over
	// to an asynchronous standby that had not received the claims the old
	// primary acknowledged) numbers the slot's next holder 1 again, the
	// same number the holder from before the loss may still be using:
	// Attempt cannot tell them apart (SPEC §6, "Stores that forget").
	// pgbackend warns at Init when its server has such a standby.
	Attempt int
	// Fence is the fencing token of a leased run: a number the store
	// took from its own counter when it granted this attempt's claim,
	// larger than that of every earlier holder of any slot of the job
	// the store acknowledged (SPEC §6, "Fencing"). Unlike Attempt it
	// also orders holders of different slots, and retries and
	// takeovers alike: a downstream system that keeps the largest
	// Fence it has accepted per job and refuses smaller ones never
	// takes a write from a holder that a later claim superseded.
	//
	// It holds exactly as far as the store keeps what it acknowledged:
	// on a store that loses acknowledged claims (see Attempt) the next
	// holder can be given a fence an earlier holder still carries. Each
	// backend's "# Guarantees" says which topologies keep it. 0 for
	// plain runs (a plain claim has one holder and no lease to lose)
	// and on stores that give no fences.
	Fence  uint64
	Manual bool // started by RunNow or Trigger
	// TriggerKey and TriggeredBy are set on a run started by Trigger: the
	// request's key and who asked.
	TriggerKey, TriggeredBy string

	output string
}

// SetOutput keeps s as the run's output in its history record
// (RunRecord.Output), e.g. the tail of a command's output. Keep it short
// (a few KiB): stores hold it beside every record. Call it before the
// handler returns; the last call wins.
func (r *Run) SetOutput(s string) { r.output = s }

// OverlapPolicy says what happens when a slot comes due while an earlier run
// of the same job is still running (on any instance). Policies need a
// backend with a RunStore, except the default on a backend without one.
// More policies may be added.
type OverlapPolicy int

const (
	// OverlapDefault is OverlapSkip on a backend with a RunStore. On a
	// backend without one, overlap cannot be detected across instances and
	// the job runs as with OverlapAllow.
	OverlapDefault OverlapPolicy = iota
	// OverlapSkip skips a slot while another run of the job holds a live
	// lease; the slot is recorded as skipped. A backup that takes over a
	// crashed run, or a retry, after a later slot has started is skipped
	// the same way (SPEC §6, overlap). Kubernetes calls this
	// concurrencyPolicy Forbid, Temporal's schedules ScheduleOverlapPolicy
	// Skip.
	OverlapSkip
	// OverlapAllow runs every slot even while earlier ones still run.
	// Kubernetes: Allow; Temporal: AllowAll.
	OverlapAllow
	// OverlapBufferOne makes a slot that comes due while an earlier run of
	// the job holds a live lease wait for it, then run; a slot that comes
	// due while one is already waiting is skipped (recorded skipped).
	// Temporal: BufferOne. The waiting slot is claimed (and its lease
	// renewed) while it waits, so it runs once and a backup takes it over
	// like any run; it starts within Options.PollInterval of the end of
	// the run it waits for. See SPEC §6, overlap.
	OverlapBufferOne
	// OverlapLimit runs a slot while fewer than JobOptions.OverlapLimit
	// other runs of the job hold live leases, across the cluster, and
	// skips it (recorded skipped) otherwise. The count is made by the
	// store in the same atomic step as the claim, so two instances
	// claiming different slots at once never both pass the limit. A
	// takeover or a retry is held to the limit too (SPEC §6, overlap).
	// OverlapLimit with a limit of 1 is OverlapSkip. Kubernetes has no
	// equivalent (parallelism is per Job, not per CronJob); Temporal's
	// schedules neither. See SPEC §6, overlap.
	OverlapLimit
	// OverlapReplace makes a slot that comes due while earlier runs of
	// the job hold leases replace them, on whichever instances hold them:
	// the slot's holder asks the store to settle every earlier running
	// (or released) run of the job as replaced ([Replacer], in one atomic
	// step), each holder cancels its handler's context with cause
	// [ErrReplaced] at its next heartbeat (at once with a store that has
	// a [Watcher]) and records the run with StatusReplaced, and the new
	// slot starts once every replaced holder has recorded its end, or
	// when the last of their leases would have run out (at most Lease
	// after the request), whichever comes first; the new slot's holder
	// looks for those ends in the history 10 ms after the request, then
	// at doubling intervals up to Options.PollInterval (the ends send no
	// store event), so with a Watcher, whose event ends the replaced
	// handlers at once, a new slot starts within tens of milliseconds of
	// its time even when the job's interval is shorter than
	// PollInterval. A replaced run held by the replacing instance itself
	// is cancelled by it at once, whatever the store. Without a Watcher
	// (the SQLite and MySQL stores) a replaced holder on another instance
	// learns of it only at its next heartbeat, every Lease/3, and the new
	// slot waits for that: with several instances, keep Lease/3 well below
	// the job's interval there, or a slot replaced while it waits starts
	// with its context already cancelled and does no work. A handler
	// that ignores
	// its cancelled context may therefore still run when the new slot
	// starts, as after a lost lease. Replaced runs are not retried and
	// no backup takes them over. It needs a RunStore with [Replacer]
	// (CodeNeedsRunStore otherwise). Kubernetes: Replace; Temporal:
	// CancelOther. See SPEC §6, overlap.
	OverlapReplace
)

// String returns "default", "skip", "allow", "buffer_one", "limit" or
// "replace".
func (p OverlapPolicy) String() string {
	switch p {
	case OverlapDefault:
		return "default"
	case OverlapSkip:
		return "skip"
	case OverlapAllow:
		return "allow"
	case OverlapBufferOne:
		return "buffer_one"
	case OverlapLimit:
		return "limit"
	case OverlapReplace:
		return "replace"
	}
	return "unknown"
}

// CatchUp configures the recovery of slots missed while every instance was
// down. It needs a backend with a RunStore.
type CatchUp struct {
	// Window is how far back Start looks for missed slots. 0 disables
	// catch-up. It must be below the backend's DedupeWindow.
	Window time.Duration
	// Max is how many missed slots inside Window are run, newest ones, run
	// oldest first. 0 means 1: only the latest missed slot runs. Slots in the
	// window beyond Max are recorded as missed. The window ends at Start,
	// so a slot that came due just before Start is the newest of them:
	// with Max 1 it is the one run (if no other instance claimed it) and
	// the older ones are recorded missed (SPEC §6).
	Max int
}

// Upper limits of job options; larger values are refused with CodeBadOption.
const (
	MaxHistorySize = 100_000
	MaxAttempts    = 1_000
	MaxCatchUp     = 10_000
	// MaxOverlapLimit bounds JobOptions.OverlapLimit: a store counts
	// the job's live runs in every claim.
	MaxOverlapLimit = 1_000
)

// MinMaxLate is the smallest JobOptions.MaxLate. A slot's lateness when it
// is claimed is never nothing: the timer's wake-up, BatchWindow, the
// estimate of the store's clock (which errs on the late side) and the
// way to the store add up to milliseconds on a quiet machine and to tens
// of them under load or with a remote store, so a MaxLate below this
// would have nearly every slot recorded missed.
const MinMaxLate = 100 * time.Millisecond

// Default job option values, used where a JobOptions field is zero.
const (
	DefaultMaxLate     = time.Minute
	DefaultHistorySize = 100
	DefaultLease       = 30 * time.Second
	DefaultMaxAttempts = 3
)

// JobOptions are per-job settings. A nil *JobOptions, and each zero field,
// means the default stated on the field. Negative durations are refused with
// [CodeNegativeDuration].
type JobOptions struct {
	// Zone is the IANA time zone a cron schedule is computed in, e.g.
	// "Europe/Athens". Defaults to "UTC". Interval jobs ("@every" ones
	// too) and one-off jobs are not computed in it, but an unknown zone,
	// or "Local", is refused with CodeUnknownZone whatever the schedule:
	// a misspelt zone would otherwise go unnoticed until the schedule
	// became a cron expression.
	Zone string
	// Offset moves an interval job's grid away from the Unix epoch: slots
	// are k·interval + Offset. Must be in [0, interval); refused on cron
	// jobs. Defaults to 0.
	Offset time.Duration
	// Jitter delays each slot's claim by a duration in [0, Jitter), spreading
	// the load of many jobs due at the same time. The delay is derived from
	// a hash of the job's name and the slot (and JitterSeed), so every
	// instance waits the same delay for a slot, and the delays are uniform
	// over slots: the start times do not depend on how many instances run
	// (SPEC §3). It counts against MaxLate, so it must be below MaxLate, and
	// below the interval of an interval job. Defaults to 0.
	Jitter time.Duration
	// JitterSeed is mixed into the hash that gives each slot its Jitter
	// delay, to choose another set of delays for the same job names. Every
	// instance must set it alike. Defaults to 0.
	JitterSeed uint64
	// MaxLate skips a slot that is more than MaxLate past due when an
	// instance gets to it (judged by the store's clock where the backend has
	// one), and again when a won claim's answer comes back: a first attempt
	// answered later than that is recorded missed without running (SPEC
	// §3). Defaults to DefaultMaxLate (1 minute). A value below MinMaxLate
	// is refused with CodeBadOption.
	MaxLate time.Duration
	// Timeout cancels the handler's context after this long (cause
	// ErrTimeout). Defaults to 0, no timeout. The run's status is what
	// the handler returns: one that returns its context's error is
	// recorded StatusError naming ErrTimeout; one that ignores the
	// cancellation and returns nil later is recorded StatusSuccess, with
	// its real duration (SPEC §12's status table).
	Timeout time.Duration
	// HistorySize is how many records of the job's history the store keeps.
	// Defaults to DefaultHistorySize (100).
	HistorySize int
	// HistoryTTL drops history records older than this. Defaults to 0, no
	// age limit.
	HistoryTTL time.Duration

	// Lease is the length of a run's lease on a backend with a RunStore; the
	// holder renews it every Lease/3. Defaults to DefaultLease (30 s). The
	// holder counts the lease from the send time of its last claim or
	// renewal the store accepted, by its own monotonic clock, and cancels
	// its handler (ErrLeaseLost) Lease/6 before that lease runs out, so
	// that it stops before a backup can win; a won claim answered after
	// that point is claimed again (which renews the lease, SPEC §6) before
	// the handler starts, and after 3 such answers in a row the attempt is
	// given up (recorded lease_lost): a lease too short for the store's
	// answers ends the slot abandoned. A holder process stalled for
	// longer than Lease/6 can still overlap its backup: see Run.Attempt.
	// Setting it on a backend without a RunStore is refused with
	// CodeNeedsRunStore.
	Lease time.Duration
	// NoLease makes the job use plain claims (SPEC §4) even on a backend with
	// a RunStore: no heartbeats, backups, overlap check or catch-up, and one
	// store round trip less per run. Every instance must set it alike for a
	// job: plain claims and lease claims of one slot do not see each other.
	NoLease bool
	// Overlap is the overlap policy. Defaults to OverlapDefault. It holds
	// the job's scheduled slots (and their retries and takeovers) against
	// one another; manual runs (RunNow, Trigger, a catch-up on Resume)
	// hold no lease and are not held off by it, nor counted by it (SPEC
	// §12).
	Overlap OverlapPolicy
	// OverlapLimit is how many runs of the job may hold live leases at
	// once, across the cluster, under OverlapLimit; it must be at least
	// 1 there, and 0 with every other policy (CodeBadOption). Defaults
	// to 0.
	OverlapLimit int
	// CatchUp recovers slots missed while every instance was down. Defaults
	// to none.
	CatchUp CatchUp
	// MaxAttempts is how many holders a slot may have (the first plus
	// takeovers) before it is recorded abandoned. Defaults to
	// DefaultMaxAttempts (3). Retries come on top: the store abandons a
	// slot after MaxAttempts + Retry.MaxRetries attempts.
	MaxAttempts int
	// PauseOnFailure pauses the job on every instance (SPEC §12) once its
	// last PauseOnFailure runs in the store's history, from any instance,
	// all failed (StatusError or StatusAbandoned), with a reason naming the
	// count and the last error. It needs a backend with JobControl
	// (CodeNeedsJobControl otherwise). Defaults to 0: never.
	PauseOnFailure int
	// Retry retries the slot after a handler error, as further attempts
	// of the same slot that any instance may take (see [Retry]). Defaults
	// to no retries. It needs a backend with a RunStore.
	Retry Retry
	// Fingerprint is extra material for the job's fingerprint in the
	// instance registry ([FingerprintJob], SPEC §10), e.g. the command a
	// daemon runs, so that instances that run the job differently are
	// reported. It changes nothing else. Defaults to "".
	Fingerprint string
}
