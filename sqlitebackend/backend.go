package sqlitebackend

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlbackend"
)

// DefaultBusyTimeout is how long a statement waits for another
// connection's (or process's) write lock before failing with SQLITE_BUSY,
// when Options.BusyTimeout is zero. A writer waits for the lock file
// beside the database (the package doc, "Writers across processes") for
// the longer of this and Options.BusyTimeout before it goes on to
// SQLite's lock without it.
const DefaultBusyTimeout = 10 * time.Second

// MinVersion is the oldest SQLite library the backend accepts: 3.35.0
// brought RETURNING, which the plain claim needs (the batches of results
// also use UPDATE … FROM, 3.33.0, and row values, 3.15.0). Init
// also needs the JSON functions (json_each, json_extract), built in since
// 3.38.0.
const MinVersion = "3.35.0"

// Dialect is the SQLite dialect of the SQL base (SPEC §7). The clock is
// julianday('now') in milliseconds, i.e. the clock of the host running the
// SQLite library (every process sharing a file is on that host). There are
// no row locks and no advisory locks: every write transaction is
// BEGIN IMMEDIATE, which takes the database's write lock at once, so claims
// run one after the other, across processes too.
var Dialect = sqlbackend.SQLDialect{
	BigInt:    "INTEGER",
	JSONKeys:  true,
	NowMs:     "(CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER))",
	ForUpdate: "",
	Serialize: "",
	IsAlreadyCreated: func(err error) bool {
		// "duplicate column name": a column Init adds to an older
		// database was added by another instance first.
		return err != nil && (strings.Contains(err.Error(), "already exists") || strings.Contains(err.Error(), "duplicate column name"))
	},
	IsPermanent: IsPermanent,
	HasColumn: func(schema, table, column string) (string, []any) {
		if schema == "" {
			schema = "main"
		}
		return "SELECT 1 FROM pragma_table_info(?, ?) WHERE name = ?", []any{table, schema, column}
	},
	PartialIndexes: true,
}

// Options configures a [Backend]. A nil *Options means all defaults.
type Options struct {
	// Prefix starts every table name. Defaults to sqlbackend.DefaultPrefix
	// ("anarchon_").
	Prefix string
	// BusyTimeout is set with PRAGMA busy_timeout on every connection the
	// backend uses: how long to wait for the write lock. A writer waits
	// for the lock file beside the database (the package doc, "Writers
	// across processes") for the longer of this and DefaultBusyTimeout.
	// Defaults to DefaultBusyTimeout (10 s). Must not be negative.
	BusyTimeout time.Duration
	// KeepJournalMode leaves the database's journal mode alone. By default
	// Init switches the file to WAL (PRAGMA journal_mode=WAL), which lets
	// readers run beside the writer; the mode is stored in the file.
	KeepJournalMode bool
	// CloseDB makes Close also close the *sql.DB. Set it only when the
	// caller hands the DB over (sqlitefile.Open does). Defaults to false:
	// the backend never closes what it did not open.
	CloseDB bool
	// File is the path of the database file, when the caller knows it
	// (sqlitefile.Open sets it). The backend then records the file's
	// identity (device and inode) at New and, at most once a second,
	// checks it before a claim: a file deleted or replaced under the
	// process (another process would open a new, empty database there
	// and claim the same slots) is logged as an ERROR once and every
	// claim fails closed with ErrFileReplaced until the process opens the
	// database again. Empty: no check. When Init fails with
	// SQLITE_CANTOPEN or SQLITE_READONLY, which name no file and no
	// cause, the error leads with the permission error that explains it,
	// if there is one: the file, its -wal or -shm file, or the
	// directory they are created in.
	File string
	// Logger receives the ERROR of a replaced file. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// DriverLocks declares that the driver itself begins every
	// transaction of db with BEGIN IMMEDIATE and gives every connection
	// its busy timeout, from the DSN (modernc.org/sqlite's
	// _txlock=immediate and _pragma=busy_timeout(N), which sqlitefile's
	// DSN has). New then runs transactions as database/sql's own and
	// keeps each statement prepared on the pool's connections from one
	// call to the next (sqlbackend.DB.Statements), where it otherwise
	// prepares every statement in every call, once per transaction
	// (the package doc, "Prepared statements", has what that cost and
	// what this saves). Set it only for such a
	// DSN: a transaction that does not take the write lock as it begins
	// breaks the one-writer-at-a-time order the claims rely on
	// (Dialect), and BusyTimeout then only bounds the wait for the lock
	// file, the connections' timeout being the DSN's.
	DriverLocks bool
	// Checkpoints makes the backend checkpoint the WAL itself, from a
	// goroutine of its own, off the writers' turn: a PASSIVE checkpoint
	// (PRAGMA wal_checkpoint(PASSIVE)) once the process's writers of the
	// file have been idle for CheckpointIdle, or, while they never are,
	// CheckpointEvery after the last one. Set it with a DSN that turns
	// SQLite's automatic checkpoint off (_pragma=wal_autocheckpoint(0)),
	// as sqlitefile.Open's does: that checkpoint runs inside the COMMIT
	// that takes the WAL past 1,000 pages, while every other writer of
	// every process waits for it, several times in a burst's first
	// claims (the package doc, "Checkpoints"; bench/HISTORY.md's §8 of
	// 2026-12-05 on 8fc7759, 4a04876, has what moving it saved). With New only (NewFromConn has no *sql.DB);
	// Close stops the goroutine. Without the DSN's setting SQLite
	// checkpoints too, as before.
	Checkpoints bool
}

// Backend is the SQLite backend: the SQL base ([sqlbackend.SQLBackend]) on
// a *sql.DB of any SQLite driver. All of the base's methods are promoted:
// it is an anarchon.Backend, anarchon.LeaseBackend and
// anarchon.ServerClock.
type Backend struct {
	*sqlbackend.SQLBackend
	db *sql.DB
	qc *queuedConn
}

var (
	_ anarchon.Backend      = (*Backend)(nil)
	_ anarchon.LeaseBackend = (*Backend)(nil)
	_ anarchon.JobChecker   = (*Backend)(nil)
	_ anarchon.ServerClock  = (*Backend)(nil)
)

// New returns a SQLite backend over db, opened with any database/sql
// SQLite driver (modernc.org/sqlite, github.com/mattn/go-sqlite3, …) on a
// file path. It does no I/O; Init checks the library version, switches to
// WAL and creates the tables.
//
// Every transaction is opened with BEGIN IMMEDIATE on one pooled
// connection, and every connection gets PRAGMA busy_timeout before use,
// so the caller's DSN needs neither; with Options.DriverLocks the DSN
// has both, and the backend keeps its statements prepared on the pool.
// The backend leaves the pool's size to the caller: bound it
// (SetMaxOpenConns, with SetMaxIdleConns to the same number, as
// sqlitefile.Open does with 16, see its package doc), or a
// burst of claims opens a connection per slot in flight. An in-memory
// database (":memory:") is private to one connection: give such a db
// SetMaxOpenConns(1).
func New(db *sql.DB, opts *Options) (*Backend, error) {
	if db == nil {
		return nil, errors.New("sqlitebackend: db is nil")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout < 0 {
		return nil, fmt.Errorf("sqlitebackend: negative BusyTimeout %v", o.BusyTimeout)
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	p := &prepared{pragma: fmt.Sprintf("PRAGMA busy_timeout = %d", o.BusyTimeout.Milliseconds())}
	conn := sqlbackend.DB{DB: db, Begin: "BEGIN IMMEDIATE", Prepare: p.prepare, PrepareOnce: true}
	if o.DriverLocks {
		conn = sqlbackend.DB{DB: db, PrepareOnce: true, Statements: &sqlbackend.StatementCache{}}
	}
	var ckpt *checkpointer
	closeFn := func(context.Context) error {
		var err error
		if ckpt != nil {
			ckpt.close()
		}
		if conn.Statements != nil {
			err = conn.Statements.Close()
		}
		if o.CloseDB {
			err = errors.Join(err, db.Close())
		}
		return err
	}
	b, err := newBackend(conn, db, o, closeFn)
	if err != nil {
		return nil, err
	}
	if o.Checkpoints {
		ckpt = startCheckpointer(db, b.qc, cmp.Or(o.Logger, slog.Default()))
	}
	return b, nil
}

// NewFromConn returns a SQLite backend over a caller's own client through
// the two-function adapter of SPEC §7 (sqlbackend.Funcs, or any
// sqlbackend.Conn), for a driver that is not a database/sql driver. Init
// runs the same checks as for New (the library version, WAL unless
// KeepJournalMode). What New does on the *sql.DB is then the caller's
// job: conn's Transaction must take the write lock at once (BEGIN
// IMMEDIATE), so that transactions run one at a time, and its connections
// should wait for the lock (PRAGMA busy_timeout). Options.BusyTimeout
// only bounds the wait for the lock file beside the database, with
// DefaultBusyTimeout as the least (the package doc, "Writers across
// processes"), and Options.CloseDB is not used: the backend never closes
// conn. DB returns nil.
func NewFromConn(conn sqlbackend.Conn, opts *Options) (*Backend, error) {
	if conn == nil {
		return nil, errors.New("sqlitebackend: conn is nil")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	return newBackend(conn, nil, o, nil)
}

func newBackend(conn sqlbackend.Conn, db *sql.DB, o Options, closeFn func(context.Context) error) (*Backend, error) {
	// The wait for the lock file is a queue, not a sleep between tries:
	// a short busy timeout, which bounds SQLite's handler, does not end
	// it early.
	qc := &queuedConn{conn: conn, busy: max(o.BusyTimeout, DefaultBusyTimeout)}
	cfg := sqlbackend.Config{
		Name:    "sqlite",
		Dialect: Dialect,
		Conn:    qc,
		Prefix:  o.Prefix,
		Check: func(ctx context.Context, c sqlbackend.Conn) error {
			return check(ctx, c, qc, !o.KeepJournalMode)
		},
		// SQLite names neither the file nor the cause of CANTOPEN or
		// READONLY; a -shm file left unwritable by another user's read
		// fails only the first write, in the migration, so the reason is
		// added to every error of Init, the lazy one's too.
		InitError: func(err error) error { return withAccessReason(err, o.File) },
		Close:     closeFn,
	}
	if o.File != "" {
		g, err := newFileGuard(o.File, o.Logger)
		if err != nil {
			return nil, err
		}
		cfg.Guard = g.check
	}
	base, err := sqlbackend.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Backend{SQLBackend: base, db: db, qc: qc}, nil
}

// DB returns the *sql.DB the backend uses, nil for a backend made by
// NewFromConn.
func (b *Backend) DB() *sql.DB { return b.db }

// prepared applies the per-connection PRAGMA once per driver connection.
// It remembers at most maxPrepared connections: past that it forgets them
// all (they get the PRAGMA again, which is harmless), so that connections
// the pool closed are not kept alive.
type prepared struct {
	pragma string
	mu     sync.Mutex
	done   map[any]struct{} // driver connections
}

const maxPrepared = 256

func (p *prepared) prepare(ctx context.Context, c *sql.Conn) error {
	var key any
	seen := false
	if err := c.Raw(func(dc any) error {
		if dc == nil || !reflect.TypeOf(dc).Comparable() {
			return nil // cannot remember it: set the PRAGMA every time
		}
		key = dc
		p.mu.Lock()
		_, seen = p.done[dc]
		p.mu.Unlock()
		return nil
	}); err != nil {
		return err
	}
	if seen {
		return nil
	}
	if _, err := c.ExecContext(ctx, p.pragma); err != nil {
		return err
	}
	if key == nil {
		return nil
	}
	p.mu.Lock()
	if p.done == nil || len(p.done) >= maxPrepared {
		p.done = make(map[any]struct{})
	}
	p.done[key] = struct{}{}
	p.mu.Unlock()
	return nil
}

// check is the "server check": it finds the file's writer queue (qc), and
// the library is new enough, and the file is in WAL mode. A fresh file
// that other instances are setting up at the same moment can answer
// SQLITE_BUSY without waiting (journal mode changes skip SQLite's busy
// handler), to any of these first statements of a new connection (the
// connection's own journal_mode PRAGMA runs before them), so a busy check
// is tried again for a few seconds.
func check(ctx context.Context, c sqlbackend.Conn, qc *queuedConn, wal bool) error {
	wait := 10 * time.Millisecond
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := qc.lockFile(ctx)
		if err == nil {
			err = checkOnce(ctx, c, wal)
		}
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// jsonProbe is a statement that needs the JSON functions of the batches.
const jsonProbe = "SELECT json_extract(value, '$[0]') FROM json_each('[[1]]')"

// noJSON reports whether err, from jsonProbe, is SQLite's answer for a
// library without the JSON functions: "no such function: json_extract"
// or "no such table: json_each" (SQLite's own messages, whatever the
// driver wraps them in).
func noJSON(err error) bool {
	m := err.Error()
	return strings.Contains(m, "no such function: json_") || strings.Contains(m, "no such table: json_each")
}

func checkOnce(ctx context.Context, c sqlbackend.Conn, wal bool) error {
	rows, err := c.All(ctx, "SELECT sqlite_version()")
	if err != nil {
		return err
	}
	if len(rows) != 1 {
		return errors.New("sqlite_version() returned no row")
	}
	v, _ := rows[0][0].(string)
	if b, ok := rows[0][0].([]byte); ok {
		v = string(b)
	}
	if !versionAtLeast(v, MinVersion) {
		return anarchon.Permanent(fmt.Errorf("SQLite %s is older than %s (RETURNING is needed)", v, MinVersion))
	}
	// The batches read their slots with json_each (Dialect.JSONKeys):
	// built in since 3.38.0, an extension (JSON1) of older libraries.
	if _, err := c.All(ctx, jsonProbe); err != nil {
		if !noJSON(err) {
			return err // busy, I/O, a closed pool…: as the version query's
		}
		return anarchon.Permanent(fmt.Errorf("SQLite %s lacks the JSON functions json_each and json_extract, which batches of claims and results use (built in since 3.38.0; older libraries need the JSON1 extension): %w", v, err))
	}
	if wal {
		return switchToWAL(ctx, c)
	}
	return nil
}

// switchToWAL puts the database in WAL mode, unless another connection
// already did.
func switchToWAL(ctx context.Context, c sqlbackend.Conn) error {
	mode := func(sql string) (string, error) {
		rows, err := c.All(ctx, sql)
		if err != nil || len(rows) != 1 || len(rows[0]) == 0 {
			return "", err
		}
		m, _ := rows[0][0].(string)
		if b, ok := rows[0][0].([]byte); ok {
			m = string(b)
		}
		return strings.ToLower(m), nil
	}
	if m, err := mode("PRAGMA journal_mode"); err == nil && m == "wal" {
		return nil
	}
	m, err := mode("PRAGMA journal_mode = WAL")
	switch {
	case err != nil:
		return fmt.Errorf("switching to WAL: %w", err)
	case m != "wal" && m != "memory" && m != "": // an in-memory database stays "memory"
		return fmt.Errorf("journal_mode is %q after asking for WAL", m)
	}
	return nil
}

// isBusy reports whether err is SQLite's "database is locked" (SQLITE_BUSY),
// by its text, since any driver may be in use.
func isBusy(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}

func versionAtLeast(v, min string) bool {
	var a, b [3]int
	fmt.Sscanf(v, "%d.%d.%d", &a[0], &a[1], &a[2])
	fmt.Sscanf(min, "%d.%d.%d", &b[0], &b[1], &b[2])
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}
