package pgbackend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlbackend"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// MinServerVersion is the oldest PostgreSQL server accepted, as
// server_version_num: 10.0.
const MinServerVersion = 100000

// lockClass namespaces anarchon's advisory locks (the first key of the
// two-key form), so they do not collide with an application's own.
const lockClass = 0x616e6172 // "anar"

// Dialect is the PostgreSQL dialect of the SQL base (SPEC §7): BIGINT
// columns, the server clock read with clock_timestamp() (the time when
// evaluated, after any lock wait, not the transaction's start), row locks
// with FOR UPDATE (the locked job row serialises the claims of a job), $n
// placeholders, and a transaction-scoped advisory lock on a hash of the
// key for migrations and for creating a job's row on its first claim (two
// keys whose hashes collide only wait for each other).
var Dialect = sqlbackend.SQLDialect{
	BigInt:           "BIGINT",
	NowMs:            "(floor(extract(epoch from clock_timestamp()) * 1000)::bigint)",
	ForUpdate:        " FOR UPDATE",
	Placeholders:     sqlbackend.Dollar,
	Serialize:        "SELECT 1 FROM pg_advisory_xact_lock(" + strconv.Itoa(lockClass) + ", hashtext(?))",
	IsAlreadyCreated: IsAlreadyCreated,
	IsPermanent:      IsPermanent,
	PartialIndexes:   true,
}

// sqlStater is the interface of pgconn.PgError (and of lib/pq's error
// through its own method set): errors that carry an SQLSTATE code.
type sqlStater interface{ SQLState() string }

// IsAlreadyCreated reports whether err is PostgreSQL's answer to two
// sessions creating the same object at once: 42P07 duplicate_table, 42P06
// duplicate_schema, 42710 duplicate_object, or 23505 unique_violation (on
// the pg_type or pg_namespace catalog, which CREATE … IF NOT EXISTS can
// hit when racing), or 42701 duplicate_column (a column Init adds to an
// older schema). The error is matched through its SQLState method.
func IsAlreadyCreated(err error) bool {
	var s sqlStater
	if !errors.As(err, &s) {
		return false
	}
	switch s.SQLState() {
	case "42P07", "42P06", "42710", "23505", "42701":
		return true
	}
	return false
}

// Options configures a [Backend]. A nil *Options means all defaults.
type Options struct {
	// Prefix starts every table name. Defaults to sqlbackend.DefaultPrefix
	// ("anarchon_").
	Prefix string
	// Schema puts the tables in this schema, which Init creates if absent
	// (CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on the
	// database). Defaults to none: the connection's search_path.
	Schema string
	// NoNotify turns off NOTIFY on release and finish, and WatchRuns. By
	// default every release, finish or abandonment sends a NOTIFY in the
	// same transaction, so watching instances wake at once.
	NoNotify bool
	// Logger receives what Init finds of the server's replication: an
	// INFO line describing it when there are standbys, and a WARN per
	// risk (an asynchronous standby, synchronous_commit off, local or
	// remote_write; see [Replication]), or when the role may not read the
	// settings. Defaults to slog.Default().
	Logger *slog.Logger
}

// Backend is the PostgreSQL backend: the SQL base ([sqlbackend.SQLBackend])
// on a pgx connection pool or a *sql.DB. All of the base's methods are
// promoted: it is an anarchon.Backend, anarchon.LeaseBackend and
// anarchon.ServerClock, and, unless Options.NoNotify, an anarchon.Watcher.
type Backend struct {
	*sqlbackend.SQLBackend
	pool     *pgxpool.Pool
	db       *sql.DB
	channel  string
	noNotify bool
	secret   string // a password to keep out of error texts
	log      *slog.Logger

	replMu sync.Mutex
	repl   Replication // what the last server check read
}

var (
	_ anarchon.Backend      = (*Backend)(nil)
	_ anarchon.LeaseBackend = (*Backend)(nil)
	_ anarchon.JobChecker   = (*Backend)(nil)
	_ anarchon.ServerClock  = (*Backend)(nil)
	_ anarchon.Watcher      = (*Backend)(nil)
)

// Open opens a pgx pool on connString (a URL, postgres://user:pass@host/db?
// sslmode=verify-full, or key=value pairs; TLS, authentication and pool
// sizes (pool_max_conns) are set there, see pgxpool.ParseConfig) and
// returns a backend that owns it: Close closes the pool. No connection is
// made until Init. Errors never contain the password.
func Open(ctx context.Context, connString string, opts *Options) (*Backend, error) {
	secret := passwordOf(connString)
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, redact(fmt.Errorf("pgbackend: parse connection string: %w", err), secret)
	}
	if cfg.ConnConfig.Password != "" {
		secret = cfg.ConnConfig.Password
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, redact(fmt.Errorf("pgbackend: %w", err), secret)
	}
	b, err := newBackend(Pool(pool), pool, nil, opts, secret, func(context.Context) error {
		pool.Close()
		return nil
	})
	if err != nil {
		pool.Close()
		return nil, err
	}
	return b, nil
}

// NewFromPool returns a backend on the caller's pool, which Close leaves
// open.
func NewFromPool(pool *pgxpool.Pool, opts *Options) (*Backend, error) {
	if pool == nil {
		return nil, errors.New("pgbackend: pool is nil")
	}
	return newBackend(Pool(pool), pool, nil, opts, "", nil)
}

// NewFromDB returns a backend on the caller's *sql.DB of any PostgreSQL
// driver, which Close leaves open. WatchRuns needs the pgx driver
// (github.com/jackc/pgx/v5/stdlib); with another driver it returns an
// error and the scheduler polls.
func NewFromDB(db *sql.DB, opts *Options) (*Backend, error) {
	if db == nil {
		return nil, errors.New("pgbackend: db is nil")
	}
	return newBackend(sqlbackend.DB{DB: db}, nil, db, opts, "", nil)
}

// NewFromConn returns a backend over a caller's own client through the
// two-function adapter of SPEC §7 (sqlbackend.Funcs, or any
// sqlbackend.Conn), for a client that is neither pgx nor database/sql.
// Statements use PostgreSQL's $1, $2, … placeholders. Init runs the same
// server check and creates the same routines as for the other
// constructors, and finishes and releases send NOTIFY through conn; but
// the backend has no connection to LISTEN on, so WatchRuns returns
// ErrNoWatch (instances poll). The backend never closes conn.
func NewFromConn(conn sqlbackend.Conn, opts *Options) (*Backend, error) {
	if conn == nil {
		return nil, errors.New("pgbackend: conn is nil")
	}
	return newBackend(conn, nil, nil, opts, "", nil)
}

func newBackend(conn sqlbackend.Conn, pool *pgxpool.Pool, db *sql.DB, opts *Options, secret string, closeFn func(context.Context) error) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	b := &Backend{pool: pool, db: db, noNotify: o.NoNotify, secret: secret, log: o.Logger}
	if b.log == nil {
		b.log = slog.Default()
	}
	cfg := sqlbackend.Config{
		Name:    "postgres",
		Dialect: Dialect,
		Conn:    conn,
		Prefix:  o.Prefix,
		Schema:  o.Schema,
		Check:   b.check,
		Close:   closeFn,
	}
	// The channel depends only on the schema and prefix, which New
	// validates; an invalid one fails there.
	b.channel = channelName(o.Schema, prefixOr(o.Prefix))
	notifyOn := ""
	if !o.NoNotify {
		cfg.Notify = b.notify
		notifyOn = b.channel
	}
	cfg.Routines = routines(notifyOn)
	base, err := sqlbackend.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("pgbackend: %w", err)
	}
	b.SQLBackend = base
	return b, nil
}

// Pool adapts a pgx pool to sqlbackend.Conn (SPEC §7's ready adapter).
// Transactions use pgx's BEGIN/COMMIT on one pooled connection. The
// adapter never closes the pool.
func Pool(p *pgxpool.Pool) sqlbackend.Conn {
	return sqlbackend.Funcs{
		AllFunc: func(ctx context.Context, q string, args ...any) ([][]any, error) {
			return collect(p.Query(ctx, q, args...))
		},
		TransactionFunc: func(ctx context.Context, fn func(sqlbackend.Querier) error) error {
			return pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
				return fn(sqlbackend.QuerierFunc(func(ctx context.Context, q string, args ...any) ([][]any, error) {
					return collect(tx.Query(ctx, q, args...))
				}))
			})
		},
	}
}

func collect(rows pgx.Rows, err error) ([][]any, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Pool returns the pgx pool the backend uses, nil if it runs on a *sql.DB.
func (b *Backend) Pool() *pgxpool.Pool { return b.pool }

// check is the server check run by Init: the server is PostgreSQL 10 or
// newer and not a standby, and the schema exists. It reads the
// replication settings and logs them (Options.Logger).
func (b *Backend) check(ctx context.Context, c sqlbackend.Conn) error {
	rows, err := c.All(ctx, "SELECT current_setting('server_version_num')")
	if err != nil {
		return redact(err, b.secret)
	}
	if len(rows) != 1 {
		return errors.New("server_version_num: no row")
	}
	s, _ := rows[0][0].(string)
	if bs, ok := rows[0][0].([]byte); ok {
		s = string(bs)
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("server_version_num %q: %w", s, err)
	}
	if v < MinServerVersion {
		return anarchon.Permanent(fmt.Errorf("PostgreSQL server version %d is older than %d", v, MinServerVersion))
	}
	repl, recovery, err := readReplication(ctx, c)
	switch {
	case err != nil && IsPermanent(err):
		// A role that may not read the views (a hardened server): the
		// report is lost, not the backend.
		b.log.LogAttrs(ctx, slog.LevelWarn, "postgres: cannot read the server's replication settings; a failover's risks are not judged",
			slog.String("error", redact(err, b.secret).Error()))
	case err != nil:
		return redact(err, b.secret)
	case recovery:
		return ErrStandby
	default:
		b.replMu.Lock()
		b.repl = repl
		b.replMu.Unlock()
		logReplication(ctx, b.log, repl)
	}
	if schema := b.Schema(); schema != "" {
		q := `CREATE SCHEMA IF NOT EXISTS "` + schema + `"`
		for try := 0; ; try++ {
			_, err := c.All(ctx, q)
			if err == nil {
				break
			}
			if try > 2 || !IsAlreadyCreated(err) {
				return fmt.Errorf("create schema: %w", err)
			}
		}
	}
	return nil
}

// channelName is the LISTEN/NOTIFY channel of a schema and prefix, at most
// 63 bytes (NAMEDATALEN-1).
func channelName(schema, prefix string) string {
	ch := prefix + "runs"
	if schema != "" {
		ch = schema + "." + ch
	}
	if len(ch) > 63 {
		ch = ch[:63]
	}
	return ch
}

func prefixOr(p string) string {
	if p == "" {
		return sqlbackend.DefaultPrefix
	}
	return p
}

// Replication returns what Init read of the server's replication: the
// topology, the settings, the standbys connected and the risks logged.
// Before a successful Init, or when the role may not read the settings
// (Init then logs a WARN and goes on), its Topology is "". It is read
// once, at Init: a standby that connects or leaves later is not seen.
func (b *Backend) Replication() Replication {
	b.replMu.Lock()
	defer b.replMu.Unlock()
	r := b.repl
	r.Standbys = append([]Standby(nil), r.Standbys...)
	r.Warnings = append([]string(nil), r.Warnings...)
	return r
}

// Channel returns the LISTEN/NOTIFY channel the backend notifies on.
func (b *Backend) Channel() string { return b.channel }

// notify returns the NOTIFY of ev, sent in the transaction that released
// or finished the run. The payload is "<kind> <slot> <job>"; a payload
// must stay under 8000 bytes, so a longer job name is cut (the event is a
// hint; watchers re-claim to learn the truth).
func (b *Backend) notify(ev anarchon.RunEvent) (string, []any) {
	p := strconv.Itoa(int(ev.Kind)) + " " + strconv.FormatInt(ev.Slot, 10) + " " + ev.Job
	if len(p) > 7900 {
		p = p[:7900]
	}
	return "SELECT 1 FROM pg_notify(?, ?)", []any{b.channel, p}
}

func parsePayload(p string) (anarchon.RunEvent, bool) {
	parts := strings.SplitN(p, " ", 3)
	if len(parts) != 3 {
		return anarchon.RunEvent{}, false
	}
	k, err1 := strconv.Atoi(parts[0])
	slot, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return anarchon.RunEvent{}, false
	}
	return anarchon.RunEvent{Job: parts[2], Slot: slot, Kind: anarchon.RunEventKind(k)}, true
}

// passwordOf extracts the password of a URL connection string, or of a
// key=value one, so that it can be kept out of error texts even when the
// string does not parse.
func passwordOf(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			return p
		}
	}
	for f := range strings.FieldsSeq(s) {
		if v, ok := strings.CutPrefix(f, "password="); ok {
			return strings.Trim(v, "'")
		}
	}
	return ""
}

// redactedError hides a secret in its text; the original error stays
// reachable with errors.Is and errors.As.
type redactedError struct {
	err    error
	secret string
}

func (e *redactedError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.secret, "xxxxx")
}

func (e *redactedError) Unwrap() error { return e.err }

func redact(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &redactedError{err: err, secret: secret}
}

// Init connects, checks the server (PostgreSQL 10+), creates the schema
// if one is configured, and creates the tables. See
// sqlbackend.SQLBackend.Init. Errors never contain the password.
func (b *Backend) Init(ctx context.Context) error {
	return redact(b.SQLBackend.Init(ctx), b.secret)
}
