package natsbackend

import (
	"context"
	"sync"
	"time"

	"github.com/anarchon/anarchon"
)

// Bounds of the cached server clock; see the package docs, "Leases".
const (
	// clockMaxAge is how long a server time sample is used before the
	// next decision that needs "now" reads the server clock again.
	clockMaxAge = 2 * time.Second
	// clockDrift is the rate at which the error bound of a sample grows
	// with its age: 1 ms per second (1000 ppm), twice the largest slew
	// rate NTP applies, so a server clock kept by NTP stays inside it.
	clockDrift = 1000 // parts per million
	// clockSlack is added to every bound: the rounding of times to the
	// millisecond in stored lease lengths and in SPEC §6's MaxLate rule.
	clockSlack = time.Millisecond
)

// serverClock caches one sample of the server's clock: the server time
// ts, read by a request sent at local monotonic time sent and answered at
// recv. The server stamped ts between the two, so at local time t the
// server's time lies within ts + (t − mid) ± (half + drift·age + slack),
// where mid is the midpoint of sent and recv and half is half the round
// trip. Local times are monotonic readings, so a step of the local wall
// clock changes nothing.
type serverClock struct {
	mu   sync.Mutex
	ts   time.Time // server time of the sample
	mid  time.Time // local monotonic midpoint of the request
	half time.Duration
	// refresh is closed when the read that refreshes a stale cache ends;
	// nil when none is under way. The claims of a burst find the cache
	// stale together, and one read serves them all.
	refresh chan struct{}
}

// estimate returns the server time now, its error bound, and false when
// there is no sample younger than clockMaxAge.
func (c *serverClock) estimate() (time.Time, time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ts.IsZero() {
		return time.Time{}, 0, false
	}
	age := time.Since(c.mid)
	if age < 0 || age > clockMaxAge {
		return time.Time{}, 0, false
	}
	bound := c.half + age*clockDrift/1_000_000 + clockSlack
	return c.ts.Add(age), bound, true
}

// startRefresh returns the channel of the refresh under way (leader
// false), or starts one (leader true; the caller reads the clock and then
// calls endRefresh).
func (c *serverClock) startRefresh() (done chan struct{}, leader bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refresh != nil {
		return c.refresh, false
	}
	c.refresh = make(chan struct{})
	return c.refresh, true
}

// endRefresh ends the refresh startRefresh began and wakes its waiters.
func (c *serverClock) endRefresh(done chan struct{}) {
	c.mu.Lock()
	c.refresh = nil
	c.mu.Unlock()
	close(done)
}

// fresh reports whether a sample younger than clockMaxAge is cached, so
// that most questions about "now" are answered without a round trip.
func (c *serverClock) fresh() bool {
	_, _, ok := c.estimate()
	return ok
}

// record keeps the sample (ts, sent, recv) if its bound is tighter than
// the current sample's bound at this moment.
func (c *serverClock) record(ts, sent, recv time.Time) {
	half := recv.Sub(sent) / 2
	mid := sent.Add(half)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ts.IsZero() {
		age := time.Since(c.mid)
		if age >= 0 && age <= clockMaxAge && c.half+age*clockDrift/1_000_000 < half {
			return
		}
	}
	c.ts, c.mid, c.half = ts, mid, half
}

// nowBounds returns an interval [lo, hi] that holds the server's time at
// the moment of the call, from the cache or, when the cache is stale, from
// one read of the server clock.
func (b *Backend) nowBounds(ctx context.Context, h handles) (lo, hi time.Time, err error) {
	if t, bound, ok := b.clk.estimate(); ok {
		return t.Add(-bound), t.Add(bound), nil
	}
	// Another call's read of the clock is under way: its sample, once
	// recorded, answers this call too (the estimate is computed anew
	// from it, so its bound holds now). Without it, or if it failed,
	// this call reads the clock itself.
	if done, leader := b.clk.startRefresh(); !leader {
		select {
		case <-done:
		case <-ctx.Done():
			return time.Time{}, time.Time{}, ctxErr(ctx, "read server time")
		}
		if t, bound, ok := b.clk.estimate(); ok {
			return t.Add(-bound), t.Add(bound), nil
		}
	} else {
		defer b.clk.endRefresh(done)
		// A read that ended between this call's look at the cache and
		// its start of a refresh answers it.
		if t, bound, ok := b.clk.estimate(); ok {
			return t.Add(-bound), t.Add(bound), nil
		}
	}
	sent := time.Now()
	ts, err := b.readClock(ctx, h)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	// The server stamped ts after sent, so its time now is at least ts and
	// at most ts plus the local time since sent.
	return ts, ts.Add(time.Since(sent)*(1_000_000+clockDrift)/1_000_000 + clockSlack), nil
}

// readClock reads the server clock and records the sample.
func (b *Backend) readClock(ctx context.Context, h handles) (time.Time, error) {
	sent := time.Now()
	ts, err := b.serverNow(ctx, h)
	if err != nil {
		return time.Time{}, err
	}
	b.clk.record(ts, sent, time.Now())
	return ts, nil
}

// serverAfter reports whether the server's time now is after t. It
// answers from the cached clock when t lies outside the cache's error
// bound, and reads the server clock (one round trip) otherwise, so the
// answer is always the server's.
func (b *Backend) serverAfter(ctx context.Context, h handles, t time.Time) (bool, error) {
	lo, hi, err := b.nowBounds(ctx, h)
	if err != nil {
		return false, err
	}
	switch {
	case lo.After(t):
		return true, nil
	case !hi.After(t):
		return false, nil
	}
	now, err := b.readClock(ctx, h)
	if err != nil {
		return false, err
	}
	return now.After(t), nil
}

// checkEarly returns an *anarchon.EarlyError when slot (Unix ms) is later
// than the server's now plus anarchon.EarlyTolerance (never early, SPEC
// §4). A key-value Create cannot compare times on the server, so the
// claim paths ask before they write: the server's clock only moves on,
// so a slot due by a reading taken before the write is due when the
// write lands. The cached clock answers most calls without a round trip.
func (b *Backend) checkEarly(ctx context.Context, h handles, job string, slot int64) error {
	due := time.UnixMilli(slot - anarchon.EarlyTolerance.Milliseconds())
	ok, err := b.serverAfter(ctx, h, due.Add(-time.Nanosecond))
	if err != nil || ok {
		return err
	}
	var now int64
	if lo, _, err := b.nowBounds(ctx, h); err == nil {
		now = lo.UnixMilli()
	}
	return &anarchon.EarlyError{Job: job, Slot: slot, StoreNow: now}
}
