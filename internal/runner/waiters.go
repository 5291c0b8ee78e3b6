package runner

import "sync"

type slotKey struct {
	job  string
	slot int64
}

// waiters routes the store's run events to the attempts standing by on
// that slot.
type waiters struct {
	mu sync.Mutex
	m  map[slotKey]map[chan struct{}]struct{}
}

func (w *waiters) add(k slotKey, ch chan struct{}) {
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[slotKey]map[chan struct{}]struct{})
	}
	set := w.m[k]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		w.m[k] = set
	}
	set[ch] = struct{}{}
	w.mu.Unlock()
}

func (w *waiters) remove(k slotKey, ch chan struct{}) {
	w.mu.Lock()
	if set := w.m[k]; set != nil {
		delete(set, ch)
		if len(set) == 0 {
			delete(w.m, k)
		}
	}
	w.mu.Unlock()
}

// notify wakes every attempt waiting on k; a wake-up already pending is
// enough.
func (w *waiters) notify(k slotKey) {
	w.mu.Lock()
	for ch := range w.m[k] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	w.mu.Unlock()
}

// notifyAll wakes every waiting attempt, on every slot.
func (w *waiters) notifyAll() {
	w.mu.Lock()
	for _, set := range w.m {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	w.mu.Unlock()
}
