package natsbackend_test

import (
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon/natsbackend"
	"github.com/nats-io/nats.go"
)

// TestStaleClockReadOnce: the claims of a burst find the cached server
// clock stale together; one read of the server clock answers them all,
// and each gets bounds that hold the server's time.
func TestStaleClockReadOnce(t *testing.T) {
	nc, b := openCounted(t)
	ctx := t.Context()
	if _, err := b.ServerTime(ctx); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		b.StaleClock()
		before := nc.Stats().OutMsgs
		const callers = 50
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		for range callers {
			wg.Go(func() {
				lo, hi, err := b.NowBounds(ctx)
				if err == nil && (hi.Before(lo) || hi.Sub(lo) > time.Second) {
					t.Errorf("bounds %v .. %v", lo, hi)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		// One stream info request; a caller that came after the read
		// ended finds the cache fresh.
		if sent := nc.Stats().OutMsgs - before; sent != 1 {
			t.Errorf("round %d: %d callers on a stale clock sent %d requests, want 1", round, callers, sent)
		}
	}
}

// openCounted opens a backend on a fresh bucket and stream, Init done, on
// a connection of its own whose Stats count the requests it sends.
func openCounted(t *testing.T) (*nats.Conn, *natsbackend.Backend) {
	t.Helper()
	url := natsURL(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, err := natsbackend.New(nc, freshOptions(t, url))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	return nc, b
}
