package main

import (
	"net/url"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

func init() { openers["memory"] = openMemory }

// openMemory opens "memory:", a store private to this process: useful to
// try a crontab out, useless for replicas.
func openMemory(u *url.URL, raw, _ string, _ bool) (anarchon.Backend, error) {
	if u.Opaque != "" || u.Host != "" || u.Path != "" {
		return nil, &StoreURLError{URL: redact(raw), Code: StoreBadURL, Reason: "memory: takes no path or host"}
	}
	return membackend.New(nil), nil
}
