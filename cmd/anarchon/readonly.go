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
// empty by their ErrNoData; their Init's other errors are returned as
// storeError, as the read would report them.
func storeInitialised(ctx context.Context, b anarchon.Backend, raw string) error {
	st, ok := b.(sqlStore)
	if !ok {
		// Redis and NATS, opened with MustExist, create nothing in Init
		// and say there when the store holds no anarchon data.
		err := b.Init(ctx)
		if errors.Is(err, redisbackend.ErrNoData) || errors.Is(err, natsbackend.ErrNoData) {
			return &StoreURLError{URL: redact(raw), Code: StoreNoData,
				Reason: "no anarchon data there (" + scrub(err.Error(), raw) + "): history and status never create it; \"run\", \"run-now\" and \"backfill\" do",
				Err:    err}
		}
		return storeError(err, raw)
	}
	_, err := st.Conn().All(ctx, "SELECT 1 FROM "+st.Qualify("runs")+" WHERE 1 = 0")
	if missingDatabase(err) {
		return &StoreURLError{URL: redact(raw), Code: StoreNoData,
			Reason: "no such database there (" + scrub(err.Error(), raw) + "): history and status never create it",
			Err:    err}
	}
	if err == nil || !missingTable(err) {
		return nil
	}
	return &StoreURLError{URL: redact(raw), Code: StoreNoData,
		Reason: "no anarchon tables there (" + st.Qualify("runs") + " does not exist): history and status never create them; \"run\", \"run-now\" and \"backfill\" do",
		Err:    err}
}

// missingDatabase reports whether err says the database named in the URL
// does not exist: PostgreSQL's SQLSTATE 3D000 (invalid_catalog_name),
// which the server sends when the connection is made.
func missingDatabase(err error) bool {
	var st interface{ SQLState() string }
	return err != nil && errors.As(err, &st) && st.SQLState() == "3D000"
}

// storeError is a store's failure to start (its Init, a connection it
// makes): a StoreURLError with the URL redacted and the driver's text
// scrubbed of the password, coded no_anarchon_data for a database that
// does not exist and open_failed otherwise. The text of a driver's error
// may repeat the URL's credentials, even pieces of them where a parser
// cut a password at an '@'.
func storeError(err error, raw string) error {
	return storeErrorFor(err, raw, true)
}

// storeErrorFor is storeError for a read-only command (readOnly) or for
// "run", which reports a database that does not exist as open_failed:
// it creates tables, not databases. An SQLite store's failure for lack of
// a permission is its reason alone, whichever command (sqliteAccessError).
func storeErrorFor(err error, raw string, readOnly bool) error {
	if err == nil {
		return nil
	}
	if ae := sqliteAccessError(err, raw); ae != nil {
		return ae
	}
	var se *StoreURLError
	if errors.As(err, &se) {
		return err
	}
	code := StoreOpenFailed
	if missingDatabase(err) && readOnly {
		code = StoreNoData
	}
	return &StoreURLError{URL: redact(raw), Code: code, Reason: scrub(err.Error(), raw), Err: err}
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
