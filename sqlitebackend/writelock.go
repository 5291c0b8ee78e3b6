package sqlitebackend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon/sqlbackend"
)

// writeLocks holds one writer queue per database file of the process,
// keyed by the file's full path as SQLite reports it (PRAGMA
// database_list). Entries are never removed: one small queue, and the
// open lock file beside the database, per file opened in the life of the
// process.
var writeLocks struct {
	mu sync.Mutex
	m  map[string]*writerQueue
}

// writerQueue is the writers' turn on one database file: turn orders the
// process's own writers; the lock file, where it can be opened, orders
// the processes (see crossLock).
type writerQueue struct {
	writerActivity // for the checkpointer (Options.Checkpoints)

	turn chan struct{} // capacity 1: holding a value is holding the turn
	path string        // of the database file

	once  sync.Once
	files *crossLock // nil: other processes meet SQLite's busy handler only
}

// crossLock opens the lock file at the first write transaction or
// statement, not when the backend is made. Init's schema check is one
// (a BEGIN IMMEDIATE transaction of CREATE … IF NOT EXISTS statements,
// which change nothing in a database that has the tables), so every
// process that calls Init makes the lock file, the daemon's read-only
// commands too. A file that could not be opened is not tried again in
// the life of the process.
func (q *writerQueue) crossLock() *crossLock {
	q.once.Do(func() { q.files = openCrossLock(q.path+LockFileSuffix, q.path) })
	return q.files
}

// writeLockFor returns the writer queue of the file at path.
func writeLockFor(path string) *writerQueue {
	writeLocks.mu.Lock()
	defer writeLocks.mu.Unlock()
	if writeLocks.m == nil {
		writeLocks.m = make(map[string]*writerQueue)
	}
	q, ok := writeLocks.m[path]
	if !ok {
		q = &writerQueue{turn: make(chan struct{}, 1), path: path}
		writeLocks.m[path] = q
	}
	return q
}

// LockFileSuffix names the file beside a database on which the writers of
// different processes take turns (the package doc, "Writers across
// processes"): the database's path with this suffix.
const LockFileSuffix = "-writers"

// queuedConn is the backend's Conn: it makes the writers of one process
// take turns on a Go queue per database file before they ask SQLite for
// the file's write lock, so that SQLite's busy handler only arbitrates
// between processes. See the package doc, "Writers in one process".
//
// Every transaction, and every statement that does not start with SELECT,
// waits in the queue (in arrival order, for as long as its context
// allows); SELECTs run beside them, as WAL lets readers do. Until Init
// has found the file (lockFile), nothing waits.
type queuedConn struct {
	conn  sqlbackend.Conn
	busy  time.Duration // the longest a writer waits for the lock file
	queue atomic.Pointer[writerQueue]
}

// lockFile finds the main database's file and joins its queue. A
// database without a file (":memory:", a temporary database) is private
// to its connection: it gets no queue.
func (c *queuedConn) lockFile(ctx context.Context) error {
	if c.queue.Load() != nil {
		return nil
	}
	rows, err := c.conn.All(ctx, "PRAGMA database_list")
	if err != nil {
		return fmt.Errorf("reading the database file's name: %w", err)
	}
	for _, row := range rows {
		if len(row) < 3 || text(row[1]) != "main" {
			continue
		}
		if path := text(row[2]); path != "" {
			c.queue.Store(writeLockFor(path))
		}
		return nil
	}
	return errors.New("PRAGMA database_list has no main database")
}

func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

// wait takes the turn of the file's writers, first the process's and then,
// where there is a lock file, the processes'; release gives both back.
func (c *queuedConn) wait(ctx context.Context) (release func(), err error) {
	q := c.queue.Load()
	if q == nil {
		return func() {}, nil
	}
	q.enter()
	select {
	case q.turn <- struct{}{}:
	case <-ctx.Done():
		q.leave(time.Now(), false)
		return nil, context.Cause(ctx)
	}
	leave := func() {
		<-q.turn
		q.leave(time.Now(), true)
	}
	files := q.crossLock()
	if files == nil {
		return leave, nil
	}
	held, err := files.lock(ctx, c.busy)
	switch {
	case err != nil:
		leave()
		return nil, err
	case !held:
		return leave, nil
	}
	return func() {
		files.unlock()
		leave()
	}, nil
}

// All runs a SELECT at once and any other statement in the writers'
// queue.
func (c *queuedConn) All(ctx context.Context, query string, args ...any) ([][]any, error) {
	if isSelect(query) {
		return c.conn.All(ctx, query, args...)
	}
	release, err := c.wait(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return c.conn.All(ctx, query, args...)
}

// Transaction runs fn in a transaction of the underlying Conn, in the
// writers' queue: every transaction the backend opens writes.
func (c *queuedConn) Transaction(ctx context.Context, fn func(tx sqlbackend.Querier) error) error {
	release, err := c.wait(ctx)
	if err != nil {
		return err
	}
	defer release()
	return c.conn.Transaction(ctx, fn)
}

// isSelect reports whether query starts with the keyword SELECT, after
// white space: such a statement only reads (SQLite has no SELECT … FOR
// UPDATE, and the backend's SELECTs call no writing function).
func isSelect(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n")
	if len(q) < 6 || !strings.EqualFold(q[:6], "SELECT") {
		return false
	}
	return len(q) == 6 || !isWordByte(q[6])
}

func isWordByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}
