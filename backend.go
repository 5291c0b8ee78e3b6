package anarchon

import (
	"context"
	"math"
	"strconv"
	"time"
)

// Forever is the DedupeWindow of a backend that remembers every claimed run
// for good (SPEC §4). It is the largest time.Duration.
const Forever time.Duration = math.MaxInt64

// Backend is the store that instances share. Its one rule (SPEC §2): for one
// job and one slot, Claim returns true for exactly one instance.
//
// Every method that does I/O takes a context first. Errors a backend returns
// reach the caller unchanged (wrapped with %w at most); a backend translates
// native errors at its boundary and keeps the native one reachable with
// errors.Unwrap. Losing a claim race is a result (false), not an error.
//
// More abilities are separate, optional interfaces found by type assertion
// (the database/sql/driver way): [JobChecker], [ClaimRecorder],
// [LeaseBackend], [Watcher], [ServerClock]. A backend written against this
// interface keeps compiling when members are added (SPEC §9).
type Backend interface {
	// Name is a short name for logs and metrics, e.g. "memory", "postgres".
	Name() string
	// DedupeWindow is how long a claimed run is remembered. Forever if always.
	// The scheduler refuses jobs whose Jitter+MaxLate (and catch-up window)
	// is not below it (SPEC §4).
	DedupeWindow() time.Duration
	// Init connects and checks the server. The scheduler calls it in Start,
	// and before reads (History) on a scheduler that was not started. It must
	// be safe to call more than once and from several goroutines.
	Init(ctx context.Context) error
	// PrepareJob does one-time per-job setup (a table, stream or keys). It is
	// called once per job by Start and must be idempotent across instances
	// starting at once.
	PrepareJob(ctx context.Context, job string, historySize int) error
	// Claim atomically records that in.InstanceID runs (in.Job, in.Slot).
	// It returns true for exactly one instance per (job, slot); a repeat of
	// the winning call with the same in.Token returns true again, any other
	// token false (SPEC §4, repeat safety).
	Claim(ctx context.Context, in ClaimInput) (bool, error)
	// RecordManualRun records a RunNow run, without deduplication. It returns
	// the slot it used (Unix ms), which may differ from in.Slot if the store
	// needs a unique one; returning in.Slot is always correct.
	RecordManualRun(ctx context.Context, in ClaimInput) (slot int64, err error)
	// SaveResult stores how a run ended and trims the job's history to
	// historySize records (<= 0: DefaultHistorySize) and, if historyTTL > 0,
	// to records younger than historyTTL, measured from when each record
	// was saved (store clock). Trimming must never reopen a slot inside
	// DedupeWindow.
	SaveResult(ctx context.Context, job string, r StoredResult, historySize int, historyTTL time.Duration) error
	// History returns at most limit recent runs of job from all instances,
	// newest first (by slot, then by start). limit <= 0 means the backend's
	// whole retained history. Use [BuildHistory] to build it, passing
	// results in the order they were saved (a later save of a token wins).
	History(ctx context.Context, job string, limit int) ([]RunRecord, error)
	// Close releases what the backend opened itself (never a client the
	// caller passed in). After Close, methods return an error wrapping
	// ErrClosed; a second Close returns nil.
	Close(ctx context.Context) error
}

// ClaimInput is what an instance sends to claim a run.
// New fields may be added; a backend may ignore fields it does not know.
type ClaimInput struct {
	Job         string        // job name, the job's identity across instances
	Slot        int64         // scheduled time, Unix milliseconds; (Job, Slot) is the run's identity
	Token       string        // random value unique to this claim attempt (repeat safety)
	InstanceID  string        // the claiming instance
	HistorySize int           // records of history to keep for the job
	HistoryTTL  time.Duration // how long to keep history records; 0 = no limit
}

// Status is how a run ended, or why a slot did not run. Stored as its string
// value.
type Status string

// Run statuses. Backends store these strings verbatim; readers must accept
// values they do not know (SPEC §9).
const (
	StatusRunning     Status = "running"     // claimed, no result yet
	StatusSuccess     Status = "success"     // the handler returned nil
	StatusError       Status = "error"       // the handler returned an error, panicked or timed out
	StatusLeaseLost   Status = "lease_lost"  // the run lost its lease; a backup owns the slot
	StatusHandedOver  Status = "handed_over" // the instance stopped and released the run to a backup
	StatusUnconfirmed Status = "unconfirmed" // the handler ended but the store never confirmed the finish; the slot may run again
	StatusAbandoned   Status = "abandoned"   // takeovers used up MaxAttempts
	StatusMissed      Status = "missed"      // the slot was more than MaxLate past due (or outside catch-up)
	StatusSkipped     Status = "skipped"     // another run of the job was still running (overlap policy skip)
)

// Final reports whether s settles a slot: no further attempt will run it.
func (s Status) Final() bool {
	switch s {
	case StatusSuccess, StatusError, StatusAbandoned, StatusMissed, StatusSkipped:
		return true
	}
	return false
}

// StoredResult is what SaveResult stores for a run.
type StoredResult struct {
	Slot       int64     // Unix ms
	Token      string    // the claim's token; matches the ClaimRecord
	InstanceID string    // who ran it
	Attempt    int       // 1 for the first holder, +1 per takeover; 1 without leases
	Status     Status    // how it ended; never empty
	StartedAt  time.Time // handler start (zero for slots that did not run)
	FinishedAt time.Time // handler end
	Error      string    // error text, "" on success
	Output     string    // optional tail of the run's output (the daemon keeps a few KiB)
	Manual     bool      // a RunNow run
}

// ClaimRecord is a claim as a backend keeps it, one of the inputs of
// [BuildHistory].
type ClaimRecord struct {
	Slot       int64     // Unix ms
	Token      string    // the claim's token
	InstanceID string    // the claimer
	ClaimedAt  time.Time // by the store's clock where it has one
	Attempt    int       // 0 is read as 1
	Manual     bool      // recorded by RecordManualRun
}

// RunRecord is one run in a job's history, as History returns it.
// New fields may be added (SPEC §9).
type RunRecord struct {
	Job        string
	Slot       time.Time // the scheduled time (UTC)
	InstanceID string
	Token      string
	Attempt    int
	Status     Status // StatusRunning while no result is stored
	ClaimedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	Error      string
	Output     string
	Manual     bool
}

// JobLimits describes a job to [JobChecker] and to the scheduler's own
// dedupe-window check (SPEC §5). New fields may be added.
type JobLimits struct {
	Job           string
	Jitter        time.Duration
	MaxLate       time.Duration
	CatchUpWindow time.Duration // 0 without catch-up
	Lease         time.Duration // 0 without leases
	Overlap       OverlapPolicy
	HistorySize   int
	HistoryTTL    time.Duration
	Interval      time.Duration // the interval of an interval job; 0 for cron
}

// JobChecker is an optional Backend interface: CheckJob rejects a job this
// backend cannot run safely. The scheduler calls it when a job is added and
// returns its error wrapped in a [ValidationError] with [CodeBackendRefused].
// Without it every job that passes the scheduler's own checks is accepted.
type JobChecker interface {
	CheckJob(JobLimits) error
}

// ClaimRecorder is an optional Backend interface for backends whose Claim is
// not itself a history record: the scheduler calls RecordClaim after a won
// claim, before the handler starts. Without it the claim is assumed to be
// recorded by Claim.
type ClaimRecorder interface {
	RecordClaim(ctx context.Context, in ClaimInput) error
}

// LeaseBackend is an optional Backend interface: the backend supports leases
// (SPEC §6), which give backups, overlap protection, catch-up and hand-over.
// Without it, jobs that ask for those are refused with [CodeNeedsRunStore].
type LeaseBackend interface {
	Runs() RunStore
}

// OutcomeKind is the kind of a lease claim's result (SPEC §6). Kinds may be
// added; the scheduler treats a kind it does not know like OutcomeDone.
type OutcomeKind int

// Lease claim outcomes, SPEC §6.
const (
	OutcomeWon     OutcomeKind = iota + 1 // the caller holds the lease and runs the slot
	OutcomeRunning                        // another instance holds a live lease; stand by
	OutcomeDone                           // the slot is settled (done or abandoned)
	OutcomeOverlap                        // another slot of the job is running; the slot is now skipped
	OutcomeNone                           // the slot was missed or skipped earlier
	OutcomeLate                           // store clock > slot + MaxLate; the slot is now missed
)

var outcomeNames = [...]string{"", "won", "running", "done", "overlap", "none", "late"}

// String returns the outcome's lower-case name ("won", "running", …), or
// "unknown(N)".
func (k OutcomeKind) String() string {
	if k > 0 && int(k) < len(outcomeNames) {
		return outcomeNames[k]
	}
	return "unknown(" + strconv.Itoa(int(k)) + ")"
}

// ClaimOutcome is the result of [RunStore.Claim].
type ClaimOutcome struct {
	Kind       OutcomeKind
	Attempt    int       // won: the caller's attempt number; running: the holder's; overlap: optional, the running slot's
	Holder     string    // running: the instance holding the lease; overlap: optional, the running slot's holder
	LeaseUntil time.Time // won/running: lease expiry by the store's clock; overlap: optional
	Status     Status    // done: the settled status if the store knows it
}

// RunClaim is a lease claim: a ClaimInput plus the lease rules of SPEC §6.
// New fields may be added.
type RunClaim struct {
	ClaimInput
	Lease        time.Duration // the lease to grant on a win (store clock); must be > 0
	MaxLate      time.Duration // an absent slot whose store time is past Slot+MaxLate is missed; 0 = no limit
	AllowOverlap bool          // false: refuse (skip) while another slot of the job is running with a live lease
	MaxAttempts  int           // attempts a slot may use before it is abandoned; <= 0 means 1
}

// RunState is the stored state of a run under leases (SPEC §6).
type RunState string

// Run states, SPEC §6.
const (
	RunStateRunning  RunState = "running"
	RunStateReleased RunState = "released"
	RunStateDone     RunState = "done"
	RunStateMissed   RunState = "missed"
	RunStateSkipped  RunState = "skipped"
)

// ActiveRun is an unfinished run (running or released), as [RunStore.Active]
// lists it.
type ActiveRun struct {
	Slot       int64 // Unix ms
	Token      string
	InstanceID string
	Attempt    int
	State      RunState  // RunStateRunning or RunStateReleased
	LeaseUntil time.Time // by the store's clock
	Live       bool      // running with LeaseUntil after the store's now
}

// RunStore keeps the per-slot runs that leases need (SPEC §6). All times are
// judged by the store's clock. Every method is atomic on the store.
//
// A RunStore need not write history: the scheduler records every outcome
// through Backend.SaveResult — runs it executed under their claim's token,
// slots it found late or overlapping under the token of the claim that
// settled them, and an abandoned slot under [AbandonedToken]. A store that
// does record these states itself must use those tokens, so that
// BuildHistory merges the two records into one.
//
// Repeats are answered as the first call was: Finish of a run the token
// already finished, and Release of a run it already released, return true.
type RunStore interface {
	// Claim decides per SPEC §6's table, first match wins.
	Claim(ctx context.Context, c RunClaim) (ClaimOutcome, error)
	// Heartbeat extends the lease to store-now+lease if token holds the run
	// and it is running. false means the lease is lost.
	Heartbeat(ctx context.Context, job string, slot int64, token string, lease time.Duration) (bool, error)
	// Finish marks the run done with status if token holds it (running, or
	// released by the same token). false if another token holds the slot or
	// the slot was abandoned; a repeat by the token that finished it is true.
	Finish(ctx context.Context, job string, slot int64, token string, status Status) (bool, error)
	// Release ends token's live lease at once (state released) so a backup
	// takes over. false if token does not hold a running lease.
	Release(ctx context.Context, job string, slot int64, token string) (bool, error)
	// Active lists the job's unfinished runs (running or released), oldest
	// slot first.
	Active(ctx context.Context, job string) ([]ActiveRun, error)
}

// ResultFinisher is an optional interface of a RunStore that folds Finish
// and Backend.SaveResult into one store round trip. FinishResult marks the
// run (job, r.Slot) done with r.Status if r.Token holds it (running, or
// released by the same token), exactly as Finish would, and stores r as
// SaveResult would, trimming history the same way. If r.Token no longer
// holds the run, it stores r with Status replaced by StatusLeaseLost and
// returns false. r.Status is never empty and r.Manual is false (a RunNow
// run holds no lease); a backend may refuse either with an error. Without
// it the scheduler calls Finish, then SaveResult.
type ResultFinisher interface {
	FinishResult(ctx context.Context, job string, r StoredResult, historySize int, historyTTL time.Duration) (bool, error)
}

// AbandonedToken is the token under which an abandoned slot (Unix ms) is
// recorded in history: "abandoned-<slot>". Every backup that sees a slot
// abandoned saves its record under it, and so may the store, so that
// history shows the abandonment once.
func AbandonedToken(slot int64) string { return "abandoned-" + strconv.FormatInt(slot, 10) }

// RunEventKind says what happened to a run in a [RunEvent].
type RunEventKind int

// Run event kinds.
const (
	RunReleased RunEventKind = iota + 1 // a lease was released (hand-over)
	RunFinished                         // a run was finished or settled
)

// RunEvent is a change to a run that may let a standing-by instance act.
type RunEvent struct {
	Job  string
	Slot int64 // Unix ms
	Kind RunEventKind
}

// Watcher is an optional interface of a RunStore (or of the Backend): it
// wakes standing-by instances as soon as a lease is released or a run
// finished, instead of waiting for the next poll (SPEC §6). PostgreSQL uses
// LISTEN/NOTIFY, Redis pub/sub, NATS a KV watch.
//
// WatchRuns delivers events for every job of the store until ctx ends or the
// watch breaks; then the channel is closed and the scheduler falls back to
// polling and watches again. Every change made after WatchRuns returns must
// be delivered (a backend whose subscription is confirmed asynchronously
// waits for the confirmation before returning). Events may be lost or repeated: they are hints,
// and the scheduler always re-claims to learn the truth.
type Watcher interface {
	WatchRuns(ctx context.Context) (<-chan RunEvent, error)
}

// ServerClock is an optional interface of a Backend or RunStore whose server
// has a clock (SQL now(), Redis TIME, NATS server times). The scheduler
// reads it at Start and periodically to estimate its offset from the store's
// clock, NTP-style (half the round trip).
type ServerClock interface {
	ServerTime(ctx context.Context) (time.Time, error)
}
