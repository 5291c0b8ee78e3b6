package main

import (
	"net/url"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
)

func init() {
	openers["redis"] = openRedis
	openers["rediss"] = openRedis
}

// openRedis opens "redis://[user:password@]host:port[/db]" (rediss:// for
// TLS) with redisbackend.Open; "prefix" sets the key prefix.
func openRedis(_ *url.URL, raw, prefix string) (anarchon.Backend, error) {
	return redisbackend.Open(raw, &redisbackend.Options{Prefix: prefix})
}
