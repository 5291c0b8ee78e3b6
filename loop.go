package anarchon

import (
	"context"
	"time"
)

// watchLoop feeds the backend's run events to standing-by instances, and
// watches again after a broken watch.
func (s *Scheduler) watchLoop(ctx context.Context) {
	for ctx.Err() == nil {
		ch, err := s.watcher.WatchRuns(ctx)
		if err != nil {
			s.storeError(ctx, "WatchRuns", "", time.Time{}, err)
		} else {
			// Backups wait for events only while they can come.
			s.run.WatchUp(true)
			for ev := range ch {
				if ev.Kind == RunTriggered {
					select {
					case s.triggerWake <- struct{}{}:
					default:
					}
					continue
				}
				s.run.Notify(ev.Job, ev.Slot, ev.Kind == RunFinished)
			}
			s.run.WatchUp(false)
		}
		select {
		case <-ctx.Done():
		case <-time.After(s.opts.PollInterval):
		}
	}
}
