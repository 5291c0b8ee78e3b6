package anarchon

import (
	"context"
	"time"
)

// bufferOne applies OverlapBufferOne to a slot (Unix ms) this instance has
// won, holding its lease: it reports true when the slot is to be skipped
// (two or more earlier runs of the job hold live leases: one runs and one
// already waits), and otherwise returns once no earlier run holds a live
// lease, polling RunStore.Active every PollInterval while the heartbeats
// keep the slot's own lease. The decision uses only the rows every
// RunStore keeps (SPEC §6, overlap): the slot was claimed with overlap
// allowed, so it runs once whatever this decides, and a later slot sees
// it among the earlier live runs. It returns early, to run, when ctx ends
// (the handler then sees its context cancelled).
func (s *Scheduler) bufferOne(ctx context.Context, j *job, slot int64) bool {
	first := true // the first listing decides between waiting and skipping
	for {
		runs, err := s.runs.Active(ctx, j.name)
		if err != nil {
			s.storeError(ctx, "Active", j.name, time.UnixMilli(slot).UTC(), err)
		} else {
			earlier := 0
			for _, r := range runs {
				if r.Slot < slot && r.Live {
					earlier++
				}
			}
			switch {
			case first && earlier >= 2:
				return true
			case earlier == 0:
				return false
			}
			first = false
		}
		t := time.NewTimer(s.opts.PollInterval)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// overlapLimit is how many other runs of j may hold live leases when one
// of its slots starts: 0 where the policy lets slots overlap (allow, and
// buffer_one and replace, which claim with overlap allowed and decide
// after the win), max(OverlapLimit, 1) under OverlapLimit, 1 under skip
// (the default with a RunStore).
func (j *job) overlapLimit() int {
	switch j.opt.Overlap {
	case OverlapAllow, OverlapBufferOne, OverlapReplace:
		return 0
	case OverlapLimit:
		return max(j.opt.OverlapLimit, 1)
	}
	return 1
}

// takeoverOverlaps applies the overlap policies skip and limit N to a
// takeover or a retry (attempt > 1) of slot (Unix ms) that this instance
// has won, holding its lease: it reports true when limit other slots of
// the job hold live leases, so that the slot is to be finished skipped
// instead of run (SPEC §6, overlap).
//
// The store's claim counts live runs only when an absent slot is claimed
// (SPEC §6's table), and a takeover comes when the previous holder's
// lease has run out: by then a later slot may have been claimed and be
// running, because the expired run no longer counted against it. Each
// claim that wins makes its run live in its atomic step, so of a later
// slot's first claim and this takeover, whichever the store decided
// second sees the other: either the later slot was refused (overlap), or
// it won before this takeover and this listing, made after it, shows its
// run live. Two takeovers that race may both see each other and both be
// skipped. The check lives here, not in the claim table's takeover row,
// because it needs only Active, which every RunStore has: a backend
// written against the SPI gets it unchanged, and no store's claim, the
// path a burst measures, does more work. A listing that fails is logged
// and the attempt runs: a store that cannot answer Active just after
// answering the claim is failing, and the run's fence still orders its
// writes.
func (s *Scheduler) takeoverOverlaps(ctx context.Context, j *job, slot int64, limit int) bool {
	runs, err := s.runs.Active(ctx, j.name)
	if err != nil {
		s.storeError(ctx, "Active", j.name, time.UnixMilli(slot).UTC(), err)
		return false
	}
	others := 0
	for _, r := range runs {
		if r.Slot != slot && r.Live {
			others++
		}
	}
	return others >= limit
}
