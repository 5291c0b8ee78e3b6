package redisbackend_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

// redisAddr returns the address of the test server from
// ANARCHON_TEST_REDIS_ADDR; without it the test is skipped, or fails when
// CI=true.
func redisAddr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv("ANARCHON_TEST_REDIS_ADDR")
	if addr == "" {
		msg := "ANARCHON_TEST_REDIS_ADDR is not set (host:port of a redis-server; scripts/services/redis.sh starts one)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return addr
}

// newClient returns a client of its own to the test server, closed when
// the test ends.
func newClient(t testing.TB, addr string, mod func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: addr, PoolSize: 8}
	if mod != nil {
		mod(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// freshPrefix returns a key prefix unique to the test and deletes its keys
// when the test ends.
func freshPrefix(t testing.TB, addr string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "anarchontest-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, "{"+prefix+":*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		for len(keys) > 0 {
			n := min(len(keys), 500)
			_ = c.Del(ctx, keys[:n]...).Err()
			keys = keys[n:]
		}
	})
	return prefix
}

// newBackend returns a backend on its own client with the given prefix,
// initialised.
func newBackend(t testing.TB, addr, prefix string, opts *redisbackend.Options) *redisbackend.Backend {
	t.Helper()
	o := redisbackend.Options{}
	if opts != nil {
		o = *opts
	}
	o.Prefix = prefix
	b, err := redisbackend.New(newClient(t, addr, nil), &o)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	return b
}

func randToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
