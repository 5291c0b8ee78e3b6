package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

func init() { register("redis", openRedis) }

// RedisAddr returns ANARCHON_TEST_REDIS_ADDR, or an error wrapping
// ErrNoServer.
func RedisAddr() (string, error) { return needEnv("ANARCHON_TEST_REDIS_ADDR") }

func openRedis(ctx context.Context, workdir, ns string, owner bool) (*Store, error) {
	addr, err := RedisAddr()
	if err != nil {
		return nil, err
	}
	prefix := "bench" + ns
	var cl closers
	stats := redis.NewClient(&redis.Options{Addr: addr})
	cl.add(func() { _ = stats.Close() })
	return &Store{
		Server: []string{"redis-server"},
		Name:   "redis",
		NS:     ns,
		Ops: func(ctx context.Context) (int64, string, error) {
			n, err := redisScriptCalls(ctx, stats)
			return n, "script calls (INFO commandstats: EVALSHA + EVAL; every batch of claims, heartbeats, finishes or results of the Redis backend is one script call, as is every single call; commands run inside scripts and direct commands such as TIME are not counted)", err
		},
		Open: func(ctx context.Context) (anarchon.Backend, error) {
			return cl.backend(redisbackend.Open("redis://"+addr, &redisbackend.Options{Prefix: prefix}))
		},
		Raw: func(ctx context.Context) (RawClaimer, error) {
			c := redis.NewClient(&redis.Options{Addr: addr})
			cl.add(func() { _ = c.Close() })
			return &redisRaw{c: c, prefix: prefix + "raw:"}, nil
		},
		Close: cl.close,
	}, nil
}

// redisRaw is SET key value NX PX: written only if the key is absent.
type redisRaw struct {
	c      *redis.Client
	prefix string
}

func (r *redisRaw) Claim(ctx context.Context, job string, slot int64, token string) (bool, error) {
	err := r.c.SetArgs(ctx, r.prefix+job+":"+strconv.FormatInt(slot, 10), token,
		redis.SetArgs{Mode: "NX", TTL: 7 * 24 * time.Hour}).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return err == nil, err
}

// redisScriptCalls sums the calls of EVALSHA and EVAL in INFO
// commandstats (lines "cmdstat_evalsha:calls=12,usec=…"). Redis counts
// the commands a script runs there too, under their own names, so the sum
// over all commands is not the number of requests clients sent.
func redisScriptCalls(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		v, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: INFO commandstats line %q: %w", line, err)
		}
		n += v
	}
	return n, nil
}
