package redisbackend

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// checkDurability reads what decides whether the server can forget a
// claim: its eviction policy (INFO memory, which works where CONFIG is
// disabled or renamed) and its persistence (CONFIG GET save/appendonly,
// or INFO persistence without CONFIG). A policy that may evict keys is
// refused unless Options.AllowEviction; persistence off is a warning.
func (b *Backend) checkDurability(ctx context.Context) error {
	mem, err := b.client.Info(ctx, "memory").Result()
	if err != nil {
		return b.wrap("init: info memory", err)
	}
	policy, ok := infoField(mem, "maxmemory_policy")
	switch {
	case !ok:
		b.log.LogAttrs(ctx, slog.LevelWarn, "redis: the server does not report its maxmemory_policy; an evicting policy would let slots run twice")
	case strings.HasPrefix(policy, "allkeys-") || strings.HasPrefix(policy, "volatile-"):
		if !b.allowEviction {
			return fmt.Errorf("%w: maxmemory-policy is %s; set it to noeviction, or allow it with Options.AllowEviction", ErrEvictionPolicy, policy)
		}
		b.log.LogAttrs(ctx, slog.LevelWarn, "redis: maxmemory-policy may evict claims (allowed by AllowEviction): an evicted claim lets its slot run twice",
			slog.String("maxmemory_policy", policy))
	}

	save, aof, known := "", "", false
	if cfg, err := b.client.ConfigGet(ctx, "save").Result(); err == nil {
		if cfg2, err := b.client.ConfigGet(ctx, "appendonly").Result(); err == nil {
			save, aof, known = cfg["save"], cfg2["appendonly"], true
		}
	}
	if !known { // CONFIG disabled: AOF is in INFO, the RDB schedule is not
		if p, err := b.client.Info(ctx, "persistence").Result(); err == nil {
			if v, ok := infoField(p, "aof_enabled"); ok && v == "0" {
				b.log.LogAttrs(ctx, slog.LevelWarn, "redis: AOF is off and CONFIG is unavailable to read the RDB schedule; a restart may lose claims")
			}
		}
		return nil
	}
	if strings.TrimSpace(save) == "" && aof == "no" {
		b.log.LogAttrs(ctx, slog.LevelWarn, `redis: persistence is off (save "" and appendonly no): a restart loses every claim, and slots running then may run twice`)
	}
	return nil
}

// epochCheckEvery is how often a claim path reads the sentinel key.
var epochCheckEvery = time.Second

// epochGuard detects a server that lost its data. Init writes a random
// value under the sentinel key (or adopts the one there); claims read it
// at most once a second. When it is gone (FLUSHALL, FLUSHDB, a restart
// without persistence) or holds another value (another instance found the
// loss first and wrote a new one), the data the backend relied on is gone:
// it logs an ERROR, adopts the new value and fails claims closed for hold.
type epochGuard struct {
	hold time.Duration

	mu        sync.Mutex
	value     string
	checked   time.Time // monotonic reading of the last read
	lostUntil time.Time // claims fail until then
}

func (b *Backend) epochKey() string { return "{" + b.prefix + ":}:epoch" }

// adopt makes sure the sentinel exists and returns its value. With
// Options.MustExist it only reads it: a missing key is ErrNoData.
func (g *epochGuard) adopt(ctx context.Context, b *Backend) (string, error) {
	if b.mustExist {
		v, err := b.client.Get(ctx, b.epochKey()).Result()
		if errors.Is(err, redis.Nil) {
			return "", fmt.Errorf("%w: sentinel key %s does not exist", ErrNoData, b.epochKey())
		}
		return v, err
	}
	if err := b.client.SetNX(ctx, b.epochKey(), rand.Text(), 0).Err(); err != nil {
		return "", err
	}
	return b.client.Get(ctx, b.epochKey()).Result()
}

func (g *epochGuard) init(ctx context.Context, b *Backend) error {
	v, err := g.adopt(ctx, b)
	if errors.Is(err, ErrNoData) {
		return err
	}
	if err != nil {
		return b.wrap("init: sentinel", err)
	}
	g.mu.Lock()
	g.value, g.checked = v, time.Now()
	g.mu.Unlock()
	return nil
}

// check returns ErrDataLost while claims are held after a loss, and finds
// a loss at most once every epochCheckEvery. An error reading the key is
// left to the claim itself to meet.
func (g *epochGuard) check(ctx context.Context, b *Backend) error {
	g.mu.Lock()
	now := time.Now()
	if now.Before(g.lostUntil) {
		left := g.lostUntil.Sub(now)
		g.mu.Unlock()
		return fmt.Errorf("%w (%v left)", ErrDataLost, left.Round(time.Millisecond))
	}
	if g.value == "" || now.Sub(g.checked) < epochCheckEvery {
		g.mu.Unlock()
		return nil
	}
	g.checked = now
	want := g.value
	g.mu.Unlock()

	v, err := b.client.Get(ctx, b.epochKey()).Result()
	if err == nil && v == want {
		return nil
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil
	}
	what := "is gone (FLUSHALL, FLUSHDB, or a restart without persistence)"
	if err == nil {
		what = "holds another value (another instance found the loss first)"
	}
	nv, aerr := g.adopt(ctx, b)
	g.mu.Lock()
	if aerr == nil {
		g.value = nv
	}
	g.lostUntil = time.Now().Add(g.hold)
	g.mu.Unlock()
	b.log.LogAttrs(ctx, slog.LevelError, "redis: the store lost its data: every claim, lease, history record and instance record written before is forgotten; claims fail closed for "+g.hold.String()+", so that runs claimed before the loss see their leases lost first",
		slog.String("sentinel", b.epochKey()), slog.String("sentinel_state", what))
	return fmt.Errorf("%w: sentinel key %s %s", ErrDataLost, b.epochKey(), what)
}
