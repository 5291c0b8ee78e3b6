package membackend_test

import (
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
	"github.com/anarchon/anarchon/membackend"
)

// fakeClock is a store clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// handles returns the same store n times: one *Backend is one store, shared
// by every handle as a server is shared by clients.
func handles(b *membackend.Backend, n int) []anarchon.Backend {
	bs := make([]anarchon.Backend, n)
	for i := range bs {
		bs[i] = b
	}
	return bs
}

func TestConformanceFakeClock(t *testing.T) {
	clock := newFakeClock()
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			return handles(membackend.New(&membackend.Options{Now: clock.Now}), n)
		},
		Sleep:     clock.Advance,
		FakeClock: true,
	})
}

func TestConformanceRealClock(t *testing.T) {
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			return handles(membackend.New(nil), n)
		},
		Lease: 100 * time.Millisecond,
	})
}
