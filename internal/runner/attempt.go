package runner

import (
	"context"
	"sync"
	"time"
)

// Attempt is one instance's attempt to run one slot of a job: a plain claim
// (SPEC §3), or the base of a [Leased] one. Build it with [Runner.Plain] or
// [Runner.Lease].
type Attempt[J any] struct {
	Job     J             // the scheduler's job, for the Host
	Name    string        // the job's name
	Slot    int64         // Unix ms
	Token   string        // the claim's token; a leased attempt may draw a new one
	Number  int           // attempt number: 1 for plain claims, the store's for leases
	Fence   uint64        // the store's fencing token of the won lease claim; 0 for plain claims
	MaxLate time.Duration // how late the claim may be; 0: no limit (leased only)
	Started time.Time     // when the handler started (store clock)
	Leased  bool          // the attempt holds a lease: Stop releases it
	// LateAtClaim says that a plain attempt's slot was already past
	// MaxLate when its claim was sent. It is claimed all the same, so
	// that exactly one instance, the winner, records it missed (SPEC §3,
	// step 3), and the record says when it was found late.
	LateAtClaim bool
	// SafeEnd, once a leased attempt's handler has ended, is the earliest
	// its lease can run out (monotonic): the lease's safe end counted from
	// the winning claim's send time. Heartbeats only move the real end
	// later. Zero on plain attempts.
	SafeEnd time.Time

	r      *Runner[J]              // the runner it belongs to
	cancel context.CancelCauseFunc // the handler's context
	result Result                  // the handler's result, kept here to save an allocation

	mu    sync.Mutex
	state int // runActive, runFinishing, runHandedOver
}

const (
	runActive = iota
	runFinishing
	runHandedOver
)

// SlotTime is the slot as a UTC time.
func (a *Attempt[J]) SlotTime() time.Time { return time.UnixMilli(a.Slot).UTC() }

// Plain returns a plain attempt at job's slot.
func (r *Runner[J]) Plain(job J, name string, slot time.Time, maxLate time.Duration) *Attempt[J] {
	return &Attempt[J]{r: r, Job: job, Name: name, Slot: slot.UnixMilli(), Number: 1, MaxLate: maxLate}
}

// transition moves the attempt from runActive to state; it reports false
// when it had already left runActive (the handler finished, or Stop handed
// it over first).
func (a *Attempt[J]) transition(state int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state != runActive {
		return false
	}
	a.state = state
	return true
}

// begin starts the handler's context and tracks the attempt so that Stop
// can hand it over. The context has the runner's values and ends when the
// runner's context does, with its cause: cancelActive cancels every
// attempt tracked when that context ends, and one tracked after it is
// cancelled here, under the same lock.
func (a *Attempt[J]) begin() context.Context {
	r := a.r
	ctx, cancel := context.WithCancelCause(r.base)
	a.cancel = cancel
	a.Started = r.host.Now().Round(0)
	r.amu.Lock()
	r.active[a] = struct{}{}
	if r.runCtx.Err() != nil {
		cancel(context.Cause(r.runCtx))
	}
	r.amu.Unlock()
	return ctx
}

// end stops tracking a and reports whether its result is still ours to
// store: false when Stop handed it over (and recorded it) first.
func (a *Attempt[J]) end() bool {
	r := a.r
	ok := a.transition(runFinishing)
	r.amu.Lock()
	delete(r.active, a)
	r.amu.Unlock()
	a.cancel(nil)
	return ok
}

// Run is SPEC §3's run path with a plain claim: lateness, claim, record,
// handler, result.
func (a *Attempt[J]) Run(ctx context.Context) {
	r := a.r
	// A slot already too late is claimed all the same: the winner's
	// Execute finds it late (by the store's clock) and records it missed.
	a.LateAtClaim = r.host.Now().Sub(a.SlotTime()) > a.MaxLate
	a.Token = r.host.NewToken()
	if !a.claimPlain(ctx) {
		return
	}
	hctx := a.begin()
	a.result = r.host.Execute(hctx, a)
	if !a.end() {
		return // Stop recorded the run when it interrupted it
	}
	a.saveEnd(&a.result)
}

// claimPlain claims a's slot and, on a win, records the claim. It reports
// whether the slot is ours; a store error fails closed.
func (a *Attempt[J]) claimPlain(ctx context.Context) bool {
	r := a.r
	cctx, cancel := r.claimCtx()
	defer cancel()
	won, err := r.host.Claim(cctx, a)
	if err != nil {
		r.host.StoreError(ctx, "Claim", a, err) // fail closed: the slot is not run here
		return false
	}
	if !won {
		return false
	}
	if err := r.host.RecordClaim(cctx, a); err != nil {
		// The claim is won and the slot is ours; only its history entry
		// is missing until the result is saved.
		r.host.StoreError(ctx, "RecordClaim", a, err)
	}
	return true
}
