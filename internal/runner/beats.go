package runner

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// beats runs a run's heartbeat in a goroutine of its own, started when
// there is something to do: at the first renewal, lease/3 after the claim
// was sent, or at a store event on the slot, whichever comes first. Until
// then nothing is due (the safe end comes after the first renewal), so a
// handler that returns sooner, as most of a burst's do, costs a place in
// the runner's starter queue and no goroutine; the goroutine per run was
// about 15% of the leased run path's CPU in a CPU profile of
// BenchmarkBurst. The queue's one mutex is taken twice per leased run.
type beats struct {
	ctx     context.Context // the handler's
	hb      heartbeater
	due     time.Time      // the first renewal
	idx     int            // in the starter's queue; -1 when not in it
	started atomic.Bool    // the heartbeat started, or never will (stop came first)
	halt    chan struct{}  // closed by stop
	ended   sync.WaitGroup // done when a started heartbeat returns, or at stop if none started
	w       *waiter        // the store's events on the slot; nil without a watch
	own     bool           // w was made for this run (it had no listener), not lent
	k       slotKey
}

// heartbeater is the run's heartbeat loop ([Leased.heartbeat]), an
// interface so that beats, which the starter's queue holds for runs of
// every job type, need no closure per run.
type heartbeater interface {
	heartbeat(ctx context.Context, stop <-chan struct{}, wake <-chan struct{})
}

// startBeats arms a's heartbeat for a run whose handler runs under ctx.
// With a watch it borrows a's listener for the run (stopBeats gives it
// back), or makes a waiter of its own when a has none (MarkMissed's run).
func (a *Leased[J]) startBeats(ctx context.Context) *beats {
	r := a.r
	b := &beats{
		ctx: ctx, hb: a, halt: make(chan struct{}), k: slotKey{a.Name, a.Slot},
		// The first renewal counts from the claim's send time, not from
		// now (see heartbeat).
		due: a.sent.Add(a.Lease / 3),
	}
	b.ended.Add(1)
	if r.cfg.Watch {
		// A store event on the run's own slot (a later slot replaced it,
		// SPEC §6) starts the heartbeat at once; it renews on the
		// pending wake-up, and so learns of it without waiting for the
		// next beat.
		if b.w = a.listener; b.w == nil {
			b.w, b.own = newWaiter(), true
			b.w.beats = b
			r.waiters.add(b.k, b.w)
		} else {
			r.waiters.attach(b.w, b)
		}
	}
	r.starter.add(b)
	return b
}

// start starts the heartbeat in a goroutine unless it started or stopped.
func (b *beats) start() {
	if b.started.CompareAndSwap(false, true) {
		go b.run()
	}
}

// run is the heartbeat's goroutine.
func (b *beats) run() {
	defer b.ended.Done()
	// A handler cancelled (Stop's hand-over, Cancel) or ended before
	// its first renewal renews nothing, as a heartbeat that was
	// waiting then would have returned at once.
	select {
	case <-b.ctx.Done():
		return
	case <-b.halt:
		return
	default:
	}
	var wake <-chan struct{} // nil without a watch
	if b.w != nil {
		wake = b.w.ch
	}
	b.hb.heartbeat(b.ctx, b.halt, wake)
}

// stopBeats ends b's heartbeat, waiting for it if it started, and gives
// the attempt's listener back.
func (r *Runner[J]) stopBeats(b *beats) {
	switch {
	case b.own:
		r.waiters.remove(b.k, b.w)
	case b.w != nil:
		r.waiters.attach(b.w, nil)
	}
	close(b.halt)
	r.starter.remove(b)
	if b.started.CompareAndSwap(false, true) {
		b.ended.Done() // it never started, and now never will
	}
	b.ended.Wait()
}

// starter starts the heartbeats of the runner's runs at their first
// renewal, from one goroutine that runs only while some wait. (Not a
// time.AfterFunc per run: under the race detector, goroutines of
// AfterFunc timers in a testing/synctest bubble crash the runtime of Go
// 1.26, and the scheduler's tests run in bubbles.)
type starter struct {
	mu      sync.Mutex
	q       beatQueue // by due; guarded by mu
	running bool      // the goroutine runs; guarded by mu
	wake    chan struct{}
}

func (s *starter) add(b *beats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	heap.Push(&s.q, b)
	switch {
	case !s.running:
		if s.wake == nil {
			s.wake = make(chan struct{}, 1)
		}
		s.running = true
		go s.loop()
	case b.idx == 0:
		s.signal() // a new first
	}
}

func (s *starter) remove(b *beats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.idx < 0 {
		return
	}
	first := b.idx == 0
	heap.Remove(&s.q, b.idx)
	if first {
		s.signal() // wait for the new first, or end
	}
}

// signal wakes the loop; s.mu is held.
func (s *starter) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *starter) loop() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		s.mu.Lock()
		now := time.Now()
		for len(s.q) > 0 && !s.q[0].due.After(now) {
			heap.Pop(&s.q).(*beats).start()
		}
		if len(s.q) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		wait := s.q[0].due.Sub(now)
		s.mu.Unlock()
		t.Reset(wait)
		select {
		case <-t.C:
		case <-s.wake:
		}
	}
}

// beatQueue is a min-heap of beats by due (container/heap).
type beatQueue []*beats

func (q beatQueue) Len() int           { return len(q) }
func (q beatQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q beatQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx, q[j].idx = i, j
}
func (q *beatQueue) Push(x any) {
	b := x.(*beats)
	b.idx = len(*q)
	*q = append(*q, b)
}
func (q *beatQueue) Pop() any {
	old := *q
	b := old[len(old)-1]
	old[len(old)-1] = nil
	b.idx = -1
	*q = old[:len(old)-1]
	return b
}
