package natsbackend

import (
	"testing"
	"time"
)

// TestServerClockBound checks the cached clock's estimate and its error
// bound: half the round trip plus drift plus slack, and a tighter sample
// replacing a looser one but not the reverse.
func TestServerClockBound(t *testing.T) {
	var c serverClock
	if _, _, ok := c.estimate(); ok {
		t.Fatal("estimate without a sample is ok")
	}
	ts := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	recv := time.Now()
	c.record(ts, recv.Add(-10*time.Millisecond), recv)
	now, bound, ok := c.estimate()
	if !ok {
		t.Fatal("estimate after a sample is not ok")
	}
	if bound < 5*time.Millisecond+clockSlack || bound > 7*time.Millisecond+clockSlack {
		t.Errorf("bound = %v, want about 5 ms + slack", bound)
	}
	if d := now.Sub(ts); d < 0 || d > time.Second {
		t.Errorf("estimate %v is %v from the sample", now, d)
	}
	// A looser sample does not replace a tighter one.
	c.record(ts.Add(time.Hour), time.Now().Add(-40*time.Millisecond), time.Now())
	if now2, _, _ := c.estimate(); now2.Sub(ts) > time.Second {
		t.Errorf("a looser sample replaced the tighter one: %v", now2)
	}
	// A tighter one does.
	r2 := time.Now()
	c.record(ts.Add(time.Hour), r2.Add(-2*time.Millisecond), r2)
	if now3, b3, _ := c.estimate(); now3.Sub(ts) < time.Hour || b3 > 3*time.Millisecond+clockSlack {
		t.Errorf("a tighter sample was not taken: %v ± %v", now3, b3)
	}
	// A sample older than clockMaxAge is not used.
	c.mid = time.Now().Add(-clockMaxAge - time.Millisecond)
	if _, _, ok := c.estimate(); ok {
		t.Error("a stale sample is still used")
	}
}
