package redisbackend

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
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
// It returns the persistence it found, for the topology report. Its
// warnings go to log.
func (b *Backend) checkDurability(ctx context.Context, log *slog.Logger) (persistence string, err error) {
	mem, err := b.client.Info(ctx, "memory").Result()
	if err != nil {
		return "", b.wrap("init: info memory", err)
	}
	policy, ok := infoField(mem, "maxmemory_policy")
	switch {
	case !ok:
		log.LogAttrs(ctx, slog.LevelWarn, "redis: the server does not report its maxmemory_policy; an evicting policy would let slots run twice")
	case strings.HasPrefix(policy, "allkeys-") || strings.HasPrefix(policy, "volatile-"):
		if !b.allowEviction {
			return "", fmt.Errorf("%w: maxmemory-policy is %s; set it to noeviction, or allow it with Options.AllowEviction", ErrEvictionPolicy, policy)
		}
		log.LogAttrs(ctx, slog.LevelWarn, "redis: maxmemory-policy may evict claims (allowed by AllowEviction): an evicted claim lets its slot run twice",
			slog.String("maxmemory_policy", policy))
	}

	save, aof, known := "", "", false
	if cfg, err := b.client.ConfigGet(ctx, "save").Result(); err == nil {
		if cfg2, err := b.client.ConfigGet(ctx, "appendonly").Result(); err == nil {
			save, aof, known = cfg["save"], cfg2["appendonly"], true
		}
	}
	if !known { // CONFIG disabled: AOF is in INFO, the RDB schedule is not
		persistence = "unknown"
		if p, err := b.client.Info(ctx, "persistence").Result(); err == nil {
			if v, ok := infoField(p, "aof_enabled"); ok && v == "0" {
				persistence = "aof off, rdb unknown"
				log.LogAttrs(ctx, slog.LevelWarn, "redis: AOF is off and CONFIG is unavailable to read the RDB schedule; a restart may lose claims")
			}
		}
		return persistence, nil
	}
	rdb := strings.TrimSpace(save) != ""
	switch {
	case !rdb && aof == "no":
		persistence = "off"
		log.LogAttrs(ctx, slog.LevelWarn, `redis: persistence is off (save "" and appendonly no): a restart loses every claim, and slots running then may run twice`)
	case aof != "no":
		persistence = "aof"
	default:
		persistence = "rdb"
	}
	return persistence, nil
}

// topology is what Init learns of the servers' replication.
type topology struct {
	mode        string // "standalone", "sentinel" or "cluster"
	masters     int    // 1, or the cluster's masters
	replicas    int    // connected replicas (the fewest of any master)
	minReplicas int    // min-replicas-to-write (the lowest of any master); -1: unknown
}

// readTopology asks each master (the one master, or every master of a
// cluster) for its connected replicas (INFO replication) and its
// min-replicas-to-write (CONFIG GET; unknown where CONFIG is disabled).
func (b *Backend) readTopology(ctx context.Context) (topology, error) {
	t := topology{mode: "standalone", replicas: -1, minReplicas: -2}
	var mu sync.Mutex // ForEachMaster calls one concurrently
	one := func(ctx context.Context, c redis.Cmdable) error {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		n := 0
		if v, ok := infoField(info, "connected_slaves"); ok {
			n, _ = strconv.Atoi(v)
		}
		m := -1
		if cfg, err := c.ConfigGet(ctx, "min-replicas-to-write").Result(); err == nil {
			if v, ok := cfg["min-replicas-to-write"]; ok {
				m, _ = strconv.Atoi(v)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		t.masters++
		if t.replicas < 0 || n < t.replicas {
			t.replicas = n
		}
		if t.minReplicas == -2 || m < t.minReplicas {
			t.minReplicas = m
		}
		return nil
	}
	var err error
	switch c := b.client.(type) {
	case *redis.ClusterClient:
		t.mode = "cluster"
		err = c.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return one(ctx, c) })
	case *redis.Client:
		if c.Options().Addr == "FailoverClient" { // go-redis's mark of a Sentinel client
			t.mode = "sentinel"
		}
		err = one(ctx, c)
	default:
		err = one(ctx, b.client)
	}
	return t, err
}

// checkTopology logs to log what Init found of replication at INFO, and
// a WARN naming the risk of a setup that can lose acknowledged claims in
// a failover (replicas without WAIT) or that stops claiming when one node
// fails (WAIT for every replica there is, or for more than are
// connected). It never fails Init: replicas come and go.
func (b *Backend) checkTopology(ctx context.Context, persistence string, log *slog.Logger) {
	t, err := b.readTopology(ctx)
	if err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "redis: could not read the replication topology (INFO replication)", slog.String("error", err.Error()))
		return
	}
	attrs := []slog.Attr{
		slog.String("mode", t.mode), slog.Int("masters", t.masters), slog.Int("replicas_connected", t.replicas),
		slog.Int("wait_replicas", b.replicas), slog.Duration("wait_timeout", b.waitFor),
		slog.String("persistence", persistence),
	}
	if t.minReplicas >= 0 {
		attrs = append(attrs, slog.Int("min_replicas_to_write", t.minReplicas))
	}
	log.LogAttrs(ctx, slog.LevelInfo, "redis: topology", attrs...)
	switch {
	case b.replicas == 0 && (t.replicas > 0 || t.mode != "standalone"):
		log.LogAttrs(ctx, slog.LevelWarn, "redis: no WAIT: a failover can lose acknowledged claims, and their slots then run twice; set Options.Replicas (wait= in a daemon URL, e.g. wait=1) to a majority of the replicas", attrs...)
	case b.replicas > 0 && t.replicas < b.replicas:
		log.LogAttrs(ctx, slog.LevelWarn, "redis: WAIT needs more replicas than are connected: every claim fails (ErrNotReplicated) until enough are", attrs...)
	case b.replicas > 0 && t.replicas == b.replicas:
		log.LogAttrs(ctx, slog.LevelWarn, "redis: WAIT needs every connected replica: losing any one node stops all claims until it is back; run more replicas than Options.Replicas (wait= in a daemon URL) asks", attrs...)
	}
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
