package anarchon

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// replaceEarlier applies OverlapReplace to the slot of a, which this
// instance has won (with overlap allowed) and holds, renewing its lease,
// before its handler starts: it asks the store to settle every earlier run
// of the job as replaced (Replacer, one atomic step per run, so a run is
// replaced once whoever asks), then waits until each replaced run that
// held a live lease has stopped: its holder stored its result (seen in
// History, polled every PollInterval), or its lease has run out by the
// store's clock (the holder stops by then: SPEC §6), whichever comes
// first. A store error is retried every PollInterval; it returns early,
// to run, when ctx ends (the handler then sees its context cancelled).
func (s *Scheduler) replaceEarlier(ctx context.Context, j *job, a *attempt) {
	in := ReplaceInput{ClaimInput: host{s}.claimInput(a)}
	var runs []ActiveRun
	for {
		rs, held, err := s.replacer.Replace(ctx, in)
		if err == nil {
			if !held {
				return // the lease is lost: the heartbeats cancel the run
			}
			runs = rs
			break
		}
		s.storeError(ctx, "Replace", j.name, a.SlotTime(), err)
		if errors.Is(err, ErrPermanent) || errors.Is(err, ErrClosed) || !sleepCtx(ctx, s.opts.PollInterval) {
			return
		}
	}
	pending := map[string]bool{}
	var until time.Time
	for _, r := range runs {
		s.log.LogAttrs(ctx, slog.LevelInfo, "run replaced by a later slot",
			slog.String("job", j.name), slog.Time("slot", time.UnixMilli(r.Slot).UTC()), slog.String("holder", r.InstanceID),
			slog.Int("attempt", r.Attempt), slog.Time("by_slot", a.SlotTime()))
		s.emit(Event{Kind: EventSlotSkipped, Job: j.name, Slot: time.UnixMilli(r.Slot).UTC(), Attempt: r.Attempt, Status: StatusReplaced})
		// A replaced run of this instance's own (its token running here)
		// is cancelled here and now, as the line above says: its
		// heartbeat would learn of it at its next renewal, Lease/3 away
		// on a store without a Watcher, and this slot waits for its end.
		if r.InstanceID == s.opts.InstanceID {
			s.run.CancelRun(j.name, r.Slot, r.Token, ErrReplaced)
		}
		if r.Live {
			pending[r.Token] = true
			if r.LeaseUntil.After(until) {
				until = r.LeaseUntil
			}
		}
	}
	// The replaced runs end as soon as their holders learn of the
	// replacement (at once with a Watcher: Replace's event on their
	// slots), and their ends send no event: the first looks come soon
	// and back off to PollInterval, so that a job whose interval is
	// shorter than PollInterval still starts its runs well within it.
	for step := replaceFirstLook; len(pending) > 0; step *= 2 {
		wait := min(step, s.opts.PollInterval, until.Sub(s.now()))
		if wait <= 0 || !sleepCtx(ctx, wait) {
			return
		}
		hist, err := s.backend.History(ctx, j.name, 0)
		if err != nil {
			s.storeError(ctx, "History", j.name, a.SlotTime(), err)
			continue
		}
		for _, r := range hist {
			if pending[r.Token] && !r.FinishedAt.IsZero() {
				delete(pending, r.Token)
			}
		}
	}
}

// replaceFirstLook is replaceEarlier's first wait before it looks for the
// replaced runs' ends; it doubles at every look up to PollInterval.
const replaceFirstLook = 10 * time.Millisecond

// lostCause says why the lease of a's run was lost, for the cause of its
// handler's context: ErrReplaced when a later slot replaced it (the store
// recorded the run replaced under its token), ErrLeaseLost otherwise. It
// asks the store only for a job with OverlapReplace.
func (s *Scheduler) lostCause(ctx context.Context, j *job, a *attempt) error {
	if j.opt.Overlap != OverlapReplace {
		return ErrLeaseLost
	}
	hist, err := s.backend.History(ctx, j.name, 0)
	if err != nil {
		s.storeError(ctx, "History", j.name, a.SlotTime(), err)
		return ErrLeaseLost
	}
	for _, r := range hist {
		if r.Token == a.Token && r.Slot.UnixMilli() == a.Slot && r.Status == StatusReplaced {
			return ErrReplaced
		}
	}
	return ErrLeaseLost
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
