package main

import (
	"net/url"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
)

func init() { openers["nats"] = openNATS }

// openNATS opens "nats://[user:password@]host:port" with natsbackend.Open;
// "prefix" names the KV bucket (default "anarchon").
func openNATS(_ *url.URL, raw, prefix string) (anarchon.Backend, error) {
	return natsbackend.Open(raw, &natsbackend.Options{Bucket: prefix})
}
