package redisbackend_test

import (
	"sync"
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
	var prefixes sync.Map // *redisbackend.Backend -> its key prefix
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			prefix := freshPrefix(t, addr)
			bs := make([]anarchon.Backend, n)
			for i := range bs {
				b, err := redisbackend.New(newClient(t, addr, nil), &redisbackend.Options{Prefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				prefixes.Store(b, prefix)
				bs[i] = b
			}
			return bs
		},
		// Reopen opens a new client and backend on the old handle's prefix.
		Reopen: func(t *testing.T, old anarchon.Backend) anarchon.Backend {
			prefix, ok := prefixes.Load(old)
			if !ok {
				t.Fatal("Reopen: a handle the test did not open")
			}
			b, err := redisbackend.New(newClient(t, addr, nil), &redisbackend.Options{Prefix: prefix.(string)})
			if err != nil {
				t.Fatal(err)
			}
			prefixes.Store(b, prefix)
			return b
		},
		// Break writes strings where the job's hashes and sorted sets
		// belong: every script then gets WRONGTYPE.
		Break: func(t *testing.T, b anarchon.Backend, job string) {
			prefix, _ := prefixes.Load(b)
			c := b.(*redisbackend.Backend).Client()
			for _, k := range []string{"run", "claims", "hist", "results"} {
				if err := c.Set(t.Context(), "{"+prefix.(string)+":"+job+"}:"+k, "not a hash", 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
		},
		Lease: 200 * time.Millisecond,
		// The races: 16 clients, each with a connection pool of its own,
		// claim 2,000 contested slots; repeats of the winners still win.
		Racers:  16,
		Handles: 16,
		Rounds:  2000,
	})
}
