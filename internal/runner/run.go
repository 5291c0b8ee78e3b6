package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// runWon runs a slot whose lease this attempt holds: heartbeats every
// Lease/3 while the handler runs, then the finish, unless Stop handed the
// run over first. It reports whether the slot is to be claimed again: the
// handler failed and the run is to be retried (see retryLater).
func (a *Leased[J]) runWon(ctx context.Context) bool {
	r := a.r
	hctx := a.begin()
	beats := a.startBeats(hctx)
	a.result = r.host.Execute(hctx, &a.Attempt)
	res := &a.result
	r.stopBeats(beats)
	cause := context.Cause(hctx)
	if !a.end() {
		// Stop released the lease and recorded the hand-over; a backup owns
		// the slot, and the store may be closed by now.
		return false
	}
	if errors.Is(cause, r.cfg.ErrLeaseLost) {
		res.Status = StatusLeaseLost
		a.save(res)
		return false
	}
	if r.cfg.ErrReplaced != nil && errors.Is(cause, r.cfg.ErrReplaced) {
		// The store settled the slot replaced; the record keeps how the
		// handler ended.
		res.Status, res.Retry = StatusReplaced, false
		if res.Error == "" {
			res.Error = r.cfg.ErrReplaced.Error()
		}
		a.save(res)
		return false
	}
	if res.Retry && ctx.Err() == nil {
		return a.retryLater(ctx, res)
	}
	a.finish(ctx, res)
	return false
}

// finish tells the store how the run ended. The store must hear of the
// end, or a backup runs the slot again: a failed finish is retried. Past
// the lease a finish can still land (if no backup took over, the run is
// still ours) or be refused (then it was lost). One never confirmed is
// recorded as unconfirmed, which does not settle the slot.
func (a *Leased[J]) finish(ctx context.Context, res *Result) {
	r := a.r
	a.SafeEnd = a.sent.Add(a.Lease - leaseMargin(a.Lease))
	sctx, cancel := r.storeCtx()
	defer cancel()
	var confirmed bool
	if r.host.CanFinishResult() {
		confirmed = a.retry(sctx, "FinishResult", func() error {
			return r.host.FinishResult(sctx, &a.Attempt, res)
		})
		if confirmed {
			return
		}
	} else {
		var held bool
		confirmed = a.retry(sctx, "Finish", func() (err error) {
			held, err = r.host.Finish(sctx, &a.Attempt, res.Status)
			return err
		})
		if confirmed && !held {
			res.Status = StatusLeaseLost // a backup took the slot while we ran
		}
	}
	if !confirmed {
		note := fmt.Sprintf("the run ended (%s) but the store never confirmed it: the slot may run again", res.Status)
		if res.Error != "" {
			note = res.Error + "; " + note
		}
		res.Status, res.Error = StatusUnconfirmed, note
	}
	a.save(res)
}

// leaseMargin is how long before the store's expiry of a lease its holder
// stops: lease/6 (5 s of the default 30 s). A holder process that is not
// scheduled for longer than that can overlap its backup (see Run.Attempt).
func leaseMargin(lease time.Duration) time.Duration { return lease / 6 }

// HandOver runs at Stop's deadline, for every run still going: it marks
// it handed over, cancels the handlers (cause ErrStopped) with cancelRuns,
// then releases each lease so that a backup takes the run over at once and
// records it handed over, and records each plain run as an error (it has
// no backup). Marking comes first so a handler that returns on the
// cancellation does not store its own result; every record is stored
// before HandOver returns, so that none of this instance's says running
// after Stop.
func (r *Runner[J]) HandOver(ctx context.Context, cancelRuns func()) {
	r.amu.Lock()
	runs := make([]*Attempt[J], 0, len(r.active))
	for a := range r.active {
		if a.transition(runHandedOver) {
			runs = append(runs, a)
		}
	}
	r.amu.Unlock()
	cancelRuns()
	if r.runCtx.Err() != nil {
		// Now, not when cancelActive's own goroutine gets to it: every
		// handler's context has ended when HandOver returns.
		r.cancelActive()
	}
	var wg sync.WaitGroup
	for _, a := range runs {
		wg.Go(func() {
			if a.Leased {
				a.handOver()
			} else {
				a.interrupted()
			}
		})
	}
	wg.Wait()
}

// The error texts of the results Stop's deadline records, in the
// operator's words (they show in history): a leased run released for a
// backup, and a run that nothing will take over (a plain run, a manual
// one).
const (
	HandedOverError  = "handed over: the scheduler stopped before the run ended"
	InterruptedError = "interrupted: the scheduler stopped before the run ended"
)

// handOver releases a's lease and records the hand-over.
func (a *Attempt[J]) handOver() {
	r := a.r
	sctx, cancel := r.storeCtx()
	defer cancel()
	if err := r.host.Release(sctx, a); err != nil {
		r.host.StoreError(sctx, "Release", a, err)
	}
	a.save(&Result{
		Token: a.Token, Attempt: a.Number, Status: StatusHandedOver,
		StartedAt: a.Started, FinishedAt: r.host.Now(),
		Error: HandedOverError,
	})
}

// interrupted records a plain run that Stop's deadline cut short: it ends
// as an error, since no backup will run the slot.
func (a *Attempt[J]) interrupted() {
	r := a.r
	a.save(&Result{
		Token: a.Token, Attempt: a.Number, Status: StatusError,
		StartedAt: a.Started, FinishedAt: r.host.Now(),
		Error: InterruptedError,
	})
}

// heartbeat renews the lease every lease/3 until stop closes. A store that
// answers false ends the lease at once. Otherwise the lease is ours until
// its safe end: lease − lease/6 after the send time of the last renewal,
// by our own monotonic clock, which is never later than the store's expiry.
// At the safe end the handler's context is cancelled with ErrLeaseLost,
// whatever a heartbeat call in flight is doing: a call that hangs on a dead
// connection must not keep a holder running past the moment a backup may
// take over (fencing).
func (a *Leased[J]) heartbeat(ctx context.Context, stop <-chan struct{}, wake <-chan struct{}) {
	r := a.r
	hb := beat[J]{r: r, a: a, ctx: ctx, answers: make(chan beatAnswer, 1), lastOK: a.sent}
	every := a.Lease / 3
	// Both timers count from the claim's send time, not from now: the
	// store started the lease when it got the claim, and the answer may
	// have taken a while to come back.
	next := time.NewTimer(time.Until(hb.lastOK.Add(every)))
	defer next.Stop()
	safeEnd := time.NewTimer(time.Until(hb.safeEnd()))
	defer safeEnd.Stop()
	// With a watch, a store event on the run's own slot (wake; see
	// startBeats) renews at once.
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-safeEnd.C:
			hb.expired()
			return
		case <-wake:
			hb.send()
		case <-next.C:
			hb.send()
		case ans := <-hb.answers:
			switch d := hb.take(ans); {
			case d < 0:
				return
			case d == 0:
				safeEnd.Reset(time.Until(hb.safeEnd()))
				next.Reset(every)
			default:
				next.Reset(d)
			}
		}
	}
}

type beatAnswer struct {
	ok  bool
	err error
}

// beat is the state of one run's heartbeats.
type beat[J any] struct {
	r        *Runner[J]
	a        *Leased[J]
	ctx      context.Context
	answers  chan beatAnswer // buffered: a call never blocks, even after the loop returned
	lastOK   time.Time       // send time of the last accepted renewal (or of the claim)
	sent     time.Time       // send time of the call in flight
	inFlight bool
}

func (b *beat[J]) safeEnd() time.Time {
	return b.lastOK.Add(b.a.Lease - leaseMargin(b.a.Lease))
}

// expired ends the lease at its safe end.
func (b *beat[J]) expired() {
	// late is how long after the safe end this runs: time the process was
	// not scheduled, which eats into the margin the holder has to stop
	// before a backup may win.
	late := time.Since(b.safeEnd())
	b.r.cfg.Log.LogAttrs(b.ctx, slog.LevelWarn, "lease lost: no renewal before its safe end",
		slog.String("job", b.a.Name), slog.Time("slot", b.a.SlotTime()),
		slog.Duration("late", late), slog.Duration("margin", leaseMargin(b.a.Lease)))
	b.a.cancel(b.r.cfg.ErrLeaseLost)
}

// send starts a heartbeat call unless one is still in flight (the safe end
// bounds that one).
func (b *beat[J]) send() {
	if b.inFlight {
		return
	}
	b.inFlight = true
	b.sent = time.Now()
	callCtx, cancel := context.WithDeadline(b.ctx, b.safeEnd())
	go func() {
		defer cancel()
		ok, err := b.r.host.Renew(callCtx, b.a)
		b.answers <- beatAnswer{ok, err}
	}()
}

// take handles a heartbeat's answer. It returns 0 when the lease was
// renewed, a retry delay after a store error, and -1 when the heartbeats
// end (the lease is lost, or the run is ending).
func (b *beat[J]) take(ans beatAnswer) time.Duration {
	b.inFlight = false
	switch {
	case ans.err == nil && ans.ok:
		b.lastOK = b.sent
		return 0
	case ans.err == nil:
		// Ask why, within what is left of the lease.
		ctx, cancel := context.WithDeadline(b.ctx, b.safeEnd())
		cause := b.r.host.LostCause(ctx, b.a)
		cancel()
		if b.r.cfg.ErrReplaced == nil || !errors.Is(cause, b.r.cfg.ErrReplaced) {
			cause = b.r.cfg.ErrLeaseLost
			b.r.cfg.Log.LogAttrs(b.ctx, slog.LevelWarn, "lease lost", slog.String("job", b.a.Name), slog.Time("slot", b.a.SlotTime()))
		} else {
			b.r.cfg.Log.LogAttrs(b.ctx, slog.LevelInfo, "run replaced by a later slot; cancelling it", slog.String("job", b.a.Name), slog.Time("slot", b.a.SlotTime()))
		}
		b.a.cancel(cause)
		return -1
	case b.ctx.Err() != nil:
		return -1
	default:
		b.r.host.StoreError(b.ctx, "Heartbeat", &b.a.Attempt, ans.err)
		return max(b.a.Lease/3/4, time.Millisecond)
	}
}
