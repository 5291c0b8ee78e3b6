package main

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/pgbackend"
	"github.com/jackc/pgx/v5/pgconn"
)

func init() {
	openers["postgres"] = openPostgres
	openers["postgresql"] = openPostgres
	replicationOf = append(replicationOf, func(b anarchon.Backend) string {
		if pb, ok := b.(*pgbackend.Backend); ok && pb.Replication().Topology != "" {
			return pb.Replication().String()
		}
		return ""
	})
}

// openPostgres opens "postgres://user:password@host:5432/db?sslmode=…" with
// pgbackend.Open (a pgx pool the backend owns); "prefix" sets the table
// prefix and "schema" the schema the tables live in (created if absent).
// Other query parameters are pgx's, and so are several hosts,
// "postgres://u:p@h1:5432,h2:5432/db?target_session_attrs=read-write":
// pgx tries them in turn and keeps the first that takes writes, so that
// after a failover the replicas reconnect to the promoted standby. Init
// logs the server's replication (a WARN for an asynchronous standby or
// synchronous_commit off) to the daemon's log. A URL pgx cannot parse (a
// bad sslmode, a bad port) is bad_url; pgbackend.Open does not connect, so
// a server that cannot be reached fails later, at the start.
func openPostgres(u *url.URL, raw, prefix string, mustExist bool) (anarchon.Backend, error) {
	q := u.Query()
	schema := q.Get("schema")
	if q.Has("schema") {
		q.Del("schema")
		u.RawQuery = q.Encode()
		raw = u.String()
	}
	b, err := pgbackend.Open(context.Background(), raw, &pgbackend.Options{Prefix: prefix, Schema: schema, Logger: storeLog(mustExist)})
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		// "cannot parse `URL`: reason": the URL is in the StoreURLError
		// already.
		reason := pe.Error()
		if _, after, ok := strings.Cut(reason, "`: "); ok {
			reason = after
		}
		return nil, &StoreURLError{URL: redact(raw), Code: StoreBadURL, Reason: scrub(reason, raw), Err: err}
	}
	return b, err
}
