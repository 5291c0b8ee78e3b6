package main

import (
	"context"
	"net/url"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
	"github.com/nats-io/nats.go"
)

func init() { openers["nats"] = openNATS }

// openNATS opens "nats://[user:password@]host:port" with natsbackend.Open;
// "prefix" names the KV bucket (default "anarchon").
func openNATS(_ *url.URL, raw, prefix string, mustExist bool) (anarchon.Backend, error) {
	// nats.go prints asynchronous errors to stderr unless given a
	// handler: log them, and connection changes, through slog.
	l := clientLogger{client: "nats"}
	return natsbackend.Open(raw, &natsbackend.Options{Bucket: prefix, MustExist: mustExist},
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
	)
}
