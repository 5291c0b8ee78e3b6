package anarchon

import (
	"container/heap"
	"context"
	"time"
)

// jobHeap orders jobs by their next fire time: one timer serves every job,
// and an idle job costs no goroutine.
type jobHeap []*job

func (h jobHeap) Len() int           { return len(h) }
func (h jobHeap) Less(i, k int) bool { return h[i].fireAt.Before(h[k].fireAt) }
func (h jobHeap) Swap(i, k int) {
	h[i], h[k] = h[k], h[i]
	h[i].index, h[k].index = i, k
}
func (h *jobHeap) Push(x any) { j := x.(*job); j.index = len(*h); *h = append(*h, j) }
func (h *jobHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return j
}
func (h *jobHeap) push(j *job) { heap.Push(h, j) }

// loop fires due slots until ctx ends. Times are the store's clock as
// estimated by s.now; a timer that wakes early finds the head not yet due and
// waits again, so no slot runs before its time. All slots due at one wake-up
// are taken under one lock and started after it is released.
func (s *Scheduler) loop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	type due struct {
		j    *job
		slot time.Time
	}
	var batch []due
	for {
		s.mu.Lock()
		if len(s.queue) == 0 { // no jobs: nothing ever comes due
			s.mu.Unlock()
			<-ctx.Done()
			return
		}
		now := s.now()
		for len(s.queue) > 0 && !s.queue[0].fireAt.After(now) {
			head := s.queue[0]
			batch = append(batch, due{head, head.slot})
			// The next slot comes after this one; after a long pause (a
			// suspended machine) it skips ahead to what is still within
			// MaxLate instead of replaying every slot in between.
			from := head.slot
			if limit := now.Add(-head.opt.MaxLate - head.opt.Jitter); limit.After(from) {
				from = limit
			}
			head.slot = head.nextSlot(from)
			head.fireAt = head.slot.Add(head.jitter(head.slot))
			heap.Fix(&s.queue, 0)
		}
		wait := s.queue[0].fireAt.Sub(now)
		s.inflight.Add(len(batch))
		s.mu.Unlock()
		for i, d := range batch {
			go func() {
				defer s.inflight.Done()
				s.fire(ctx, d.j, d.slot)
			}()
			batch[i] = due{}
		}
		batch = batch[:0]
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
	}
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
				s.notify(slotKey{ev.Job, ev.Slot})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(s.opts.PollInterval):
		}
	}
}

// waitFor registers interest in events on a slot; the returned channel gets
// a value when one arrives. Call the cancel function when done.
func (s *Scheduler) waitFor(k slotKey) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.wmu.Lock()
	m := s.waiters[k]
	if m == nil {
		m = make(map[chan struct{}]struct{})
		s.waiters[k] = m
	}
	m[ch] = struct{}{}
	s.wmu.Unlock()
	return ch, func() {
		s.wmu.Lock()
		delete(m, ch)
		if len(m) == 0 && s.waiters[k] != nil && len(s.waiters[k]) == 0 {
			delete(s.waiters, k)
		}
		s.wmu.Unlock()
	}
}

func (s *Scheduler) notify(k slotKey) {
	s.wmu.Lock()
	for ch := range s.waiters[k] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	s.wmu.Unlock()
}
