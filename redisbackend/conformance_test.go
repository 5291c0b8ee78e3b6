package redisbackend_test

import (
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
	"github.com/anarchon/anarchon/redisbackend"
)

// TestConformance runs anarchon's backend suite (SPEC §8) against a real
// redis-server: every subtest gets a fresh key prefix and n handles, each
// with a client (connection pool) of its own.
func TestConformance(t *testing.T) {
	addr := redisAddr(t)
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			prefix := freshPrefix(t, addr)
			bs := make([]anarchon.Backend, n)
			for i := range bs {
				b, err := redisbackend.New(newClient(t, addr, nil), &redisbackend.Options{Prefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				bs[i] = b
			}
			return bs
		},
		Lease: 200 * time.Millisecond,
		// The races: 16 clients, each with a connection pool of its own,
		// claim 2,000 contested slots; repeats of the winners still win.
		Racers:  16,
		Handles: 16,
		Rounds:  2000,
	})
}
