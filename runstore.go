package anarchon

import (
	"context"
	"strconv"
	"time"
)

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

var outcomeNames = [...]string{"", "won", "running", "done", "overlap", "none", "late", "paused"}

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
	Attempt    int       // won: the caller's attempt number; running: the holder's; done: the last attempt's (abandoned: the attempts used, which the scheduler records on the abandoned record), 0 if unknown; overlap: optional, the running slot's
	Holder     string    // running: the instance holding the lease; overlap: optional, the running slot's holder
	LeaseUntil time.Time // won/running: lease expiry by the store's clock; overlap: optional
	Status     Status    // done: the settled status if the store knows it
	// Fence is, on a win, the fencing token the store gave this claim
	// (Run.Fence): every later won claim of the same job that the store
	// acknowledges gets a larger one, whichever instance and slot it is
	// for, so a downstream system that keeps the largest fence it has
	// seen per job can refuse a write from a holder that has since lost
	// its lease. 0 when the store gives no fences (a store whose
	// conformance Harness sets NoFence). Each win gets a new fence, a
	// renewal by the same token's claim included; other outcomes leave
	// it 0. SPEC §6, "Fencing".
	Fence uint64
}

// RunClaim is a lease claim: a ClaimInput plus the lease rules of SPEC §6.
// New fields may be added.
type RunClaim struct {
	ClaimInput
	Lease        time.Duration // the lease to grant on a win (store clock); must be > 0
	MaxLate      time.Duration // an absent slot whose store time is past Slot+MaxLate is missed; 0 = no limit
	AllowOverlap bool          // false: refuse (skip) while Limit other slots of the job are running with live leases
	// Limit is, with AllowOverlap false, how many other slots of the job
	// may hold live leases for the claim of an absent slot to win: the
	// store refuses it (OutcomeOverlap, state skipped) while Limit or
	// more do. It is counted in the claim's atomic step, so concurrent
	// claims of different slots never exceed it. 0 and 1 both mean one:
	// refuse while any other slot runs. Ignored with AllowOverlap.
	Limit       int
	MaxAttempts int // attempts a slot may use before it is abandoned; <= 0 means 1
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
// History of leased runs is written by two hands:
//
//   - The store: a won Claim (a first claim or a takeover) is itself a
//     history record: History lists it at once, under the claim's token,
//     holder and attempt, with StatusRunning until a result of that token
//     is stored. The scheduler never calls [ClaimRecorder] for a lease
//     claim, so this holds on a backend whose plain Claim needs one.
//   - The scheduler, through Backend.SaveResult (or
//     [ResultFinisher.FinishResult]): runs it executed, under their claim's
//     token; slots it found late or overlapping, under the token of the
//     claim that settled them; an abandoned slot, under [AbandonedToken].
//
// A store may also record those settled states itself (a takeover's
// previous holder as lease_lost or handed_over, a late slot as missed, …);
// it must then use the same tokens, so that BuildHistory merges the two
// records into one.
//
// Repeats are answered as the first call was: Finish of a run the token
// already finished, and Release of a run it already released, return true.
type RunStore interface {
	// Claim decides per SPEC §6's table, first match wins.
	Claim(ctx context.Context, c RunClaim) (ClaimOutcome, error)
	// Heartbeat extends the lease of (in.Job, in.Slot) to store-now +
	// in.Lease if in.Token holds the run and it is running. false means the
	// lease is lost.
	Heartbeat(ctx context.Context, in HeartbeatInput) (bool, error)
	// Finish marks the run (in.Job, in.Slot) done with in.Status if
	// in.Token holds it (running, or released by the same token). false if
	// another token holds the slot or the slot was abandoned; a repeat by
	// the token that finished it is true.
	Finish(ctx context.Context, in FinishInput) (bool, error)
	// Release ends in.Token's live lease of (in.Job, in.Slot) at once
	// (state released) so a backup takes over. false if in.Token does not
	// hold a running lease.
	Release(ctx context.Context, in ReleaseInput) (bool, error)
	// Active lists the job's unfinished runs (running or released), oldest
	// slot first.
	Active(ctx context.Context, job string) ([]ActiveRun, error)
}

// HeartbeatInput is what [RunStore.Heartbeat] is given.
// New fields may be added; a backend may ignore fields it does not know.
type HeartbeatInput struct {
	Job   string        // job name
	Slot  int64         // Unix ms
	Token string        // the token that holds the run
	Lease time.Duration // the new lease, from the store's now; > 0
}

// FinishInput is what [RunStore.Finish] is given.
// New fields may be added; a backend may ignore fields it does not know.
type FinishInput struct {
	Job    string // job name
	Slot   int64  // Unix ms
	Token  string // the token that holds the run
	Status Status // how the run ended; never empty
}

// ReleaseInput is what [RunStore.Release] is given.
// New fields may be added; a backend may ignore fields it does not know.
type ReleaseInput struct {
	Job   string // job name
	Slot  int64  // Unix ms
	Token string // the token that holds the run
}

// ResultFinisher is an optional interface of a RunStore that folds Finish
// and Backend.SaveResult into one store round trip. FinishResult marks the
// run (in.Job, in.Result.Slot) done with in.Result.Status if
// in.Result.Token holds it (running, or released by the same token),
// exactly as Finish would, and stores in.Result as SaveResult would,
// trimming history the same way. If the token no longer holds the run, it
// stores the result with Status replaced by StatusLeaseLost and returns
// false. in.Result.Status is never empty and in.Result.Manual is false (a
// RunNow run holds no lease); a backend may refuse either with an error.
// Without it the scheduler calls Finish, then SaveResult.
type ResultFinisher interface {
	FinishResult(ctx context.Context, in SaveResultInput) (bool, error)
}

// Replacer is an optional interface of a RunStore: it settles the earlier
// runs of a job so that a later slot replaces them (OverlapReplace, SPEC
// §6). Without it, a job with OverlapReplace is refused with
// [CodeNeedsRunStore].
type Replacer interface {
	// Replace does nothing and returns false unless in.Token holds the
	// running run (in.Job, in.Slot). Otherwise, in one atomic step for
	// each run it settles, it settles every run of in.Job on a slot
	// before in.Slot that is running (live or not) or released: state
	// done, status replaced, the run's token kept, so that its holder's
	// Heartbeat answers false from then on, no claim takes it over (a
	// claim answers done with StatusReplaced) and Active no longer lists
	// it. It records each in history under the run's token, holder and
	// attempt with StatusReplaced unless a result is stored for that
	// token already, wakes watchers (RunFinished), and returns the runs
	// it settled as they were (State and LeaseUntil before the change,
	// Live by the store's clock then), oldest slot first, and true.
	Replace(ctx context.Context, in ReplaceInput) ([]ActiveRun, bool, error)
}

// ReplaceInput is what [Replacer.Replace] is given: the replacing slot
// (ClaimInput.Slot), the token that holds its run and its holder, and the
// history limits the records Replace stores are kept under.
// New fields may be added; a backend may ignore fields it does not know.
type ReplaceInput struct {
	ClaimInput
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
// waits for the confirmation before returning). Events may be lost or
// repeated, and a RunReleased event is a hint that the scheduler checks by
// claiming again. A RunFinished event must come only after the run is
// settled (done, missed, skipped or paused: a state no claim changes),
// because a backup standing by on that slot ends on it without claiming
// again (SPEC §6); heartbeats, a retry's shortened lease and takeovers
// send none. anarchontest's Watch subtests check both.
type Watcher interface {
	WatchRuns(ctx context.Context) (<-chan RunEvent, error)
}
