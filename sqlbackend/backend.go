package sqlbackend

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon"
)

// DefaultPrefix is the table-name prefix used when Config.Prefix is empty.
const DefaultPrefix = "anarchon_"

// MaxJobName is the longest job name the SQL backends accept, in bytes.
const MaxJobName = 1024

// Config configures a [SQLBackend]. Conn and Dialect are required.
type Config struct {
	// Name is what Name returns, e.g. "sqlite", "postgres". Defaults to "sql".
	Name string
	// Dialect is what differs between databases. Required: BigInt and
	// NowMs must be set.
	Dialect SQLDialect
	// Conn is the connection. Required. The backend never closes it; set
	// Close to close what a constructor opened itself.
	Conn Conn
	// Prefix starts every table name, e.g. "anarchon_" gives
	// anarchon_runs. It must match [A-Za-z_][A-Za-z0-9_]* and be at most 40
	// bytes. Defaults to DefaultPrefix.
	Prefix string
	// Schema, if set, qualifies every table name (PostgreSQL schema, or an
	// attached SQLite database). Same rule as Prefix. Creating it is the
	// caller's job (pgbackend does it). Defaults to none: the connection's
	// search path.
	Schema string
	// Check is the server check Init runs before migrating, e.g. a version
	// check. Nil means none.
	Check func(ctx context.Context, c Conn) error
	// InitError, if set, rewrites every error Init returns (the server
	// check's and the migration's), whether Init is called or runs on a
	// first call before it. SQLite uses it to lead with the file system's
	// reason where SQLite names none. Nil means the errors as they are.
	InitError func(error) error
	// Notify, if set, is called inside the transaction that releases,
	// finishes or settles a run, and returns a statement (in `?` syntax)
	// to run there, e.g. PostgreSQL's pg_notify. An empty query means no
	// statement. Its placeholders are rewritten once per distinct query,
	// so the query should not vary with the event: pass the event in args.
	Notify func(ev anarchon.RunEvent) (query string, args []any)
	// Routines, if set, is called once by New with the backend's Qualify
	// and returns server-side routines that replace the lease claim,
	// Finish, Release and FinishResult transactions with one statement
	// each. Nil means none: every operation is a transaction of plain
	// statements.
	Routines func(qualify func(name string) string) Routines
	// Close is called once by SQLBackend.Close to close what the backend
	// opened itself. Nil means nothing to close.
	Close func(ctx context.Context) error
	// Guard, if set, is called before every claim (plain and lease) and
	// every ServerTime; an error fails the call closed and is returned as
	// it is. SQLite uses it to stop claiming once its database file was
	// replaced or deleted under the process; ServerTime failing too is
	// what a readiness check built on it (the daemon's /readyz) reports.
	// Nil means none.
	Guard func(ctx context.Context) error
}

// SQLBackend is the SQL base shared by the SQLite and PostgreSQL backends
// (SPEC §7). It implements anarchon.Backend, anarchon.LeaseBackend (its
// RunStore is itself) and anarchon.ServerClock. It is safe for concurrent
// use, and any number of SQLBackends, in any number of processes, may share
// one database and prefix.
type SQLBackend struct {
	cfg     Config
	d       SQLDialect
	q       queries
	ddl     []string // the tables, SQLDialect.ExtraTables and Routines.DDL, in order
	rt      Routines // statements rewritten by SQLDialect.Placeholders
	notifyQ sync.Map // Config.Notify statement (`?`) -> rewritten
	closed  atomic.Bool

	initMu   sync.Mutex
	inited   atomic.Bool
	jsonEach string // the JSON table function of jsonKeys, set by Init (probeJSONB)
	closeMu  sync.Mutex
	closeErr error
	closeRan bool
}

var (
	_ anarchon.Backend        = (*SQLBackend)(nil)
	_ anarchon.LeaseBackend   = (*SQLBackend)(nil)
	_ anarchon.JobChecker     = (*SQLBackend)(nil)
	_ anarchon.ServerClock    = (*SQLBackend)(nil)
	_ anarchon.RunStore       = (*RunStore)(nil)
	_ anarchon.ResultFinisher = (*RunStore)(nil)
	_ anarchon.ServerClock    = (*RunStore)(nil)
)

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// New returns a backend over cfg. It does no I/O: Init connects, checks the
// server and creates the tables. It fails on a missing Conn, an incomplete
// dialect, or a bad Prefix or Schema.
func New(cfg Config) (*SQLBackend, error) {
	if cfg.Conn == nil {
		return nil, errors.New("sqlbackend: Config.Conn is nil")
	}
	if cfg.Dialect.BigInt == "" || cfg.Dialect.NowMs == "" {
		return nil, errors.New("sqlbackend: Config.Dialect needs BigInt and NowMs")
	}
	if cfg.Name == "" {
		cfg.Name = "sql"
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if !identRE.MatchString(cfg.Prefix) || len(cfg.Prefix) > 40 {
		return nil, fmt.Errorf("sqlbackend: table prefix %q must match [A-Za-z_][A-Za-z0-9_]* and be at most 40 bytes", cfg.Prefix)
	}
	if cfg.Schema != "" && (!identRE.MatchString(cfg.Schema) || len(cfg.Schema) > 63) {
		return nil, fmt.Errorf("sqlbackend: schema %q must match [A-Za-z_][A-Za-z0-9_]* and be at most 63 bytes", cfg.Schema)
	}
	b := &SQLBackend{cfg: cfg, d: cfg.Dialect}
	// Every statement's placeholders are rewritten here, once.
	rewrite := placeholders(cfg.Dialect)
	b.q = buildQueries(b.Qualify, b.quote, cfg.Dialect)
	if cfg.Routines != nil {
		rt := cfg.Routines(b.Qualify)
		b.rt = Routines{
			DDL:   rt.DDL,
			Claim: rewrite(rt.Claim), Finish: rewrite(rt.Finish),
			Release: rewrite(rt.Release), FinishResult: rewrite(rt.FinishResult),
			ClaimBatch: rewrite(rt.ClaimBatch), ClaimRuns: rewrite(rt.ClaimRuns),
			SaveResult: rewrite(rt.SaveResult), Heartbeats: rewrite(rt.Heartbeats),
			SaveResults: rewrite(rt.SaveResults), FinishResults: rewrite(rt.FinishResults),
		}
	}
	b.ddl = slices.Clone(b.q.ddl)
	if cfg.Dialect.ExtraTables != nil {
		b.ddl = append(b.ddl, cfg.Dialect.ExtraTables(b.Qualify)...)
	}
	b.ddl = append(b.ddl, b.rt.DDL...)
	for i, s := range b.ddl {
		b.ddl[i] = rewrite(s)
	}
	return b, nil
}

// Qualify returns the quoted, prefixed and schema-qualified name of one of
// the backend's tables, e.g. Qualify("runs") = `"anarchon_runs"` (quoted by
// SQLDialect.Quote, if set).
func (b *SQLBackend) Qualify(name string) string {
	t := b.quote(name)
	if b.cfg.Schema != "" {
		return b.quoteIdent(b.cfg.Schema) + "." + t
	}
	return t
}

// quote returns the quoted, prefixed name of one of the backend's tables
// or indexes, without the schema: an index lives in its table's schema,
// and PostgreSQL's CREATE INDEX takes an unqualified name.
func (b *SQLBackend) quote(name string) string { return b.quoteIdent(b.cfg.Prefix + name) }

// quoteIdent quotes an identifier (SQLDialect.Quote).
func (b *SQLBackend) quoteIdent(id string) string {
	if b.d.Quote != nil {
		return b.d.Quote(id)
	}
	return `"` + id + `"`
}

// Prefix returns the table-name prefix in use.
func (b *SQLBackend) Prefix() string { return b.cfg.Prefix }

// Schema returns the configured schema, "" if none.
func (b *SQLBackend) Schema() string { return b.cfg.Schema }

// Conn returns the connection the backend uses.
func (b *SQLBackend) Conn() Conn { return b.cfg.Conn }

// Name returns Config.Name ("sqlite", "postgres", …).
func (b *SQLBackend) Name() string { return b.cfg.Name }

// DedupeWindow is anarchon.Forever: a claimed run is kept until history
// trimming deletes it, and the per-job watermark makes a claim for a
// trimmed slot lose (SPEC §4).
func (b *SQLBackend) DedupeWindow() time.Duration { return anarchon.Forever }

// Runs returns the backend itself, whose Claim (the lease claim),
// Heartbeat, Finish, Release and Active make it an anarchon.RunStore. It is
// a separate type so that its Claim does not clash with Backend.Claim.
func (b *SQLBackend) Runs() anarchon.RunStore { return (*RunStore)(b) }

// Close closes what the backend opened itself (Config.Close), once. Later
// calls of other methods return an error wrapping anarchon.ErrClosed.
func (b *SQLBackend) Close(ctx context.Context) error {
	b.closed.Store(true)
	b.closeMu.Lock()
	defer b.closeMu.Unlock()
	if !b.closeRan {
		b.closeRan = true
		if b.cfg.Close != nil {
			b.closeErr = b.cfg.Close(ctx)
		}
	}
	return b.closeErr
}

func (b *SQLBackend) checkOpen(op string) error {
	if b.closed.Load() {
		return b.errorf(op, anarchon.Permanent(anarchon.ErrClosed))
	}
	return nil
}

// all runs query, whose placeholders are already rewritten (queries,
// New), through q.
func (b *SQLBackend) all(ctx context.Context, q Querier, query string, args ...any) ([][]any, error) {
	return q.All(ctx, query, args...)
}

// rewritten returns query (in `?` syntax) in the database's placeholder
// syntax, rewriting each distinct statement once: for the statements of
// Config.Notify, which are known only when it is called. A batch's
// statements, whose text grows with the batch, go through rewrite
// instead, so that no batch size stays in the cache.
func (b *SQLBackend) rewritten(query string) string {
	if b.d.Placeholders == nil {
		return query
	}
	if q, ok := b.notifyQ.Load(query); ok {
		return q.(string)
	}
	q := b.d.Placeholders(query)
	b.notifyQ.Store(query, q)
	return q
}

// rewrite returns query (in `?` syntax) in the database's placeholder
// syntax, without keeping it: for statements built per batch.
func (b *SQLBackend) rewrite(query string) string {
	if b.d.Placeholders == nil {
		return query
	}
	return b.d.Placeholders(query)
}

// Init runs the server check and creates the tables (idempotent, safe with
// any number of instances migrating an empty database at once). After a
// success it does nothing; after a failure the next call tries again.
func (b *SQLBackend) Init(ctx context.Context) error {
	if err := b.checkOpen("init"); err != nil {
		return err
	}
	if b.inited.Load() {
		return nil
	}
	err := b.init(ctx)
	if err != nil && b.cfg.InitError != nil {
		return b.cfg.InitError(err)
	}
	return err
}

func (b *SQLBackend) init(ctx context.Context) error {
	b.initMu.Lock()
	defer b.initMu.Unlock()
	if b.inited.Load() {
		return nil
	}
	if b.cfg.Check != nil {
		if err := b.cfg.Check(ctx, b.cfg.Conn); err != nil {
			return b.errorf("server check", err)
		}
	}
	if b.d.JSONKeys {
		each, err := b.probeJSONB(ctx)
		if err != nil {
			return b.errorf("server check", err)
		}
		b.jsonEach = each
	}
	var err error
	for range 5 {
		if err = b.migrate(ctx); err == nil {
			b.inited.Store(true)
			return nil
		}
		if b.d.IsAlreadyCreated == nil || !b.d.IsAlreadyCreated(err) {
			break
		}
		// Another instance created the same object between our check and
		// our CREATE: now it exists, and IF NOT EXISTS will succeed.
	}
	return b.errorf("migrate", err)
}

func (b *SQLBackend) migrate(ctx context.Context) error {
	return b.cfg.Conn.Transaction(ctx, func(tx Querier) error {
		if b.q.serialize != "" {
			if _, err := b.all(ctx, tx, b.q.serialize, "anarchon migrate "+b.Qualify("")); err != nil {
				return err
			}
		}
		for i, s := range b.ddl {
			if _, err := b.all(ctx, tx, s); err != nil {
				return err
			}
			if i == len(b.q.ddl)-1 { // the base's tables are there
				if err := b.addColumns(ctx, tx); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// addColumns adds to the base's tables the columns that a database made
// by an older version lacks (SPEC §9: columns are only ever added), each
// after SQLDialect.HasColumn found it absent: jobs.fence.
func (b *SQLBackend) addColumns(ctx context.Context, tx Querier) error {
	query, args := b.d.hasColumn(b.cfg.Schema, b.cfg.Prefix+"jobs", "fence")
	rows, err := b.all(ctx, tx, placeholders(b.d)(query), args...)
	if err != nil {
		return fmt.Errorf("look for column jobs.fence: %w", err)
	}
	if len(rows) > 0 {
		return nil
	}
	if _, err := b.all(ctx, tx, b.q.addJobsFence); err != nil {
		return fmt.Errorf("add column jobs.fence: %w", err)
	}
	return nil
}

func (b *SQLBackend) ready(ctx context.Context, op string) error {
	if err := b.checkOpen(op); err != nil {
		return err
	}
	if !b.inited.Load() {
		return b.Init(ctx)
	}
	return nil
}

// ServerTime reads the database server's clock (SQLDialect.NowMs),
// implementing anarchon.ServerClock. Its resolution is a millisecond.
// It fails closed with the claims, on Config.Guard's error.
func (b *SQLBackend) ServerTime(ctx context.Context) (time.Time, error) {
	if err := b.checkOpen("server time"); err != nil {
		return time.Time{}, err
	}
	if g := b.cfg.Guard; g != nil {
		if err := g(ctx); err != nil {
			return time.Time{}, err
		}
	}
	now, err := b.nowMs(ctx, b.cfg.Conn)
	if err != nil {
		return time.Time{}, b.errorf("server time", err)
	}
	return time.UnixMilli(now).UTC(), nil
}

func (b *SQLBackend) nowMs(ctx context.Context, q Querier) (int64, error) {
	rows, err := b.all(ctx, q, b.q.now)
	if err != nil {
		return 0, err
	}
	if len(rows) != 1 {
		return 0, errors.New("clock query returned no value")
	}
	rd := reader(rows[0])
	now := rd.int64()
	return now, rd.Err()
}
