package anarchon

import (
	"context"
	"math/rand/v2"
	"time"
)

// jitter returns the delay of the job's slot: random in [0, Jitter).
func (j *job) jitter(time.Time) time.Duration {
	if j.opt.Jitter <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(j.opt.Jitter)))
}

// watchLoop feeds the backend's run events to standing-by instances, and
// watches again after a broken watch.
func (s *Scheduler) watchLoop(ctx context.Context) {
	for ctx.Err() == nil {
		ch, err := s.watcher.WatchRuns(ctx)
		if err != nil {
			s.storeError(ctx, "WatchRuns", "", time.Time{}, err)
		} else {
			for ev := range ch {
				s.run.Notify(ev.Job, ev.Slot)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(s.opts.PollInterval):
		}
	}
}
