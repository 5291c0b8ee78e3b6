package runner

import (
	"slices"
	"sync"
	"sync/atomic"
)

type slotKey struct {
	job  string
	slot int64
}

// waiter is woken by the store's events on its slot: ch gets a wake-up
// (one kept pending at most), and kick, if set, is called after, under
// the waiters' lock, so it must not block.
type waiter struct {
	ch   chan struct{}
	kick func()
	// settled is set by a finished event (the store settled the slot's
	// run: done, missed, skipped or paused, which no claim changes), so
	// that a backup woken by it ends without asking again.
	settled atomic.Bool
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{}, 1)} }

func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default: // a wake-up is already pending
	}
	if w.kick != nil {
		w.kick()
	}
}

// waiters routes the store's run events to the attempts standing by on
// that slot, and to the heartbeats of the runs holding it. A slot has one
// or two of them most of the time, so each has a short slice, not a set.
type waiters struct {
	mu sync.Mutex
	m  map[slotKey][]*waiter
}

func (ws *waiters) add(k slotKey, w *waiter) {
	ws.mu.Lock()
	if ws.m == nil {
		ws.m = make(map[slotKey][]*waiter)
	}
	ws.m[k] = append(ws.m[k], w)
	ws.mu.Unlock()
}

func (ws *waiters) remove(k slotKey, w *waiter) {
	ws.mu.Lock()
	if set := slices.DeleteFunc(ws.m[k], func(x *waiter) bool { return x == w }); len(set) == 0 {
		delete(ws.m, k)
	} else {
		ws.m[k] = set
	}
	ws.mu.Unlock()
}

// notify wakes every waiter on k; settled says the store settled its run.
func (ws *waiters) notify(k slotKey, settled bool) {
	ws.mu.Lock()
	for _, w := range ws.m[k] {
		if settled {
			w.settled.Store(true)
		}
		w.wake()
	}
	ws.mu.Unlock()
}

// notifyAll wakes every waiter, on every slot.
func (ws *waiters) notifyAll() {
	ws.mu.Lock()
	for _, set := range ws.m {
		for _, w := range set {
			w.wake()
		}
	}
	ws.mu.Unlock()
}
