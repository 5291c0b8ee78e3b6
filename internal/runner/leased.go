package runner

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"
)

// maxLateWins is how many wins in a row, each answered past the lease's
// safe end, one token claims before it gives the attempt up.
const maxLateWins = 3

// Leased is an attempt under a lease (SPEC §6): it claims through the
// RunStore, runs on a win with heartbeats, stands by as a backup while
// another instance holds a live lease, and records why a slot did not run.
type Leased[J any] struct {
	Attempt[J]
	Lease        time.Duration // the lease to ask for
	AllowOverlap bool          // false: the store skips the slot while Limit others of the job run
	Limit        int           // with AllowOverlap false: how many other runs may hold live leases; 0 means 1
	MissedWhy    string        // the history record's reason when the store settles the slot missed; "": the lateness

	sent     time.Time     // when the last claim was sent (monotonic)
	standing bool          // the attempt has stood by: another instance held the slot
	lateWins int           // wins of Token in a row answered past the safe end
	wake     chan struct{} // the store's events on this slot (listener's channel); nil when not listening
	listener *waiter       // &lw while listening; a run's heartbeat borrows it (startBeats)
	lw       waiter
}

// Lease returns a leased attempt at job's slot. maxLate bounds how late the
// slot may be claimed (0: no limit).
func (r *Runner[J]) Lease(job J, name string, slot time.Time, lease, maxLate time.Duration) *Leased[J] {
	a := &Leased[J]{Attempt: Attempt[J]{r: r, Job: job, Name: name, Slot: slot.UnixMilli(), MaxLate: maxLate, Leased: true}, Lease: lease}
	a.Token = r.host.NewToken()
	return a
}

// listen registers for the store's events on a's slot, if the scheduler
// watches the store.
func (a *Leased[J]) listen() {
	r := a.r
	if a.listener == nil && r.cfg.Watch {
		if a.lw.ch == nil {
			a.lw.ch = make(chan struct{}, 1)
		}
		a.lw.reset() // listened with before (Run called again)
		a.listener, a.wake = &a.lw, a.lw.ch
		r.waiters.add(slotKey{a.Name, a.Slot}, a.listener)
	}
}

// unlisten ends what listen started; it may be called more than once.
func (a *Leased[J]) unlisten() {
	r := a.r
	if a.listener != nil {
		r.waiters.remove(slotKey{a.Name, a.Slot}, a.listener)
		a.listener, a.wake = nil, nil
	}
}

// Run claims a's slot until the answer settles what this instance does
// with it: run it, record it missed, skipped or abandoned, or leave it to
// others.
func (a *Leased[J]) Run(ctx context.Context) {
	a.listen()
	defer a.unlisten()
	a.loop(ctx)
}

// loop is Run's claim loop; a listens for the store's events.
func (a *Leased[J]) loop(ctx context.Context) {
	r := a.r
	for {
		// Listen before asking, so a release between the answer and the
		// wait is not missed; a wake-up from before this claim is stale.
		select {
		case <-a.wake:
		default:
		}
		out, err := a.claim(ctx)
		if err != nil {
			// Fail closed; a backup asks again later, unless asking
			// again cannot help.
			if !a.standing || r.permanent(err) || !sleepCtx(ctx, r.cfg.PollInterval) {
				return
			}
			continue
		}
		r.host.LeaseAnswered(ctx, a, out)
		if !a.answer(ctx, out) {
			return
		}
	}
}

// claim sends one lease claim, bounded by claimCtx, and reports a store
// error. A backup's claim (the attempt has stood by) goes with the other
// backups' claims sent within BatchWindow where the store takes lease
// claims in batches: the backups of a burst, which poll together on a
// store without a Watcher or ask together when their leases end, cost
// one round trip per batch instead of one each.
func (a *Leased[J]) claim(ctx context.Context) (Outcome, error) {
	r := a.r
	a.sent = time.Now()
	cctx, cancel := r.claimCtx()
	defer cancel()
	claim := r.host.ClaimLease
	if a.standing {
		claim = r.host.Reclaim
	}
	out, err := claim(cctx, a)
	if err != nil {
		r.host.StoreError(ctx, "Claim", &a.Attempt, err)
	}
	return out, err
}

// answer acts on a claim's outcome (SPEC §6's table, from the claimer's
// side). It reports whether to claim again.
func (a *Leased[J]) answer(ctx context.Context, out Outcome) bool {
	switch out.Kind {
	case KindWon:
		if !a.won(ctx, out) {
			return true
		}
		if a.standing && a.result.Token == "" {
			// A backup's win: say so, since nothing else in this
			// instance's log tells that the slot came here from another.
			a.r.cfg.Log.LogAttrs(ctx, slog.LevelInfo, "slot taken over from another instance",
				slog.String("job", a.Name), slog.Time("slot", a.SlotTime()), slog.Int("attempt", a.Number),
				slog.String("why", "its holder released it (a hand-over or a retry) or stopped renewing its lease"))
		}
		// The run's heartbeat borrows the listener (startBeats); the
		// attempt keeps listening for the retry that may follow.
		return a.runWon(ctx)
	case KindRunning:
		a.standing = true
		if !a.standBy(ctx, out) {
			return false
		}
		// The store settled the run while this attempt stood by (its
		// RunFinished event): a claim would answer done or none, on
		// which a backup does nothing. Not asking saves every backup of
		// a burst its claim after the holder's finish.
		return a.listener == nil || !a.listener.settled.Load()
	case KindLate:
		a.settle(ctx, a.Token, StatusMissed, 0, a.lateText())
	case KindOverlap:
		a.settle(ctx, a.Token, StatusSkipped, 0, overlapText(out))
	case KindPaused:
		a.r.host.Settled(ctx, &a.Attempt, StatusPaused, "") // the store recorded it
	case KindDone:
		if out.Abandoned && a.standing {
			// Every backup that saw the slot through to abandonment
			// records it under one token, so history shows it once.
			a.settle(ctx, AbandonedToken(a.Slot), StatusAbandoned, out.Attempt, "")
		}
	}
	// KindNone, and kinds this version does not know: like done.
	return false
}

// AbandonedToken is anarchon.AbandonedToken.
func AbandonedToken(slot int64) string { return "abandoned-" + strconv.FormatInt(slot, 10) }

// won takes a won claim: it reports whether the handler may start, which it
// may only if the answer came before the lease's safe end. A late win is
// asked again at once (the same token's claim renews the lease if it is
// still ours, or shows who holds it now); after maxLateWins in a row the
// store answers slower than the lease allows, so the attempt is given up
// and the instance stands by under a new token: the lease then runs out,
// and the attempts with it (the slot ends abandoned), instead of being
// renewed for ever.
func (a *Leased[J]) won(ctx context.Context, out Outcome) bool {
	r := a.r
	a.Number, a.Fence = out.Attempt, out.Fence
	if a.wonInTime(ctx) {
		return true
	}
	a.standing = true
	if a.lateWins++; a.lateWins < maxLateWins {
		return false
	}
	a.save(&Result{
		Token: a.Token, Attempt: a.Number, Status: StatusLeaseLost,
		Error: fmt.Sprintf("%d wins in a row were answered past the lease's safe end (the last after %v, lease %v); the handler did not run", a.lateWins, time.Since(a.sent).Round(time.Millisecond), a.Lease),
	})
	a.Token, a.lateWins = r.host.NewToken(), 0
	return false
}

// wonInTime reports whether the won claim was answered before the lease's
// safe end. The store started the lease when it got the claim; an answer
// that took longer than Lease − Lease/6 (a slow or delayed connection, a
// store waiting on a lock) leaves the holder no time to stop before a
// backup may win, so the handler must not start on it.
func (a *Leased[J]) wonInTime(ctx context.Context) bool {
	r := a.r
	took := time.Since(a.sent)
	if took < a.Lease-leaseMargin(a.Lease) {
		return true
	}
	r.cfg.Log.LogAttrs(ctx, slog.LevelWarn, "lease won too late to run; claiming again",
		slog.String("job", a.Name), slog.Time("slot", a.SlotTime()), slog.Int("attempt", a.Number),
		slog.Duration("answer_after", took), slog.Duration("lease", a.Lease))
	return false
}

// standBy waits, as a backup, for the holder's lease to end: until a store
// event on the slot, or just after the lease runs out by the store's clock.
// While the watch is not up (no Watcher, or it broke) events do not come,
// so it waits the poll interval at most; it does too when the answer named
// no lease end. It reports false when ctx ended (Stop began).
func (a *Leased[J]) standBy(ctx context.Context, out Outcome) bool {
	r := a.r
	wait := r.cfg.PollInterval
	if !out.LeaseUntil.IsZero() {
		untilEnd := max(out.LeaseUntil.Sub(r.host.Now())+time.Millisecond, time.Millisecond)
		if a.wake != nil && r.watchUp.Load() {
			// Heartbeats send no event: the holder renewing is learnt
			// by asking again when the lease known so far ends.
			wait = untilEnd
		} else {
			wait = min(wait, untilEnd)
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-a.wake:
	case <-t.C:
	case <-ctx.Done():
	}
	return ctx.Err() == nil
}

// settle records a slot that did not run, under token.
func (a *Leased[J]) settle(ctx context.Context, token string, st Status, attempt int, why string) {
	r := a.r
	r.host.Settled(ctx, &a.Attempt, st, why)
	a.save(&Result{Token: token, Status: st, Attempt: attempt, Error: why})
}

// lateText is the history record's reason for a slot whose claim the
// store settled missed (later than MaxLate): MissedWhy, or the lateness.
func (a *Leased[J]) lateText() string {
	if a.MissedWhy != "" {
		return a.MissedWhy
	}
	late := a.r.host.Now().Sub(a.SlotTime())
	return fmt.Sprintf("the claim came %s after the slot, beyond MaxLate %v: the slot was not run", Lateness(late, a.MaxLate), a.MaxLate)
}

// Lateness writes late, a lateness past limit, to the millisecond, or
// finer where the millisecond would round it to limit or below (1.38ms
// past a MaxLate of 1ms is not "1ms").
func Lateness(late, limit time.Duration) string {
	for _, unit := range []time.Duration{time.Millisecond, time.Microsecond} {
		if r := late.Round(unit); r > limit {
			return r.String()
		}
	}
	return late.String()
}

// overlapText is the history record's reason for a slot whose claim the
// store settled skipped, naming the run that held it off when the store
// says which.
func overlapText(out Outcome) string {
	held := "another run of the job"
	if out.Holder != "" {
		held = fmt.Sprintf("instance %s's run of the job (attempt %d)", out.Holder, max(out.Attempt, 1))
	}
	return held + " still held a live lease, and the job's overlap policy runs no slot beside it: the slot was not run"
}

// MarkMissed settles an old slot as missed unless it was already run or
// settled: a's MaxLate should be tiny and AllowOverlap true, so a claim makes the store record the slot
// missed, and only the instance whose claim did so records the history. A
// win means the store's clock is behind ours by more than the slot's age:
// the slot is not late for the store, so it is ours to run.
func (a *Leased[J]) MarkMissed(ctx context.Context) {
	for range maxLateWins {
		out, err := a.claim(ctx)
		if err != nil {
			return
		}
		switch out.Kind {
		case KindLate:
			a.settle(ctx, a.Token, StatusMissed, 0, a.lateText())
		case KindWon:
			if !a.won(ctx, out) {
				continue // renew by asking again, as Run does
			}
			if a.runWon(ctx) {
				a.Run(ctx) // the run failed and is retried: stand by for it
			}
		}
		return
	}
}
