package main

import (
	"context"
	"net/url"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/pgbackend"
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
// synchronous_commit off) to the daemon's log.
func openPostgres(u *url.URL, raw, prefix string, _ bool) (anarchon.Backend, error) {
	q := u.Query()
	schema := q.Get("schema")
	if q.Has("schema") {
		q.Del("schema")
		u.RawQuery = q.Encode()
		raw = u.String()
	}
	return pgbackend.Open(context.Background(), raw, &pgbackend.Options{Prefix: prefix, Schema: schema, Logger: clientLog.Load()})
}
