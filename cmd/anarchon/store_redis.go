package main

import (
	"errors"
	"net/url"
	"strings"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

func init() {
	for _, s := range []string{"redis", "rediss", "redis+sentinel", "rediss+sentinel"} {
		openers[s] = openRedis
		rawSchemes[s] = true // a host list ("a,b,c") does not parse as a URL
	}
}

// openRedis opens a Redis store URL with redisbackend.Open, which reads
// all of it: "redis://[user:password@]host:port[/db]" (rediss:// for
// TLS), "redis+sentinel://[user:password@]s1,s2,s3[/db]?master=NAME"
// (Sentinel), "redis://h1,h2,h3?cluster=true" (Redis Cluster); "wait=N"
// and "wait_timeout=D" make each claim wait for N replicas, "prefix" sets
// the key prefix. A URL it refuses is bad_url, a parameter go-redis does
// not know unknown_parameter.
func openRedis(_ *url.URL, raw, prefix string, mustExist bool) (anarchon.Backend, error) {
	redis.SetLogger(clientLogger{client: "redis"}) // go-redis logs to stderr by default
	b, err := redisbackend.Open(raw, &redisbackend.Options{Prefix: prefix, MustExist: mustExist, Logger: storeLog(mustExist)})
	if errors.Is(err, redisbackend.ErrInvalidInput) {
		code := StoreBadURL
		if strings.Contains(err.Error(), "unexpected option") { // go-redis's word for a parameter it does not know
			code = StoreUnknownParam
		}
		return nil, &StoreURLError{URL: redact(raw), Code: code, Reason: scrub(redisURLReason(err), raw), Err: err}
	}
	return b, err
}

// redisURLReason is the reason of redisbackend's error for a URL it
// refuses, "redisbackend: invalid input: redis URL <URL>: <reason>",
// without the URL, which the StoreURLError shows already.
func redisURLReason(err error) string {
	msg := strings.TrimPrefix(err.Error(), redisbackend.ErrInvalidInput.Error()+": ")
	if rest, ok := strings.CutPrefix(msg, "redis URL "); ok {
		if _, reason, ok := strings.Cut(rest, ": "); ok {
			return reason
		}
	}
	return msg
}
