package runner

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Entry is one job in a [Queue]: its next slot and when to fire it.
type Entry[T any] struct {
	Value    T                                  // what fire is given
	Next     func(after time.Time) time.Time    // the job's first slot strictly after a time
	Delay    func(slot time.Time) time.Duration // the slot's jitter: fire at slot + Delay(slot); nil means none
	MaxDelay time.Duration                      // the largest Delay can return
	MaxLate  time.Duration                      // how late a slot may still run

	slot   time.Time // next slot
	fireAt time.Time // slot + jitter, store clock
	// pending is the latest slot handed over ahead of its time (RunGroups'
	// lead) and not yet due, in Unix ns; 0 if none. An int64, not a time.Time,
	// to keep an idle job's memory small (BENCHMARKS.md §4).
	pending int64
	index   int
}

// Queue orders jobs by their next fire time: one timer serves every job,
// and an idle job costs no goroutine. Its methods are safe for concurrent
// use.
type Queue[T any] struct {
	// Skipped, if set, is told of the slots of a job that the queue
	// skipped over because they were already past MaxLate when it looked
	// (a stalled process, a suspended machine, a clock jump): the first
	// of them, and the job's next slot, which it did not skip. It is
	// called from Run's goroutine, not under the queue's lock. Set it
	// before Run.
	Skipped func(v T, first, next time.Time)

	mu   sync.Mutex
	h    entryHeap[T]
	wake chan struct{} // Run's wake-up after a change of the queue or the clock; made on first use
	// changed is closed at a change of the clock, for Group.Wait; made
	// on first use.
	changed chan struct{}
	skips   []skip[T] // found by takeDue, for Skipped
}

// skip is one job's run of slots that takeDue skipped over.
type skip[T any] struct {
	v           T
	first, next time.Time
}

// takeSkips returns the skips takeDue found and forgets them. q.mu is
// held.
func (q *Queue[T]) takeSkips() []skip[T] {
	skips := q.skips
	q.skips = nil
	return skips
}

// report hands skips to Skipped. q.mu is not held.
func (q *Queue[T]) report(skips []skip[T]) {
	for _, k := range skips {
		q.Skipped(k.v, k.first, k.next)
	}
}

// wakeCh returns the wake channel, making it. q.mu is held.
func (q *Queue[T]) wakeCh() chan struct{} {
	if q.wake == nil {
		q.wake = make(chan struct{}, 1)
	}
	return q.wake
}

// Wake makes Run look at the clock again at once instead of when its
// timer ends: the clock it is given changed (a new offset to the store's
// clock, a step of the host's clock), so the wait it computed is wrong.
func (q *Queue[T]) Wake() {
	q.mu.Lock()
	q.signal()
	q.clockChanged()
	q.mu.Unlock()
}

// changedCh returns the channel closed at the next change of the clock
// (Wake, Rewind), for the groups waiting for their time.
func (q *Queue[T]) changedCh() chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.changed == nil {
		q.changed = make(chan struct{})
	}
	return q.changed
}

// clockChanged wakes the groups waiting for their time. q.mu is held.
func (q *Queue[T]) clockChanged() {
	if q.changed != nil {
		close(q.changed)
		q.changed = nil
	}
}

// Rewind moves every job whose next slot lies beyond its first slot after
// now back to that slot, and wakes Run. It is called with a corrected now
// after the clock Run was given was found to have been ahead (a host
// clock stepped forward, a claim the store refused as early): slots taken
// while it was ahead were not due, so the store refused their claims, and
// the slots it skipped over never ran. A slot after now was never due by
// the corrected clock, so only a slot taken within the correction itself
// (the clock put back by less than its error) can come again; its second
// claim, under a new token, loses at the store.
func (q *Queue[T]) Rewind(now time.Time) {
	q.mu.Lock()
	for _, e := range q.h {
		// A pending slot is claimed when it is due by the corrected
		// clock (Group.Wait): takeDue passes over it when the rewound
		// entry comes to it again.
		if first := e.Next(now); first.Before(e.slot) {
			e.slot = first
			e.fireAt = first.Add(e.delay(first))
		}
	}
	heap.Init(&q.h)
	q.signal()
	q.clockChanged()
	q.mu.Unlock()
}

// Add schedules e's first slot after now. It may be called while Run
// runs: Run then recomputes its wait.
func (q *Queue[T]) Add(e *Entry[T], now time.Time) {
	e.slot = e.Next(now)
	e.fireAt = e.slot.Add(e.delay(e.slot))
	q.mu.Lock()
	heap.Push(&q.h, e)
	q.signal()
	q.mu.Unlock()
}

// Remove takes e out of the queue: none of its slots fires after Remove
// returns, except those Run had already taken. It reports whether e was
// queued.
func (q *Queue[T]) Remove(e *Entry[T]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.queued(e) {
		return false
	}
	heap.Remove(&q.h, e.index)
	q.signal()
	return true
}

// Replace puts e in old's place, atomically: no slot of old fires after
// Replace returns (except those Run had already taken), and e's first
// slot is its first at or after the earliest of now, old's next slot and
// a slot of old handed over ahead of its time and not yet due (RunGroups'
// lead; the caller leaves old's copy of it out). So a slot that both
// schedules contain and old had not yet claimed fires once, from e, and a
// slot old's jitter was still delaying is not lost. If old is not
// queued, e is added as by Add.
func (q *Queue[T]) Replace(old, e *Entry[T], now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	from := now
	if q.queued(old) {
		if old.slot.Before(from) {
			from = old.slot
		}
		if old.pending != 0 {
			if p := time.Unix(0, old.pending); p.Before(from) {
				from = p
			}
		}
		heap.Remove(&q.h, old.index)
	}
	e.slot = e.Next(from.Add(-time.Nanosecond))
	e.fireAt = e.slot.Add(e.delay(e.slot))
	heap.Push(&q.h, e)
	q.signal()
}

// queued reports whether e is in the heap. q.mu is held.
func (q *Queue[T]) queued(e *Entry[T]) bool {
	return e != nil && e.index >= 0 && e.index < len(q.h) && q.h[e.index] == e
}

// signal wakes Run to recompute its wait. q.mu is held.
func (q *Queue[T]) signal() {
	select {
	case q.wakeCh() <- struct{}{}:
	default: // a wake is already pending
	}
}

// Due is a slot taken from a [Queue]: the job's value and the slot.
type Due[T any] struct {
	V    T
	Slot time.Time
}

// Group is the slots RunGroups hands to fire together. With a lead it
// hands them over before their time: fire prepares what it can, then
// calls Wait, which returns when they are due.
type Group[T any] struct {
	Due []Due[T]

	at      time.Time // when the last of them is due, by now's clock
	q       *Queue[T] // nil: due at once
	now     func() time.Time
	entries []*Entry[T] // entries[i] is Due[i]'s job, whose pending slot it is
}

// Wait returns true once every slot of the group is due by the queue's
// clock, at once when they are; false when ctx ended first. A change of
// the clock while it waits (Wake, Rewind) makes it look again, so no
// slot is handed on before its time by the clock as corrected. After
// Wait the group's slots are no longer pending: Rewind may take them
// again (their claims, if sent early, were refused).
func (g *Group[T]) Wait(ctx context.Context) bool {
	if g.q == nil {
		return ctx.Err() == nil
	}
	defer g.release()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		changed := g.q.changedCh()
		d := g.at.Sub(g.now())
		if d <= 0 {
			return ctx.Err() == nil
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
		case <-changed:
		}
	}
}

// release ends the group's hold on its entries' pending slots; it may be
// called more than once.
func (g *Group[T]) release() {
	if g.q == nil || g.entries == nil {
		return
	}
	g.q.mu.Lock()
	for i, e := range g.entries {
		if e.pending == g.Due[i].Slot.UnixNano() {
			e.pending = 0
		}
	}
	g.q.mu.Unlock()
	g.entries = nil
}

// Run fires due slots until ctx ends, each in its own goroutine counted in
// inflight. Times are now's clock (the scheduler's estimate of the
// store's); a timer that wakes early finds the head not yet due and waits
// again, so no slot runs before its time. All slots due at one wake-up are
// taken under one lock and started after it is released; inflight is
// raised before Run goes on, so a caller that waits for Run to return and
// then for inflight sees every slot it started. Entries added, removed or
// replaced while it runs wake it.
func (q *Queue[T]) Run(ctx context.Context, now func() time.Time, inflight *sync.WaitGroup, fire func(ctx context.Context, v T, slot time.Time)) {
	q.run(ctx, now, 0, 0, func(g *Group[T]) {
		inflight.Add(len(g.Due))
		for _, d := range g.Due {
			go func() {
				defer inflight.Done()
				fire(ctx, d.V, d.Slot)
			}()
		}
	})
}

// RunGroups is Run for a caller that claims slots in batches: the slots
// due at one wake-up, and those that come due within window after the
// first of them, are handed to fire together, in one goroutine counted in
// inflight, in the order they came due. They are handed over up to lead
// before the first of them is due, so that fire can prepare their claims
// while the machine is idle; fire then calls the group's Wait, which
// returns when the last of them is due. So no slot is claimed early, and
// the first slot of a group is claimed at most window late. A window <= 0
// groups only the slots due at one instant; a lead <= 0 hands a group over
// when its first slot is due.
//
// A slot handed over and not yet due is pending: a Rewind back to or
// before it does not hand it over again, Remove does not recall it (the
// caller checks, when Wait returns, whether the job is still scheduled),
// and Replace gives it to the new entry (whose first slot may be it).
func (q *Queue[T]) RunGroups(ctx context.Context, now func() time.Time, window, lead time.Duration, inflight *sync.WaitGroup, fire func(ctx context.Context, g *Group[T])) {
	q.run(ctx, now, window, lead, func(g *Group[T]) {
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			defer g.release()
			fire(ctx, g)
		}()
	})
}

// run is the timer loop of Run and RunGroups: it takes the slots due
// within window of the head once the head is lead away, and hands them to
// dispatch as one group.
func (q *Queue[T]) run(ctx context.Context, now func() time.Time, window, lead time.Duration, dispatch func(*Group[T])) {
	window, lead = max(window, 0), max(lead, 0)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	q.mu.Lock()
	wake := q.wakeCh()
	q.mu.Unlock()
	for {
		q.mu.Lock()
		if len(q.h) == 0 { // no jobs: nothing comes due until one is added
			q.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			continue
		}
		t := now()
		var g *Group[T]
		if q.h[0].fireAt.Sub(t) <= lead {
			horizon := t
			if q.h[0].fireAt.After(t) {
				horizon = q.h[0].fireAt
			}
			g = q.take(horizon.Add(window), t, now)
		}
		wait := q.h[0].fireAt.Sub(t) - lead
		skips := q.takeSkips()
		q.mu.Unlock()
		q.report(skips)
		if g != nil && len(g.Due) > 0 {
			dispatch(g)
		}
		if wait < 0 { // the next group is within the lead already: look again at once
			wait = 0
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-wake: // the queue or the clock changed: compute the wait again
		}
	}
}

// take takes the slots that fire by horizon as one group (takeDue). Those
// that are not due at t are pending until the group's Wait. q.mu is held.
func (q *Queue[T]) take(horizon, t time.Time, now func() time.Time) *Group[T] {
	g := &Group[T]{}
	var at time.Time
	g.Due, g.entries, at = q.takeDue(horizon)
	if !at.After(t) {
		g.entries = nil // due now: nothing to wait for, nothing pending
		return g
	}
	for i, e := range g.entries {
		// The latest slot held: a Rewind may have moved the entry back
		// before a slot an earlier group holds; that one is passed over
		// when the entry comes to it (takeDue).
		if ns := g.Due[i].Slot.UnixNano(); ns > e.pending {
			e.pending = ns
		}
	}
	g.at, g.q, g.now = at, q, now
	return g
}

// takeDue returns the slots that fire by now, their entries and the
// latest fire time among them, and moves their jobs on. The next slot
// comes after the one taken; after a long pause (a suspended machine) it
// skips ahead to what is still within MaxLate instead of replaying every
// slot in between. q.mu is held.
func (q *Queue[T]) takeDue(now time.Time) (batch []Due[T], entries []*Entry[T], last time.Time) {
	for len(q.h) > 0 && !q.h[0].fireAt.After(now) {
		head := q.h[0]
		// A slot a group holds already (Rewind moved the entry back to or
		// before it) is passed over: that group claims it when it is due.
		if head.pending == 0 || head.slot.UnixNano() != head.pending {
			batch = append(batch, Due[T]{head.Value, head.slot})
			entries = append(entries, head)
			if head.fireAt.After(last) {
				last = head.fireAt
			}
		}
		taken := head.slot
		limit := now.Add(-head.MaxLate - head.MaxDelay)
		if !limit.After(taken) {
			head.slot = head.Next(taken) // the usual case: one Next per slot
		} else {
			head.slot = head.Next(limit)
			if first := head.Next(taken); first.Before(head.slot) && q.Skipped != nil {
				q.skips = append(q.skips, skip[T]{head.Value, first, head.slot})
			}
		}
		head.fireAt = head.slot.Add(head.delay(head.slot))
		heap.Fix(&q.h, 0)
	}
	return batch, entries, last
}

func (e *Entry[T]) delay(slot time.Time) time.Duration {
	if e.Delay == nil {
		return 0
	}
	return e.Delay(slot)
}

type entryHeap[T any] []*Entry[T]

func (h entryHeap[T]) Len() int           { return len(h) }
func (h entryHeap[T]) Less(i, k int) bool { return h[i].fireAt.Before(h[k].fireAt) }
func (h entryHeap[T]) Swap(i, k int) {
	h[i], h[k] = h[k], h[i]
	h[i].index, h[k].index = i, k
}
func (h *entryHeap[T]) Push(x any) { e := x.(*Entry[T]); e.index = len(*h); *h = append(*h, e) }
func (h *entryHeap[T]) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}
