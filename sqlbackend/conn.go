package sqlbackend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"

	"github.com/anarchon/anarchon"
)

// Querier runs one statement: the "all" function of SPEC §7's client
// adapter.
type Querier interface {
	// All runs query with args bound to its placeholders (already in the
	// database's syntax) and returns every row it produced, each as the
	// column values in order. A statement without a result set (or with
	// RETURNING that matched nothing) returns no rows and a nil error.
	// Values may be any of the types database/sql's driver.Value allows
	// (int64, float64, bool, []byte, string, time.Time, nil), or int32,
	// int, uint32; the base converts them.
	All(ctx context.Context, query string, args ...any) ([][]any, error)
}

// Conn is the two-function client adapter of SPEC §7: "all" (Querier) and
// "transaction". Wrap any client in it to use a connection the caller
// already has; [DB] is the ready adapter for *sql.DB, and pgbackend has one
// for pgxpool.Pool. A backend never closes a Conn it was given.
type Conn interface {
	Querier
	// Transaction runs fn in one transaction: it commits if fn returns nil
	// and rolls back otherwise, returning fn's error. Statements run
	// through tx see and lock what the transaction does. On a database
	// whose dialect has an empty Serialize, transactions must run one at a
	// time (SQLite's BEGIN IMMEDIATE).
	Transaction(ctx context.Context, fn func(tx Querier) error) error
}

// Funcs adapts two plain functions to [Conn], for clients that are
// neither *sql.DB nor pgx. Both fields are required.
type Funcs struct {
	AllFunc         func(ctx context.Context, query string, args ...any) ([][]any, error)
	TransactionFunc func(ctx context.Context, fn func(tx Querier) error) error
}

// All calls f.AllFunc.
func (f Funcs) All(ctx context.Context, query string, args ...any) ([][]any, error) {
	return f.AllFunc(ctx, query, args...)
}

// Transaction calls f.TransactionFunc.
func (f Funcs) Transaction(ctx context.Context, fn func(tx Querier) error) error {
	return f.TransactionFunc(ctx, fn)
}

// QuerierFunc adapts a function to [Querier].
type QuerierFunc func(ctx context.Context, query string, args ...any) ([][]any, error)

// All calls f.
func (f QuerierFunc) All(ctx context.Context, query string, args ...any) ([][]any, error) {
	return f(ctx, query, args...)
}

// DB adapts a *sql.DB to [Conn]. The zero Begin uses database/sql's own
// transactions (BeginTx). A non-empty Begin takes one connection from the
// pool and runs Begin on it ("BEGIN IMMEDIATE" for SQLite), then COMMIT or
// ROLLBACK, for databases whose driver cannot begin the kind of
// transaction needed. DB never closes the *sql.DB.
type DB struct {
	DB    *sql.DB
	Begin string // the statement that opens a transaction; "" means BeginTx
	// Prepare, if set, runs on every pooled connection before it is used
	// (e.g. per-connection PRAGMAs). It may be called more than once for a
	// connection.
	Prepare func(ctx context.Context, c *sql.Conn) error
	// PrepareOnce makes Transaction prepare each query once and run it
	// from the prepared statement for the rest of the transaction, for a
	// database whose statements cost most in their preparing, in process
	// (SQLite, which sqlitebackend sets it for). A client that sends a
	// query with its arguments in one round trip (MySQL's driver with
	// interpolateParams) would pay a second round trip to prepare.
	PrepareOnce bool
	// TxOptions, if set, is passed to BeginTx when Begin and Prepare are
	// unset, e.g. MySQL's READ COMMITTED isolation level.
	TxOptions *sql.TxOptions
	// Statements, if set, keeps each query prepared on the pool across
	// calls, for a database whose statements cost most in their
	// preparing (SQLite, in process): All runs it through one *sql.Stmt
	// per query text, which database/sql prepares once on each pooled
	// connection and forgets with the connection, and a transaction runs
	// it through Tx.StmtContext, which reuses the connection's. It is
	// used only where Begin and Prepare are unset (a connection the
	// adapter must prepare, or begin a transaction on itself, is a
	// *sql.Conn, on which no pooled statement runs). The caller closes
	// it (StatementCache.Close) before or with the *sql.DB.
	Statements *StatementCache
}

// StatementCache holds the pooled statements of [DB.Statements], one per
// query text, up to maxCachedStatements; a query beyond them runs
// unprepared, as without a cache. The zero value is ready to use.
type StatementCache struct {
	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	closed bool
}

// maxCachedStatements bounds a StatementCache. The SQL base runs a few
// dozen query texts (their {keys} lists, where the dialect has no JSON
// form, vary with the batch's size); the bound keeps a cache of texts
// that never come again from growing without end.
const maxCachedStatements = 256

// get returns the pooled statement of query, nil if there is none; with
// prepare, a query that has none is prepared on db first (nil and no
// error once the cache is full or closed). A caller that holds one of
// db's connections (a transaction) must not ask to prepare: the prepare
// takes a connection of the pool, and a pool of one would wait for ever.
func (c *StatementCache) get(ctx context.Context, db *sql.DB, query string, prepare bool) (*sql.Stmt, error) {
	c.mu.Lock()
	st, ok := c.stmts[query]
	full := c.closed || len(c.stmts) >= maxCachedStatements
	c.mu.Unlock()
	if ok || !prepare || full {
		return st, nil
	}
	// Prepared without the lock: the prepare may wait for a connection
	// that a transaction holds, and the transaction may be asking for
	// its statements meanwhile. Two first uses of one query may both
	// prepare it; the second one's statement is closed.
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if have, ok := c.stmts[query]; ok {
		_ = st.Close()
		return have, nil
	}
	if c.closed || len(c.stmts) >= maxCachedStatements {
		// Closed or filled while this one was prepared: it is not
		// kept, and runs unprepared by the cache.
		_ = st.Close()
		return nil, nil
	}
	if c.stmts == nil {
		c.stmts = make(map[string]*sql.Stmt)
	}
	c.stmts[query] = st
	return st, nil
}

// Close closes every statement of the cache; queries after it run
// unprepared.
func (c *StatementCache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for _, st := range c.stmts {
		errs = append(errs, st.Close())
	}
	c.stmts = nil
	return errors.Join(errs...)
}

type rowQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// stmtCache runs a transaction's statements; with prepare, each query is
// prepared once on the transaction's connection and closed when it ends.
// A batch of claims runs the same few statements for each of its slots,
// and preparing (parsing and planning) them once instead of once per slot
// is what SQLite, in process, spends most of such a statement's time on.
//
// With pooled statements (DB.Statements, a *sql.Tx), a query is taken
// from the pool's statement instead, through Tx.StmtContext: no
// preparing on a connection that has it prepared already.
type stmtCache struct {
	on interface {
		rowQuerier
		PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	}
	prepare bool
	pooled  func(ctx context.Context, query string) (*sql.Stmt, error) // nil: none
	stmts   map[string]*sql.Stmt
}

func (c *stmtCache) all(ctx context.Context, query string, args ...any) ([][]any, error) {
	if !c.prepare && c.pooled == nil {
		return allRows(ctx, c.on, query, args)
	}
	st, ok := c.stmts[query]
	if !ok {
		var err error
		if c.pooled != nil {
			st, err = c.pooled(ctx, query)
		}
		switch {
		case err != nil:
			return nil, err
		case st == nil && !c.prepare:
			return allRows(ctx, c.on, query, args)
		case st == nil:
			if st, err = c.on.PrepareContext(ctx, query); err != nil {
				return nil, err
			}
		}
		if c.stmts == nil {
			c.stmts = map[string]*sql.Stmt{}
		}
		c.stmts[query] = st
	}
	return allRows(ctx, stmtQuerier{st}, query, args)
}

// close closes the prepared statements, before the transaction ends.
func (c *stmtCache) close() {
	for _, st := range c.stmts {
		_ = st.Close()
	}
}

// stmtQuerier runs a prepared statement as a rowQuerier (the query is the
// statement's own).
type stmtQuerier struct{ st *sql.Stmt }

func (q stmtQuerier) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return q.st.QueryContext(ctx, args...)
}

// All runs query on the pool and returns its rows.
func (d DB) All(ctx context.Context, query string, args ...any) ([][]any, error) {
	if d.Prepare == nil {
		if d.Statements != nil {
			st, err := d.Statements.get(ctx, d.DB, query, true)
			if err != nil {
				return nil, err
			}
			if st != nil {
				return allRows(ctx, stmtQuerier{st}, query, args)
			}
		}
		return allRows(ctx, d.DB, query, args)
	}
	c, err := d.DB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := d.Prepare(ctx, c); err != nil {
		return nil, err
	}
	return allRows(ctx, c, query, args)
}

// Transaction runs fn in one transaction on one connection of the pool;
// with PrepareOnce, each query fn runs is prepared once and kept until
// the transaction ends (stmtCache).
func (d DB) Transaction(ctx context.Context, fn func(tx Querier) error) (err error) {
	if d.Begin == "" && d.Prepare == nil {
		tx, err := d.DB.BeginTx(ctx, d.TxOptions)
		if err != nil {
			return err
		}
		st := stmtCache{on: tx, prepare: d.PrepareOnce}
		var missed []string // queries without a pooled statement yet
		if d.Statements != nil {
			st.pooled = func(ctx context.Context, query string) (*sql.Stmt, error) {
				p, err := d.Statements.get(ctx, d.DB, query, false)
				if p == nil || err != nil {
					missed = append(missed, query)
					return nil, err
				}
				return tx.StmtContext(ctx, p), nil
			}
		}
		err = fn(QuerierFunc(st.all))
		st.close()
		if err != nil {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		} else {
			err = tx.Commit()
		}
		// The transaction's connection is back in the pool: the queries
		// it ran without a pooled statement get one for the next
		// transaction. A failed prepare here only leaves the query
		// unpooled; its next run reports what is wrong with it.
		for _, q := range missed {
			_, _ = d.Statements.get(ctx, d.DB, q, true)
		}
		return err
	}
	c, err := d.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if d.Prepare != nil {
		if err := d.Prepare(ctx, c); err != nil {
			return err
		}
	}
	begin := d.Begin
	if begin == "" {
		begin = "BEGIN"
	}
	if _, err := c.ExecContext(ctx, begin); err != nil {
		return err
	}
	st := stmtCache{on: c, prepare: d.PrepareOnce}
	err = fn(QuerierFunc(st.all))
	st.close()
	if err == nil {
		if _, err = c.ExecContext(ctx, "COMMIT"); err == nil {
			return nil
		}
	}
	// Roll back even if ctx has ended; a connection left inside a
	// transaction is discarded instead of going back to the pool.
	if _, rerr := c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
	}
	return err
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

func allRows(ctx context.Context, q rowQuerier, query string, args []any) ([][]any, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, rows.Close()
}

// value conversion of the column values a Querier returns.

func asInt64(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case int:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case float64:
		return int64(x), nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case []byte:
		var n int64
		_, err := fmt.Sscan(string(x), &n)
		return n, err
	case string:
		var n int64
		_, err := fmt.Sscan(x, &n)
		return n, err
	}
	// A column of another type is a schema this version does not know:
	// reading it again gives the same.
	return 0, anarchon.Permanent(fmt.Errorf("sqlbackend: unexpected integer column type %T", v))
}

func asString(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	}
	return "", anarchon.Permanent(fmt.Errorf("sqlbackend: unexpected text column type %T", v))
}
