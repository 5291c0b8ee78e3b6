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
		Name:    "redis",
		NS:      ns,
		OpsName: "commands (INFO commandstats, all calls but INFO's)",
		Ops:     func(ctx context.Context) (int64, error) { return redisCommands(ctx, stats) },
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

// redisCommands sums the calls of every command in INFO commandstats
// but INFO's own (lines "cmdstat_get:calls=12,usec=…").
func redisCommands(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
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
