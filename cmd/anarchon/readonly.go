package main

import (
	"context"
	"errors"
	"strings"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/anarchon/anarchon/sqlbackend"
	"github.com/go-sql-driver/mysql"
)

// sqlStore is what the SQL backends (SQLite, PostgreSQL, MySQL) share: the
// names of their tables and their connection.
type sqlStore interface {
	Qualify(name string) string
	Conn() sqlbackend.Conn
}

// storeInitialised returns an error when b is an SQL store without
// anarchon's tables, so that the read-only commands, whose first call
// (Init) creates them, never make a second, empty store of a mistyped
// schema, database or prefix. A failed look for another reason is left to
// the read that follows, which reports it. Redis and NATS stores are
// initialised here (opened with MustExist, Init writes nothing) and found
// empty by their ErrNoData.
func storeInitialised(ctx context.Context, b anarchon.Backend, raw string) error {
	st, ok := b.(sqlStore)
	if !ok {
		// Redis and NATS, opened with MustExist, create nothing in Init
		// and say there when the store holds no anarchon data.
		err := b.Init(ctx)
		if errors.Is(err, redisbackend.ErrNoData) || errors.Is(err, natsbackend.ErrNoData) {
			return &StoreURLError{URL: redact(raw), Code: StoreNoData,
				Reason: "no anarchon data there (" + scrub(err.Error(), raw) + "): history and status never create it; \"run\" and \"run-now\" do",
				Err:    err}
		}
		return nil
	}
	_, err := st.Conn().All(ctx, "SELECT 1 FROM "+st.Qualify("runs")+" WHERE 1 = 0")
	if err == nil || !missingTable(err) {
		return nil
	}
	return &StoreURLError{URL: redact(raw), Code: StoreNoData,
		Reason: "no anarchon tables there (" + st.Qualify("runs") + " does not exist): history and status never create them; \"run\" and \"run-now\" do",
		Err:    err}
}

// missingTable reports whether err says a table (or its schema) does not
// exist: PostgreSQL's SQLSTATE 42P01 or 3F000, MySQL's error 1146, SQLite's
// "no such table".
func missingTable(err error) bool {
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		return st.SQLState() == "42P01" || st.SQLState() == "3F000"
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1146
	}
	return strings.Contains(err.Error(), "no such table")
}
