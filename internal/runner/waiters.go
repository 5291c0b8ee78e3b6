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
// (one kept pending at most), and beats, if set, is started after (see
// startBeats). A leased attempt has one waiter from its first claim to
// its end, which its runs' heartbeats share: handing it over costs no
// allocation (with the waiter set below, about 8 fewer per leased slot
// in BenchmarkBurst, BENCHMARKS.md §9).
type waiter struct {
	ch    chan struct{}
	beats *beats // the heartbeat of the run holding the slot; guarded by the waiters' lock
	// settled is set by a finished event (the store settled the slot's
	// run: done, missed, skipped or paused, which no claim changes), so
	// that a backup woken by it ends without asking again.
	settled atomic.Bool
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{}, 1)} }

// reset forgets a pending wake-up and the settled mark: w serves anew
// (a run's heartbeat, or its attempt again). The caller holds the
// waiters' lock, or w is not registered.
func (w *waiter) reset() {
	select {
	case <-w.ch:
	default:
	}
	w.settled.Store(false)
}

func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default: // a wake-up is already pending
	}
	if w.beats != nil {
		w.beats.start()
	}
}

// waiters routes the store's run events to the attempts standing by on
// that slot, and to the heartbeats of the runs holding it. A slot has one
// waiter most of the time (a backup's attempt, or the holder's), so the
// first is kept in the map's value itself and only the others in a
// slice, which a slot of one waiter never allocates.
type waiters struct {
	mu sync.Mutex
	m  map[slotKey]waiterSet
}

type waiterSet struct {
	first *waiter
	more  []*waiter
}

func (ws *waiters) add(k slotKey, w *waiter) {
	ws.mu.Lock()
	if ws.m == nil {
		ws.m = make(map[slotKey]waiterSet)
	}
	set := ws.m[k]
	if set.first == nil {
		set.first = w
	} else {
		set.more = append(set.more, w)
	}
	ws.m[k] = set
	ws.mu.Unlock()
}

func (ws *waiters) remove(k slotKey, w *waiter) {
	ws.mu.Lock()
	set := ws.m[k]
	if set.first == w {
		set.first = nil
		if n := len(set.more); n > 0 {
			set.first, set.more[n-1] = set.more[n-1], nil
			set.more = set.more[:n-1]
		}
	} else {
		set.more = slices.DeleteFunc(set.more, func(x *waiter) bool { return x == w })
	}
	if set.first == nil {
		delete(ws.m, k)
	} else {
		ws.m[k] = set
	}
	ws.mu.Unlock()
}

// each calls f for every waiter of set; ws.mu is held.
func (set waiterSet) each(f func(*waiter)) {
	if set.first != nil {
		f(set.first)
	}
	for _, w := range set.more {
		f(w)
	}
}

// attach makes w start b on an event (nil: start nothing) and forgets the
// wake-up and settled mark w got before: w now serves a new run's
// heartbeat, or the attempt again after the run.
func (ws *waiters) attach(w *waiter, b *beats) {
	ws.mu.Lock()
	w.beats = b
	w.reset()
	ws.mu.Unlock()
}

// notify wakes every waiter on k; settled says the store settled its run.
func (ws *waiters) notify(k slotKey, settled bool) {
	ws.mu.Lock()
	ws.m[k].each(func(w *waiter) {
		if settled {
			w.settled.Store(true)
		}
		w.wake()
	})
	ws.mu.Unlock()
}

// notifyAll wakes every waiter, on every slot.
func (ws *waiters) notifyAll() {
	ws.mu.Lock()
	for _, set := range ws.m {
		set.each((*waiter).wake)
	}
	ws.mu.Unlock()
}
