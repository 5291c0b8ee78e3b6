// Package coalesce gathers calls that arrive close together into one batch
// call: the scheduler's heartbeats of the runs of a burst, which come due
// within milliseconds of each other, go to the store as one round trip
// instead of one each (SPEC §6, batches).
package coalesce

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Batcher sends the calls given to Do within Window of the first one (or
// as soon as Max are waiting) to Send as one batch. The zero value is not
// usable; set Send, Window and Max.
type Batcher[I, O any] struct {
	// Send makes the batch call. It must return len(in) answers or an
	// error for all of them. Its context carries no cancellation of any
	// one caller, and the earliest deadline of the callers in the batch.
	Send func(ctx context.Context, in []I) ([]O, error)
	// Window is how long the first call of a batch waits for others.
	Window time.Duration
	// Max is the largest batch; a full batch goes at once.
	Max int

	mu      sync.Mutex
	pending []*call[I, O]
	timer   *time.Timer
}

// call is one Do waiting for its answer.
type call[I, O any] struct {
	ctx  context.Context
	in   I
	out  O
	err  error
	done chan struct{}
}

// Do queues in for the next batch and waits for its answer, or for ctx to
// end (then it returns ctx's error; the batch may still carry in).
func (b *Batcher[I, O]) Do(ctx context.Context, in I) (O, error) {
	c := &call[I, O]{ctx: ctx, in: in, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	switch {
	case len(b.pending) >= max(b.Max, 1):
		batch := b.take()
		b.mu.Unlock()
		go b.send(batch)
	case len(b.pending) == 1:
		b.timer = time.AfterFunc(b.Window, b.flush)
		b.mu.Unlock()
	default:
		b.mu.Unlock()
	}
	select {
	case <-c.done:
		return c.out, c.err
	case <-ctx.Done():
		var zero O
		return zero, context.Cause(ctx)
	}
}

// take empties the queue. Caller holds b.mu.
func (b *Batcher[I, O]) take() []*call[I, O] {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	batch := b.pending
	b.pending = nil
	return batch
}

// flush sends what the window gathered.
func (b *Batcher[I, O]) flush() {
	b.mu.Lock()
	batch := b.take()
	b.mu.Unlock()
	if len(batch) > 0 {
		b.send(batch)
	}
}

// send makes one batch call and hands each caller its answer. Callers
// whose context already ended are left out of the call.
func (b *Batcher[I, O]) send(batch []*call[I, O]) {
	live := batch[:0]
	for _, c := range batch {
		if c.ctx.Err() == nil {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return
	}
	ctx := context.WithoutCancel(live[0].ctx)
	var deadline time.Time
	for _, c := range live {
		if d, ok := c.ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
			deadline = d
		}
	}
	cancel := func() {}
	if !deadline.IsZero() {
		ctx, cancel = context.WithDeadline(ctx, deadline)
	}
	defer cancel()
	in := make([]I, len(live))
	for i, c := range live {
		in[i] = c.in
	}
	out, err := b.Send(ctx, in)
	if err == nil && len(out) != len(in) {
		err = &CountError{Sent: len(in), Answered: len(out)}
	}
	for i, c := range live {
		if err != nil {
			c.err = err
		} else {
			c.out = out[i]
		}
		close(c.done)
	}
}

// CountError is a batch call that answered a different number of calls
// than it was sent.
type CountError struct{ Sent, Answered int }

func (e *CountError) Error() string {
	return "coalesce: a batch of " + strconv.Itoa(e.Sent) + " calls got " + strconv.Itoa(e.Answered) + " answers"
}
