package sqlbackend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// prepCounter is a database/sql driver that counts the statements its
// connections prepare; every statement succeeds and returns no rows.
type prepCounter struct{ prepared atomic.Int64 }

func (d *prepCounter) Open(string) (driver.Conn, error) { return prepConn{d}, nil }

type prepConn struct{ d *prepCounter }

func (c prepConn) Prepare(string) (driver.Stmt, error) {
	c.d.prepared.Add(1)
	return prepStmt{}, nil
}
func (prepConn) Close() error              { return nil }
func (prepConn) Begin() (driver.Tx, error) { return prepTx{}, nil }

type prepTx struct{}

func (prepTx) Commit() error   { return nil }
func (prepTx) Rollback() error { return nil }

type prepStmt struct{}

func (prepStmt) Close() error                               { return nil }
func (prepStmt) NumInput() int                              { return -1 }
func (prepStmt) Exec([]driver.Value) (driver.Result, error) { return driver.RowsAffected(0), nil }
func (prepStmt) Query([]driver.Value) (driver.Rows, error)  { return noRows{}, nil }

type noRows struct{}

func (noRows) Columns() []string         { return []string{"x"} }
func (noRows) Close() error              { return nil }
func (noRows) Next([]driver.Value) error { return io.EOF }

// With PrepareOnce a transaction prepares each query once however often
// it runs it (a batch runs the same few statements per slot); without,
// database/sql prepares the query at every run on this driver, which has
// no way to run a query unprepared. Both ways of beginning (BeginTx, and
// a Begin statement on one connection) are checked.
func TestPrepareOnce(t *testing.T) {
	d := &prepCounter{}
	db := sql.OpenDB(connector{d})
	defer db.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		conn DB
		want int64
	}{
		{"BeginTx", DB{DB: db}, 10},
		{"BeginTx, PrepareOnce", DB{DB: db, PrepareOnce: true}, 2},
		{"Begin statement", DB{DB: db, Begin: "BEGIN IMMEDIATE"}, 10},
		{"Begin statement, PrepareOnce", DB{DB: db, Begin: "BEGIN IMMEDIATE", PrepareOnce: true}, 2},
	} {
		d.prepared.Store(0)
		err := tc.conn.Transaction(ctx, func(tx Querier) error {
			for i := range 5 {
				for _, q := range []string{"SELECT a WHERE b = ?", "SELECT c WHERE d = ?"} {
					if _, err := tx.All(ctx, q, i); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// The Begin statement path also runs BEGIN and COMMIT, each
		// prepared once by database/sql.
		got := d.prepared.Load()
		if tc.conn.Begin != "" {
			got -= 2
		}
		if got != tc.want {
			t.Errorf("%s: 10 runs of 2 queries prepared %d statements, want %d", tc.name, got, tc.want)
		}
	}
}

type connector struct{ d *prepCounter }

func (c connector) Connect(context.Context) (driver.Conn, error) { return prepConn(c), nil }
func (c connector) Driver() driver.Driver                        { return c.d }

// With Statements a query is prepared once on the pool's connection and
// reused by every later call and transaction, where PrepareOnce alone
// prepares it again in every transaction. The pool has one connection:
// a transaction that asked the pool for a statement while it held that
// connection would wait for ever (the context ends the wait and fails
// the test). After Close the queries run unprepared by the cache, as
// without one.
func TestStatementCache(t *testing.T) {
	d, conn, ctx := cachedPoolOfOne(t)
	cache := conn.Statements
	queries := []string{"SELECT a WHERE b = ?", "SELECT c WHERE d = ?"}
	run := func() {
		t.Helper()
		err := conn.Transaction(ctx, func(tx Querier) error {
			for i := range 5 {
				for _, q := range queries {
					if _, err := tx.All(ctx, q, i); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The first transaction prepares its two queries for itself, then
	// once more each on the pool, for the transactions after it.
	run()
	if got := d.prepared.Load(); got != 4 {
		t.Fatalf("first transaction: %d statements prepared, want 4", got)
	}
	run()
	run()
	for i := range 5 {
		if _, err := conn.All(ctx, "SELECT e WHERE f = ?", i); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.prepared.Load(); got != 5 {
		t.Errorf("three transactions and five single runs of a third query: %d statements prepared, want 5", got)
	}
	if err := cache.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := conn.All(ctx, "SELECT e WHERE f = ?", i); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.prepared.Load(); got != 8 {
		t.Errorf("three runs after Close: %d statements prepared in all, want 8 (each run its own)", got)
	}
}

// A first use of a query outside a transaction waits for a connection
// while the pool's only one is in a transaction; the transaction must
// still get its own statements from the cache and end, and the waiting
// call then runs.
func TestStatementCacheWaitsBesideTransaction(t *testing.T) {
	_, conn, ctx := cachedPoolOfOne(t)
	db := conn.DB
	// The transaction's query gets a pooled statement.
	if _, err := conn.All(ctx, "SELECT a WHERE b = ?", 1); err != nil {
		t.Fatal(err)
	}
	other := make(chan error, 1)
	err := conn.Transaction(ctx, func(tx Querier) error {
		waits := db.Stats().WaitCount
		go func() {
			_, err := conn.All(ctx, "SELECT c WHERE d = ?", 2)
			other <- err
		}()
		// Until the other call waits for the connection this
		// transaction holds.
		for db.Stats().WaitCount == waits {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			runtime.Gosched()
		}
		_, err := tx.All(ctx, "SELECT a WHERE b = ?", 3)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-other; err != nil {
		t.Fatal(err)
	}
}

// cachedPoolOfOne is a DB with a StatementCache over a pool of one
// connection of the counting driver, and a context that ends the test's
// waits after 10 s (a wait for ever is the failure these tests look for).
func cachedPoolOfOne(t *testing.T) (*prepCounter, DB, context.Context) {
	d := &prepCounter{}
	db := sql.OpenDB(connector{d})
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return d, DB{DB: db, PrepareOnce: true, Statements: &StatementCache{}}, ctx
}
