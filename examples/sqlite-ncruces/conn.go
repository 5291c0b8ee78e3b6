// Package sqlitencruces shows anarchon's SQLite backend on a driver that is
// not a database/sql driver: github.com/ncruces/go-sqlite3's own API,
// through the two-function adapter of SPEC §7 (sqlbackend.Conn) and
// sqlitebackend.NewFromConn. The backend's checks (SQLite version, WAL)
// run as with any other driver.
package sqlitencruces

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/anarchon/anarchon/sqlbackend"
	"github.com/ncruces/go-sqlite3"
)

// Conn is one ncruces connection as a sqlbackend.Conn. A SQLite connection
// runs one statement at a time, so calls take turns (a mutex), and a
// transaction holds the connection from BEGIN IMMEDIATE (SQLite's write
// lock, which sqlitebackend needs) to COMMIT or ROLLBACK. Processes or
// Conns sharing a file wait for the lock up to the busy timeout.
type Conn struct {
	mu sync.Mutex
	c  *sqlite3.Conn
}

var _ sqlbackend.Conn = (*Conn)(nil)

// Open opens the database file at path with a 10-second busy timeout.
func Open(path string) (*Conn, error) {
	c, err := sqlite3.Open(path)
	if err != nil {
		return nil, err
	}
	if err := c.BusyTimeout(10 * time.Second); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return &Conn{c: c}, nil
}

// Close closes the connection.
func (a *Conn) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.c.Close()
}

// All runs one statement and returns its rows (the "all" function).
func (a *Conn) All(ctx context.Context, query string, args ...any) ([][]any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.all(ctx, query, args)
}

// Transaction runs fn between BEGIN IMMEDIATE and COMMIT, or ROLLBACK if fn
// fails (the "transaction" function).
func (a *Conn) Transaction(ctx context.Context, fn func(tx sqlbackend.Querier) error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.all(ctx, "BEGIN IMMEDIATE", nil); err != nil {
		return err
	}
	err := fn(sqlbackend.QuerierFunc(func(ctx context.Context, q string, args ...any) ([][]any, error) {
		return a.all(ctx, q, args)
	}))
	if err == nil {
		if _, err = a.all(ctx, "COMMIT", nil); err == nil {
			return nil
		}
	}
	_, rerr := a.all(context.WithoutCancel(ctx), "ROLLBACK", nil)
	if rerr != nil && a.c.GetAutocommit() {
		rerr = nil // COMMIT or the failed statement already ended it
	}
	return errors.Join(err, rerr)
}

func (a *Conn) all(ctx context.Context, query string, args []any) ([][]any, error) {
	rows, err := a.run(ctx, query, args)
	var se *sqlite3.Error
	if errors.As(err, &se) {
		return nil, coded{err, int(se.ExtendedCode())}
	}
	return rows, err
}

// coded gives an ncruces error the Code() int method through which
// sqlitebackend.IsPermanent reads SQLite's result code (ncruces' own Code
// returns its ErrorCode type).
type coded struct {
	error
	code int
}

func (c coded) Code() int     { return c.code }
func (c coded) Unwrap() error { return c.error }

func (a *Conn) run(ctx context.Context, query string, args []any) ([][]any, error) {
	old := a.c.SetInterrupt(ctx)
	defer a.c.SetInterrupt(old)
	st, _, err := a.c.Prepare(query)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	for i, v := range args {
		if err := bind(st, i+1, v); err != nil {
			return nil, err
		}
	}
	var rows [][]any
	n := st.ColumnCount()
	for st.Step() {
		row := make([]any, n)
		for i := range row {
			switch st.ColumnType(i) {
			case sqlite3.INTEGER:
				row[i] = st.ColumnInt64(i)
			case sqlite3.FLOAT:
				row[i] = st.ColumnFloat(i)
			case sqlite3.TEXT:
				row[i] = st.ColumnText(i)
			case sqlite3.BLOB:
				row[i] = st.ColumnBlob(i, nil)
			}
		}
		rows = append(rows, row)
	}
	return rows, st.Err()
}

// bind binds the Go values the SQL base passes: integers, floats,
// strings, bytes, booleans and nil.
func bind(st *sqlite3.Stmt, i int, v any) error {
	switch x := v.(type) {
	case nil:
		return st.BindNull(i)
	case int64:
		return st.BindInt64(i, x)
	case int:
		return st.BindInt64(i, int64(x))
	case int32:
		return st.BindInt64(i, int64(x))
	case float64:
		return st.BindFloat(i, x)
	case string:
		return st.BindText(i, x)
	case []byte:
		return st.BindBlob(i, x)
	case bool:
		return st.BindBool(i, x)
	}
	return fmt.Errorf("sqlitencruces: cannot bind %T", v)
}
