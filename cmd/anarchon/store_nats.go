package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
	"github.com/nats-io/nats.go"
)

func init() { openers["nats"] = openNATS }

// natsPing is how often the daemon pings its NATS server; after two pings
// without an answer the client drops the connection and moves to another
// server of the URL. A server that freezes without closing its sockets
// (SIGSTOP, a hung VM) is thus left after 4–6 s instead of nats.go's
// default of several minutes.
const natsPing = 2 * time.Second

// natsTimeout is the daemon's default bound on one call of the NATS
// store (natsbackend.Options.Timeout; "timeout=" in the URL changes it).
// It is shorter than the library's 10 s because a call sent just before
// a stream's leader died waits it out: with 10 s the daemon failover
// drill's replicas resumed 10.9–12 s after the leader was killed, with
// 3 s in 3.7–7.7 s (RELIABILITY.md, "Store failover: the daemon"). A call
// that takes longer fails closed.
const natsTimeout = 3 * time.Second

// historyNames are the history stream and subject of a deployment with
// bucket prefix: "<prefix>_HISTORY" and "<prefix>.history". The default
// bucket keeps natsbackend's defaults (ANARCHON_HISTORY,
// anarchon.history), where older daemons wrote the history of every
// prefix (cmd/anarchon/README.md, "NATS cluster", says what that means
// for an upgrade).
func historyNames(prefix string) (stream, subject string) {
	return prefix + "_HISTORY", prefix + ".history"
}

// openNATS opens "nats://[user:password@]host:port[,host:port…]" with
// natsbackend.Open; "prefix" names the KV bucket (default "anarchon") and
// the history stream (historyNames), "timeout" bounds each call
// (natsTimeout), and "replicas" the replica count the bucket and stream are created with: 1
// to 5, or by default natsbackend.AutoReplicas (3 on a cluster of three or
// more servers, else 1). An existing bucket keeps its replicas; the
// backend logs what it found, with a WARN for one replica on a cluster.
func openNATS(u *url.URL, raw, prefix string, mustExist bool) (anarchon.Backend, error) {
	replicas, timeout := natsbackend.AutoReplicas, natsTimeout
	q := u.Query()
	if q.Has("replicas") {
		n, err := strconv.Atoi(q.Get("replicas"))
		if err != nil || n < 1 || n > 5 {
			return nil, &StoreURLError{URL: redact(raw), Code: StoreBadURL,
				Reason: fmt.Sprintf("replicas=%q: want a number from 1 to 5", q.Get("replicas"))}
		}
		replicas = n
		q.Del("replicas")
	}
	if q.Has("timeout") {
		d, err := time.ParseDuration(q.Get("timeout"))
		if err != nil || d < 500*time.Millisecond || d > time.Minute {
			return nil, &StoreURLError{URL: redact(raw), Code: StoreBadURL,
				Reason: fmt.Sprintf("timeout=%q: want a Go duration from 500ms to 1m, like 3s", q.Get("timeout"))}
		}
		timeout = d
		q.Del("timeout")
	}
	u.RawQuery = q.Encode()
	raw = u.String()
	// nats.go prints asynchronous errors to stderr unless given a
	// handler: log them, and connection changes, through slog.
	l := clientLogger{client: "nats"}
	opts := &natsbackend.Options{Bucket: prefix, Replicas: replicas, Timeout: timeout, MustExist: mustExist, Logger: storeLog(mustExist)}
	if prefix != "" && prefix != natsbackend.DefaultBucket {
		// A prefix separates history too: deployments sharing a server
		// must not read each other's runs of a job with the same name.
		opts.HistoryStream, opts.HistorySubject = historyNames(prefix)
	}
	natsOpts := []nats.Option{
		// A daemon keeps reconnecting for as long as it runs: with
		// nats.go's default (60 tries) a store down for two minutes
		// would close the connection for good.
		nats.MaxReconnects(-1),
		nats.PingInterval(natsPing), nats.MaxPingsOutstanding(2),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			l.Printf(context.Background(), "asynchronous error %v (subscription %q)", err, subject)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				l.Printf(context.Background(), "disconnected: %v", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			l.Printf(context.Background(), "reconnected to %s", nc.ConnectedUrlRedacted())
		}),
	}
	if waitForStore.Load() && !mustExist {
		// "run" opens the store before its start, which retries a store
		// that is not ready for --start-timeout: the connection keeps
		// trying in the background and Init reports it not connected
		// meanwhile. The other commands fail at once.
		natsOpts = append(natsOpts, nats.RetryOnFailedConnect(true))
	}
	b, err := natsbackend.Open(raw, opts, natsOpts...)
	if err != nil && strings.HasPrefix(err.Error(), "natsbackend: connect to ") {
		// "natsbackend: connect to <URL>: <nats.go's error>": the URL is
		// in the StoreURLError already.
		if cause := errors.Unwrap(err); cause != nil {
			return nil, &StoreURLError{URL: redact(raw), Code: StoreOpenFailed, Reason: "connect: " + scrub(cause.Error(), raw), Err: err}
		}
	}
	if errors.Is(err, natsbackend.ErrInvalid) {
		// Options the URL set (prefix= names the bucket and stream) that
		// natsbackend refuses, before it connects.
		return nil, &StoreURLError{URL: redact(raw), Code: StoreBadURL, Reason: fmt.Sprintf("prefix=%q: %s", prefix, err), Err: err}
	}
	return b, err
}
