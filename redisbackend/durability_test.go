package redisbackend_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// setConfig sets a server setting for the test and puts it back after.
func setConfig(t *testing.T, c *redis.Client, key, value string) {
	t.Helper()
	old, err := c.ConfigGet(t.Context(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(t.Context(), key, value).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.ConfigSet(context.Background(), key, old[key]).Err() })
}

// Init refuses a server whose maxmemory-policy may evict claims, unless
// AllowEviction is set, and then warns; persistence off is a warning.
func TestEvictionPolicyRefused(t *testing.T) {
	addr := redisAddr(t)
	admin := newClient(t, addr, nil)
	for _, policy := range []string{"allkeys-lru", "volatile-ttl"} {
		t.Run(policy, func(t *testing.T) {
			setConfig(t, admin, "maxmemory-policy", policy)
			prefix := freshPrefix(t, addr)
			b, err := redisbackend.New(newClient(t, addr, nil), &redisbackend.Options{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			err = b.Init(t.Context())
			if !errors.Is(err, redisbackend.ErrEvictionPolicy) || !anarchon.IsPermanent(err) {
				t.Fatalf("Init with maxmemory-policy %s: %v, want a permanent ErrEvictionPolicy", policy, err)
			}
			var logs syncBuffer
			b, err = redisbackend.New(newClient(t, addr, nil), &redisbackend.Options{Prefix: prefix, AllowEviction: true,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Init(t.Context()); err != nil {
				t.Fatalf("Init with AllowEviction: %v", err)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), policy) {
				t.Errorf("no warning naming %s: %q", policy, logs.String())
			}
		})
	}
	t.Run("PersistenceOff", func(t *testing.T) {
		setConfig(t, admin, "save", "")
		setConfig(t, admin, "appendonly", "no")
		var logs syncBuffer
		b, err := redisbackend.New(newClient(t, addr, nil), &redisbackend.Options{Prefix: freshPrefix(t, addr),
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Init(t.Context()); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "persistence is off") {
			t.Errorf("no warning about persistence: %q", logs.String())
		}
	})
}

// A server that loses its data (FLUSHDB here, on a database of the test's
// own; FLUSHALL and a restart without persistence look the same) is found
// at the next claim: an ERROR names the loss, claims fail closed with
// ErrDataLost during LossHold on every instance, and then go on.
func TestDataLossDetected(t *testing.T) {
	addr := redisAddr(t)
	defer redisbackend.SetEpochCheckEvery(0)()
	db := func(o *redis.Options) { o.DB = 9 }
	admin := newClient(t, addr, db)
	if err := admin.FlushDB(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	var bs []*redisbackend.Backend
	hold := time.Hour
	for range 2 {
		b, err := redisbackend.New(newClient(t, addr, db), &redisbackend.Options{Prefix: "loss",
			LossHold: hold, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Init(t.Context()); err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	ctx := t.Context()
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	in := anarchon.ClaimInput{Job: "j", Slot: slot, Token: "a", InstanceID: "a", HistorySize: 10}
	if ok, err := bs[0].Claim(ctx, in); err != nil || !ok {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	if err := admin.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// The slot's claim is gone from the server: without the check,
	// another token would win it now.
	for i, b := range bs {
		in := anarchon.ClaimInput{Job: "j", Slot: slot, Token: "b", InstanceID: "b", HistorySize: 10}
		ok, err := b.Claim(ctx, in)
		if !errors.Is(err, redisbackend.ErrDataLost) || ok {
			t.Fatalf("instance %d: claim after the loss: %v, %v; want ErrDataLost", i, ok, err)
		}
		if anarchon.IsPermanent(err) {
			t.Errorf("ErrDataLost is marked permanent")
		}
		c := anarchon.RunClaim{ClaimInput: in, Lease: time.Minute}
		if _, err := b.Runs().Claim(ctx, c); !errors.Is(err, redisbackend.ErrDataLost) {
			t.Fatalf("instance %d: lease claim in the hold: %v; want ErrDataLost", i, err)
		}
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 2 || !strings.Contains(logs.String(), "lost its data") {
		t.Errorf("%d ERROR lines, want one per instance naming the loss: %q", n, logs.String())
	}
}

// Init logs its start-up report (the persistence and eviction WARNs, the
// topology at INFO and its WARN) once per backend: the calls after the
// first that succeeded check the server again and log nothing. The
// scheduler calls Init in Start and before the reads of a scheduler that
// was not started, a daemon's @reboot runs and read-only tools among
// them.
func TestInitReportsOnce(t *testing.T) {
	addr := redisAddr(t)
	var logs syncBuffer
	b, err := redisbackend.New(newClient(t, addr, nil), &redisbackend.Options{Prefix: freshPrefix(t, addr),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	first := logs.String()
	if strings.Count(first, "redis: topology") != 1 {
		t.Fatalf("first Init: want one topology line:\n%s", first)
	}
	for range 3 {
		if err := b.Init(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if after := logs.String(); after != first {
		t.Errorf("Init logged again:\nafter the first:\n%s\nafter four:\n%s", first, after)
	}
}
