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
}

// openPostgres opens "postgres://user:password@host:5432/db?sslmode=…" with
// pgbackend.Open (a pgx pool the backend owns); "prefix" sets the table
// prefix and "schema" the schema the tables live in (created if absent).
// Other query parameters are pgx's.
func openPostgres(u *url.URL, raw, prefix string, _ bool) (anarchon.Backend, error) {
	q := u.Query()
	schema := q.Get("schema")
	if q.Has("schema") {
		q.Del("schema")
		u.RawQuery = q.Encode()
		raw = u.String()
	}
	return pgbackend.Open(context.Background(), raw, &pgbackend.Options{Prefix: prefix, Schema: schema})
}
