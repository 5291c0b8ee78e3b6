package main

import (
	"net/url"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

func init() {
	openers["redis"] = openRedis
	openers["rediss"] = openRedis
}

// openRedis opens "redis://[user:password@]host:port[/db]" (rediss:// for
// TLS) with redisbackend.Open; "prefix" sets the key prefix.
func openRedis(_ *url.URL, raw, prefix string, mustExist bool) (anarchon.Backend, error) {
	redis.SetLogger(clientLogger{client: "redis"}) // go-redis logs to stderr by default
	return redisbackend.Open(raw, &redisbackend.Options{Prefix: prefix, MustExist: mustExist})
}
