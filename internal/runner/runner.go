package runner

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Status is how a run ended, as anarchon.Status spells it.
type Status string

// The statuses the run path records; the values are anarchon's.
const (
	StatusError       Status = "error"
	StatusLeaseLost   Status = "lease_lost"
	StatusHandedOver  Status = "handed_over"
	StatusUnconfirmed Status = "unconfirmed"
	StatusAbandoned   Status = "abandoned"
	StatusMissed      Status = "missed"
	StatusSkipped     Status = "skipped"
	StatusPaused      Status = "paused"
	StatusReplaced    Status = "replaced"
)

// Kind is the kind of a lease claim's answer; the values are
// anarchon.OutcomeKind's. A kind the run path does not know is handled like
// KindDone (SPEC §9).
type Kind int

// Lease claim answers, SPEC §6.
const (
	KindWon Kind = iota + 1
	KindRunning
	KindDone
	KindOverlap
	KindNone
	KindLate
	KindPaused // the job is paused: the store settled and recorded the slot
)

// Outcome is a lease claim's answer.
type Outcome struct {
	Kind       Kind
	Attempt    int       // won: ours; running: the holder's; done: the last attempt's
	Holder     string    // running, overlap: the instance holding the run, when the store says
	LeaseUntil time.Time // running: the holder's lease expiry, store clock
	Abandoned  bool      // done: the slot was abandoned
	Fence      uint64    // won: the store's fencing token for this claim, 0 if none
}

// Result is how a run ended, for the store. The Host adds the slot and the
// instance.
type Result struct {
	Token      string
	Attempt    int
	Status     Status
	StartedAt  time.Time
	FinishedAt time.Time
	Error      string
	Output     string
	// Retry asks for the slot to be run again by a further attempt, any
	// instance's, no sooner than RetryIn after the handler returned (store
	// clock). Set by Host.Execute.
	Retry   bool
	RetryIn time.Duration
}

// Host is what an attempt needs from the scheduler: the store calls, in the
// scheduler's types, and its events. Every store method is given the
// attempt it concerns and a context bounded by the run path.
type Host[J any] interface {
	Now() time.Time   // the scheduler's estimate of the store's clock
	NewToken() string // a fresh claim token

	Claim(ctx context.Context, a *Attempt[J]) (bool, error)                         // a plain claim; emits its event
	ClaimBatch(ctx context.Context, as []*Attempt[J]) []PlainAnswer                 // plain claims, one answer each, in order; emits their events
	ClaimLeaseBatch(ctx context.Context, as []*Leased[J]) []LeaseAnswer             // lease claims, one answer each, in order
	RecordClaim(ctx context.Context, a *Attempt[J]) error                           // after a won plain claim; nil without a ClaimRecorder
	RecordClaims(ctx context.Context, as []*Attempt[J]) (errs []error, ok bool)     // RecordClaim of a batch's wins in one call; ok false: no such call
	ClaimLease(ctx context.Context, a *Leased[J]) (Outcome, error)                  // a lease claim
	Reclaim(ctx context.Context, a *Leased[J]) (Outcome, error)                     // a backup's lease claim again; may wait BatchWindow to go with others
	LeaseAnswered(ctx context.Context, a *Leased[J], out Outcome)                   // emits a lease claim's event
	Heartbeat(ctx context.Context, a *Leased[J], lease time.Duration) (bool, error) // make a's lease end lease from the store's now, at once
	Renew(ctx context.Context, a *Leased[J]) (bool, error)                          // a periodic heartbeat of a.Lease; may wait BatchWindow to go with others
	LostCause(ctx context.Context, a *Leased[J]) error                              // why a heartbeat answered false: ErrReplaced or ErrLeaseLost
	Release(ctx context.Context, a *Attempt[J]) error                               // hand the lease over
	Finish(ctx context.Context, a *Attempt[J], st Status) (bool, error)             // RunStore.Finish
	CanFinishResult() bool                                                          // FinishResult exists
	FinishResult(ctx context.Context, a *Attempt[J], r *Result) error               // RunStore's one-call finish
	SaveResult(ctx context.Context, a *Attempt[J], r *Result) error                 // Backend.SaveResult of slot a.Slot
	SaveEnd(ctx context.Context, a *Attempt[J], r *Result) error                    // SaveResult at a plain run's end; may wait BatchWindow to go with others

	Execute(ctx context.Context, a *Attempt[J]) Result                   // run the handler; emits its event
	Settled(ctx context.Context, a *Attempt[J], st Status, why string)   // a leased slot that did not run; why: its record's reason ("" when the store wrote the record)
	Retrying(ctx context.Context, a *Leased[J], r *Result)               // a failed run will be retried after r.RetryIn
	StoreError(ctx context.Context, op string, a *Attempt[J], err error) // a failed store call of a
}

// Config is what a Runner needs besides its Host.
type Config struct {
	Log          *slog.Logger
	PollInterval time.Duration // how often a backup without a watch asks again
	// Watch says that the scheduler calls Notify from a watch of the
	// store (and WatchUp as the watch comes and goes); without one no
	// attempt registers for wake-ups, which would never come.
	Watch bool
	// BatchSize and LeaseBatchSize are the most plain and lease claims
	// FirePlain and FireLeased send in one Host call; <= 1 means one
	// claim per call (the store has no batches).
	BatchSize, LeaseBatchSize int
	// The scheduler's sentinels, used as context causes and to stop retries.
	ErrLeaseLost, ErrClosed, ErrPermanent error
	// ErrReplaced is the cause of a run that a later slot replaced; its
	// result is stored with StatusReplaced and the slot is not finished
	// again (the store settled it).
	ErrReplaced error
}

// Runner runs attempts for one scheduler and tracks the running ones, so
// that Stop can hand them over.
type Runner[J any] struct {
	host Host[J]
	cfg  Config

	// runCtx is what handler contexts end with: when it is cancelled,
	// cancelActive cancels every tracked attempt with its cause (begin).
	runCtx context.Context
	// base has runCtx's values and no cancellation: the parent of
	// handler contexts and of store calls that Stop must not cut.
	base     context.Context
	deadline sharedDeadline // of the store calls (storeCtx)
	starter  starter        // of the heartbeats (startBeats)

	waiters waiters
	// watchUp: the scheduler's watch of the store is up, so the store's
	// events reach the waiters (see WatchUp).
	watchUp atomic.Bool
	calls   chan struct{} // one token per claim call in flight (FirePlain, FireLeased)

	amu    sync.Mutex
	active map[*Attempt[J]]struct{} // guarded by amu
}

// New returns a Runner whose handlers run under runCtx, which the
// scheduler cancels with ErrStopped at Stop's deadline.
func New[J any](h Host[J], runCtx context.Context, cfg Config) *Runner[J] {
	r := &Runner[J]{
		host: h, cfg: cfg, runCtx: runCtx, base: context.WithoutCancel(runCtx),
		active: make(map[*Attempt[J]]struct{}), calls: make(chan struct{}, MaxClaimCalls),
	}
	context.AfterFunc(runCtx, r.cancelActive)
	return r
}

// cancelActive cancels the handlers of every tracked attempt with
// runCtx's cause; it runs once runCtx is done. Handler contexts are not
// children of runCtx (begin): each child would be entered in, and taken
// out of, runCtx's own set of children under its one lock, which the
// runs of a burst all contend for (BENCHMARKS.md §9).
func (r *Runner[J]) cancelActive() {
	cause := context.Cause(r.runCtx)
	r.amu.Lock()
	defer r.amu.Unlock()
	for a := range r.active {
		a.cancel(cause)
	}
}

// Notify wakes the attempts standing by on (job, slot): the store says its
// lease was released, or with settled that its run finished or was
// settled (RunFinished, which a store sends only once no claim can change
// the run: SPEC §6, "Watch"), in which case a backup woken by it ends
// without claiming again.
func (r *Runner[J]) Notify(job string, slot int64, settled bool) {
	r.waiters.notify(slotKey{job, slot}, settled)
}

// WatchUp tells the runner whether the scheduler's watch of the store is
// up (Config.Watch; WatchRuns answered and its channel is open). While it
// is, a backup waits for the store's event on its slot or for the end of
// the lease it was told of; while it is not, events may be lost, so
// backups ask again every PollInterval. Going down wakes every waiting
// backup, so that one waiting for a far lease end asks again now and then
// polls.
func (r *Runner[J]) WatchUp(up bool) {
	if r.watchUp.Swap(up) && !up {
		r.waiters.notifyAll()
	}
}

// storeTimeout bounds the store calls made after a handler returns (results,
// finish, release): they must not hang a slot goroutine forever, and they
// must not be cut short by Stop.
const storeTimeout = 30 * time.Second

// storeCtx bounds a store call that must complete whatever Stop does: it
// keeps the values of the context the scheduler was started with (loggers
// and tracers read them) but not its cancellation. Every slot's context
// derives from that one, so its values are the slot's; deriving once saves
// an allocation per call.
//
// The bound is a safety net, not a deadline anyone waits for, so the calls
// that start within deadlineRenew of each other share one context, which
// ends between storeTimeout and storeTimeout+deadlineRenew after each of
// them started. A context of its own per call was a context, a timer and
// its place in the runtime's timer heap for each of a burst's thousands of
// store calls: about a tenth of the run path's CPU in a CPU profile of
// BenchmarkBurst. The cancel function is a no-op; the shared context ends
// at its deadline.
func (r *Runner[J]) storeCtx() (context.Context, context.CancelFunc) {
	return r.deadline.get(r.base), func() {}
}

// deadlineRenew is how long calls share one context of storeCtx.
const deadlineRenew = time.Second

// sharedDeadline is the context that store calls starting now share (see
// storeCtx).
type sharedDeadline struct {
	cur atomic.Pointer[deadlineCtx]
	mu  sync.Mutex // one renewal at a time
}

type deadlineCtx struct {
	ctx   context.Context
	until time.Time // calls that start before it may share ctx
	// cancel is never called: calls may hold ctx until its deadline,
	// when its own timer ends it.
	cancel context.CancelFunc
}

// get returns a context of base that ends no sooner than storeTimeout
// from now.
func (d *sharedDeadline) get(base context.Context) context.Context {
	now := time.Now()
	if c := d.cur.Load(); c != nil && now.Before(c.until) {
		return c.ctx
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.cur.Load(); c != nil && now.Before(c.until) {
		return c.ctx
	}
	ctx, cancel := context.WithDeadline(base, now.Add(storeTimeout+deadlineRenew))
	d.cur.Store(&deadlineCtx{ctx: ctx, until: now.Add(deadlineRenew), cancel: cancel})
	return ctx
}

// claimCtx bounds one claim call the same way: a claim already sent when
// Stop begins may win at the store, and an answer thrown away would leave
// the slot claimed and never run (a plain claim has no backup). A claim won
// that way runs, and Stop waits for it or hands it over as for any other
// run.
func (r *Runner[J]) claimCtx() (context.Context, context.CancelFunc) { return r.storeCtx() }

// retry calls f until it succeeds, backing off from 50 ms to 1 s between
// tries, for at most storeTimeout; every failure is reported. Only an error
// that may go away is retried: it gives up at once on a permanent error
// (ErrPermanent: the backend said a retry cannot fix it; ErrClosed: the
// backend is closed for good) and when ctx ends. It reports whether f
// succeeded.
func (a *Attempt[J]) retry(ctx context.Context, op string, f func() error) bool {
	r := a.r
	deadline := time.Now().Add(storeTimeout)
	wait := 50 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return true
		}
		r.host.StoreError(ctx, op, a, err)
		if r.permanent(err) || ctx.Err() != nil || time.Now().Add(wait).After(deadline) || !sleepCtx(ctx, wait) {
			return false
		}
		wait = min(2*wait, time.Second)
	}
}

// permanent reports whether err will not go away if the call is repeated.
func (r *Runner[J]) permanent(err error) bool {
	return errors.Is(err, r.cfg.ErrPermanent) || errors.Is(err, r.cfg.ErrClosed)
}

// save stores res for a's slot, retrying.
func (a *Attempt[J]) save(res *Result) { a.store(res, a.r.host.SaveResult) }

// saveEnd is save for the result of a plain run at its handler's end,
// which the host may send with the results of other runs ending together.
func (a *Attempt[J]) saveEnd(res *Result) { a.store(res, a.r.host.SaveEnd) }

func (a *Attempt[J]) store(res *Result, save func(context.Context, *Attempt[J], *Result) error) {
	ctx, cancel := a.r.storeCtx()
	defer cancel()
	a.retry(ctx, "SaveResult", func() error { return save(ctx, a, res) })
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

// CancelRun cancels, with cause, the handler of this runner's running
// attempt of the job named name at slot (Unix ms) under token, and reports
// whether it found one. The scheduler calls it when it learns from the
// store that such a run of its own has ended there (replaced by a later
// slot, SPEC §6): the handler learns it at once, not at its next
// heartbeat, which without a watch of the store may be Lease/3 away.
func (r *Runner[J]) CancelRun(name string, slot int64, token string, cause error) bool {
	r.amu.Lock()
	defer r.amu.Unlock()
	for a := range r.active {
		if a.Name == name && a.Slot == slot && a.Token == token && a.cancel != nil {
			a.cancel(cause)
			return true
		}
	}
	return false
}

// Cancel cancels, with cause, the handlers of the running attempts of the
// job named name; their results are stored as usual (a handler that
// returns on the cancellation ends as an error that names the cause). It
// returns how many it cancelled.
func (r *Runner[J]) Cancel(name string, cause error) int {
	r.amu.Lock()
	defer r.amu.Unlock()
	n := 0
	for a := range r.active {
		if a.Name == name && a.cancel != nil {
			a.cancel(cause)
			n++
		}
	}
	return n
}
