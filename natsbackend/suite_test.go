package natsbackend_test

import (
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
	"github.com/anarchon/anarchon/natsbackend"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jetStream connects to url for a test and returns its JetStream API; the
// connection closes when t ends.
func jetStream(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// TestConformance runs anarchon's conformance suite (SPEC §8), leases
// included, against the real server: every subtest gets its own bucket and
// stream, deleted when it ends, and n separate connections.
func TestConformance(t *testing.T) {
	url := natsURL(t)
	var options sync.Map // *natsbackend.Backend -> its Options
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			o := freshOptions(t, url)
			out := make([]anarchon.Backend, n)
			for i, b := range openN(t, url, o, n) {
				options.Store(b, o)
				out[i] = b
			}
			return out
		},
		// Reopen opens a new connection with the old handle's bucket and
		// stream.
		Reopen: func(t *testing.T, old anarchon.Backend) anarchon.Backend {
			o, ok := options.Load(old)
			if !ok {
				t.Fatal("Reopen: a handle the test did not open")
			}
			b := openN(t, url, o.(*natsbackend.Options), 1)[0]
			options.Store(b, o)
			return b
		},
		// Break deletes the history stream.
		Break: func(t *testing.T, b anarchon.Backend, job string) {
			o, _ := options.Load(b)
			if err := jetStream(t, url).DeleteStream(t.Context(), o.(*natsbackend.Options).HistoryStream); err != nil {
				t.Fatal(err)
			}
		},
		Lease: 300 * time.Millisecond,
		// The races: 16 connections claim 2,000 contested slots.
		Racers:  16,
		Handles: 16,
		Rounds:  2000,
	})
}
