package bench

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

func init() { register("redis", openRedis) }

// RedisAddr returns ANARCHON_TEST_REDIS_ADDR, or an error wrapping
// ErrNoServer.
func RedisAddr() (string, error) { return needEnv("ANARCHON_TEST_REDIS_ADDR") }

func openRedis(ctx context.Context, workdir string) (*Store, error) {
	addr, err := RedisAddr()
	if err != nil {
		return nil, err
	}
	prefix := "bench" + strconv.FormatInt(uniq(), 36)
	var cl closers
	return &Store{
		Name: "redis",
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
