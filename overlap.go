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
