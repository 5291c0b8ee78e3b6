package sqlbackend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"sync/atomic"
	"testing"
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
