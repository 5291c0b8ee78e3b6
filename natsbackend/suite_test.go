package natsbackend_test

import (
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
)

// TestConformance runs anarchon's conformance suite (SPEC §8), leases
// included, against the real server: every subtest gets its own bucket and
// stream, deleted when it ends, and n separate connections.
func TestConformance(t *testing.T) {
	url := natsURL(t)
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			o := freshOptions(t, url)
			out := make([]anarchon.Backend, n)
			for i, b := range openN(t, url, o, n) {
				out[i] = b
			}
			return out
		},
		Lease: 300 * time.Millisecond,
		// The races: 16 connections claim 2,000 contested slots.
		Racers:  16,
		Handles: 16,
		Rounds:  2000,
	})
}
