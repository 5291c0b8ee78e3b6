package sqlbackend

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
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
	closeMu  sync.Mutex
	closeErr error
	closeRan bool
}

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
	b.q = buildQueries(b.Qualify, cfg.Dialect)
	if cfg.Routines != nil {
		rt := cfg.Routines(b.Qualify)
		b.rt = Routines{
			DDL:   rt.DDL,
			Claim: rewrite(rt.Claim), Finish: rewrite(rt.Finish),
			Release: rewrite(rt.Release), FinishResult: rewrite(rt.FinishResult),
		}
	}
	b.ddl = slices.Clone(b.q.ddl)
	if cfg.Dialect.ExtraTables != nil {
		b.ddl = append(b.ddl, cfg.Dialect.ExtraTables(b.Qualify)...)
	}
	b.ddl = append(b.ddl, b.rt.DDL...)
	b.ddl = append(b.ddl, b.registryDDL()...)
	for i, s := range b.ddl {
		b.ddl[i] = rewrite(s)
	}
	return b, nil
}

// Qualify returns the quoted, prefixed and schema-qualified name of one of
// the backend's tables, e.g. Qualify("runs") = `"anarchon_runs"`.
func (b *SQLBackend) Qualify(name string) string {
	t := `"` + b.cfg.Prefix + name + `"`
	if b.cfg.Schema != "" {
		return `"` + b.cfg.Schema + `".` + t
	}
	return t
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

// errorf wraps err, keeping it reachable with errors.Is and errors.As,
// and marks it anarchon.Permanent if the dialect's IsPermanent says a
// retry cannot fix it (errors the base marked stay marked).
func (b *SQLBackend) errorf(op string, err error) error {
	e := fmt.Errorf("%s: %s: %w", b.cfg.Name, op, err)
	if b.d.IsPermanent != nil && b.d.IsPermanent(err) {
		return anarchon.Permanent(e)
	}
	return e
}

// invalid is an error in the caller's input: repeating the call cannot
// fix it.
func invalid(format string, args ...any) error {
	return anarchon.Permanent(fmt.Errorf(format, args...))
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
// Config.Notify, which are known only when it is called.
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
		for _, s := range b.ddl {
			if _, err := b.all(ctx, tx, s); err != nil {
				return err
			}
		}
		return nil
	})
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

func checkJob(job string) error {
	if job == "" {
		return invalid("empty job name")
	}
	if len(job) > MaxJobName {
		return invalid("job name is %d bytes, longer than %d", len(job), MaxJobName)
	}
	if strings.IndexByte(job, 0) >= 0 {
		return invalid("job name contains a NUL byte")
	}
	return nil
}

// PrepareJob creates the job's row (its trimming watermark), idempotently.
// It runs Init first if needed. in.HistorySize is not stored: every SaveResult
// passes its own.
func (b *SQLBackend) PrepareJob(ctx context.Context, in anarchon.PrepareJobInput) error {
	job := in.Job
	if err := b.ready(ctx, "prepare job"); err != nil {
		return err
	}
	if err := checkJob(job); err != nil {
		return b.errorf("prepare job", err)
	}
	if _, err := b.all(ctx, b.cfg.Conn, b.q.insertJob, job); err != nil {
		return b.errorf("prepare job "+quoteJob(job), err)
	}
	return nil
}

func quoteJob(job string) string {
	if len(job) > 64 {
		job = job[:64] + "…"
	}
	return fmt.Sprintf("%q", job)
}

func checkClaim(in anarchon.ClaimInput) error {
	if err := checkJob(in.Job); err != nil {
		return err
	}
	if in.Token == "" {
		return invalid("empty token")
	}
	return nil
}

// Claim is the plain claim (SPEC §4): one INSERT … ON CONFLICT DO NOTHING
// on the runs table's (job, slot) key. It returns true if the row was
// inserted, or if it exists with in.Token (a repeated claim). A claim for a
// slot at or below the job's trimming watermark inserts nothing and loses,
// so trimming never reopens a slot.
func (b *SQLBackend) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	if err := b.ready(ctx, "claim"); err != nil {
		return false, err
	}
	if err := checkClaim(in); err != nil {
		return false, b.errorf("claim", err)
	}
	rows, err := b.all(ctx, b.cfg.Conn, b.q.plainClaim,
		in.Job, in.Slot, in.Token, in.InstanceID, in.Job, in.Slot)
	if err != nil {
		return false, b.errorf("claim", err)
	}
	if len(rows) > 0 {
		return true, nil
	}
	rows, err = b.all(ctx, b.cfg.Conn, b.q.selectToken, in.Job, in.Slot)
	if err != nil {
		return false, b.errorf("claim", err)
	}
	if len(rows) == 0 {
		return false, nil // below the watermark: trimmed, settled long ago
	}
	rd := reader(rows[0])
	tok := rd.string()
	if err := rd.Err(); err != nil {
		return false, b.errorf("claim", err)
	}
	return tok == in.Token, nil
}

// RecordManualRun stores a RunNow run in the history, without touching the
// runs table: manual runs are never deduplicated. It returns in.Slot.
func (b *SQLBackend) RecordManualRun(ctx context.Context, in anarchon.ClaimInput) (int64, error) {
	if err := b.ready(ctx, "record manual run"); err != nil {
		return 0, err
	}
	if err := checkClaim(in); err != nil {
		return 0, b.errorf("record manual run", err)
	}
	if _, err := b.all(ctx, b.cfg.Conn, b.q.insertManual,
		in.Job, in.Token, in.Slot, in.InstanceID); err != nil {
		return 0, b.errorf("record manual run", err)
	}
	return in.Slot, nil
}

func msOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// SaveResult stores r in the job's history (a later save with the same
// token replaces it), marks a plain claim's run row done, and trims the
// history in the same transaction: results older (by slot) than the newest
// historySize and, if historyTTL > 0, results saved more than historyTTL
// ago by the server's clock. Settled run rows outside the same bounds (by
// slot, or claimed more than historyTTL ago) are deleted too, and the job's
// watermark is raised to the highest slot deleted, so that a late claim for
// it loses (SPEC §4). Leased runs still running or released are never
// deleted. historySize <= 0 means anarchon.DefaultHistorySize; a negative
// historyTTL is an error. An empty r.Status is stored as success, or as
// error if r.Error is set.
func (b *SQLBackend) SaveResult(ctx context.Context, in anarchon.SaveResultInput) error {
	job, r, historySize, historyTTL := in.Job, in.Result, in.HistorySize, in.HistoryTTL
	if err := b.ready(ctx, "save result"); err != nil {
		return err
	}
	sr, err := newSaved(job, r, historySize, historyTTL)
	if err != nil {
		return b.errorf("save result", err)
	}
	err = b.cfg.Conn.Transaction(ctx, func(tx Querier) error {
		// The job's lock comes first, as in a lease claim (job row, then
		// run row), so that the two never wait for each other in a cycle.
		if err := b.lockJob(ctx, tx, job); err != nil {
			return err
		}
		if err := b.upsertResult(ctx, tx, sr); err != nil {
			return err
		}
		if r.Token != "" && !r.Manual {
			if _, err := b.all(ctx, tx, b.q.finishPlain, string(sr.r.Status), job, r.Slot, r.Token); err != nil {
				return err
			}
		}
		return b.trim(ctx, tx, sr)
	})
	if err != nil {
		return b.errorf("save result", err)
	}
	return nil
}

// saved is a validated SaveResult (or FinishResult) call.
type saved struct {
	job   string
	r     anarchon.StoredResult // Attempt >= 1, Status set
	size  int64                 // > 0
	ttlMs int64                 // 0: no TTL
}

// newSaved checks and normalises the arguments of SaveResult: the job
// name, a non-negative TTL, historySize <= 0 meaning the default, an
// attempt of at least 1, and an empty status read as success or error.
func newSaved(job string, r anarchon.StoredResult, historySize int, historyTTL time.Duration) (saved, error) {
	if err := checkJob(job); err != nil {
		return saved{}, err
	}
	if historyTTL < 0 {
		return saved{}, invalid("negative history TTL %v", historyTTL)
	}
	if historySize <= 0 {
		historySize = anarchon.DefaultHistorySize
	}
	if r.Attempt <= 0 {
		r.Attempt = 1
	}
	if r.Status == "" {
		r.Status = anarchon.StatusSuccess
		if r.Error != "" {
			r.Status = anarchon.StatusError
		}
	}
	var ttl int64
	if historyTTL > 0 {
		ttl = max(historyTTL.Milliseconds(), 1)
	}
	return saved{job: job, r: r, size: int64(historySize), ttlMs: ttl}, nil
}

func (sr saved) manual() int64 {
	if sr.r.Manual {
		return 1
	}
	return 0
}

func (b *SQLBackend) upsertResult(ctx context.Context, tx Querier, sr saved) error {
	r := sr.r
	// The claim time comes from the run row the token holds. An abandoned
	// slot's row carries anarchon.AbandonedToken, but nobody claimed the
	// slot under it: its record has no claim time.
	claimToken := r.Token
	if claimToken == anarchon.AbandonedToken(r.Slot) {
		claimToken = ""
	}
	_, err := b.all(ctx, tx, b.q.upsertResult,
		sr.job, r.Token, r.Slot, r.InstanceID, int64(r.Attempt), string(r.Status),
		sr.job, r.Slot, claimToken,
		msOrNil(r.StartedAt), msOrNil(r.FinishedAt), r.Error, r.Output, sr.manual())
	return err
}

// trim deletes history beyond sr.size records and older than sr.ttlMs,
// and raises the job's watermark over deleted run rows. The caller holds
// the job's lock (lockJob), so that a lease claim that read "absent" does
// not race a deletion that has not yet raised the watermark.
func (b *SQLBackend) trim(ctx context.Context, tx Querier, sr saved) error {
	if _, err := b.all(ctx, tx, b.q.trimResults, sr.job, sr.job, sr.size-1, sr.ttlMs, sr.ttlMs); err != nil {
		return err
	}
	rows, err := b.all(ctx, tx, b.q.trimRuns, sr.job, sr.job, sr.size-1, sr.ttlMs, sr.ttlMs)
	if err != nil {
		return err
	}
	var top int64
	for i, r := range rows {
		rd := reader(r)
		s := rd.int64()
		if err := rd.Err(); err != nil {
			return err
		}
		if i == 0 || s > top {
			top = s
		}
	}
	if len(rows) > 0 {
		if _, err := b.all(ctx, tx, b.q.raiseWatermark, top, sr.job, top); err != nil {
			return err
		}
	}
	return nil
}

// lockJob makes sure the job's row exists and locks it for the rest of the
// transaction (Serialize, then SELECT … ForUpdate). It returns the
// watermark.
func (b *SQLBackend) lockJob(ctx context.Context, tx Querier, job string) error {
	_, _, _, err := b.lockJobWatermark(ctx, tx, job)
	return err
}

// lockJobWatermark locks the job (see lockJob) and returns its watermark
// and the server's clock, read after the lock was taken.
//
// With row locks (ForUpdate set) the job row's lock is what serialises
// claims of the job, and Serialize only guards the creation of a missing
// row; without row locks Serialize (or the exclusive transaction) runs
// first, every time.
func (b *SQLBackend) lockJobWatermark(ctx context.Context, tx Querier, job string) (wm int64, has bool, now int64, err error) {
	rowLocks := b.d.ForUpdate != ""
	serialize := func() error {
		if b.q.serialize == "" {
			return nil
		}
		_, err := b.all(ctx, tx, b.q.serialize, job)
		return err
	}
	if !rowLocks {
		if err := serialize(); err != nil {
			return 0, false, 0, err
		}
	}
	for i := range 2 {
		rows, err := b.all(ctx, tx, b.q.selectJob, job)
		if err != nil {
			return 0, false, 0, err
		}
		if len(rows) > 0 {
			rd := reader(rows[0])
			wm, has := rd.nullInt64()
			now := rd.int64()
			return wm, has, now, rd.Err()
		}
		if i == 0 && rowLocks {
			if err := serialize(); err != nil {
				return 0, false, 0, err
			}
		}
		if _, err := b.all(ctx, tx, b.q.insertJob, job); err != nil {
			return 0, false, 0, err
		}
	}
	return 0, false, 0, errors.New("job row vanished")
}

// History returns the job's runs from all instances, newest first: run
// rows (claims) merged with stored results by token, with
// anarchon.BuildHistory. limit <= 0 returns everything retained.
func (b *SQLBackend) History(ctx context.Context, job string, limit int) ([]anarchon.RunRecord, error) {
	if err := b.ready(ctx, "history"); err != nil {
		return nil, err
	}
	if err := checkJob(job); err != nil {
		return nil, b.errorf("history", err)
	}
	lim := int64(limit)
	if limit <= 0 {
		lim = -1
	}
	runQ, resQ := b.q.historyRuns, b.q.historyResults
	if lim < 0 {
		runQ, resQ = b.q.historyRunsAll, b.q.historyResultsAll
	}
	runArgs, resArgs := []any{job}, []any{job}
	if lim > 0 {
		runArgs = append(runArgs, lim)
		resArgs = append(resArgs, job, lim)
	}
	runRows, err := b.all(ctx, b.cfg.Conn, runQ, runArgs...)
	if err != nil {
		return nil, b.errorf("history", err)
	}
	resRows, err := b.all(ctx, b.cfg.Conn, resQ, resArgs...)
	if err != nil {
		return nil, b.errorf("history", err)
	}
	var claims []anarchon.ClaimRecord
	var settled, results []anarchon.StoredResult
	claimed := make(map[string]bool, len(runRows))
	for _, r := range runRows {
		// slot, token, instance, attempt, state, status, claimed_at
		rd := reader(r)
		slot, tok, inst, att, state, st := rd.int64(), rd.string(), rd.string(), rd.int64(), rd.string(), rd.string()
		cl, _ := rd.nullInt64()
		if err := rd.Err(); err != nil {
			return nil, b.errorf("history", err)
		}
		switch anarchon.RunState(state) {
		case anarchon.RunStateMissed, anarchon.RunStateSkipped, anarchon.RunStateDone:
			if st == "" {
				st = state
			}
			settled = append(settled, anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: inst, Attempt: int(att), Status: anarchon.Status(st)})
		}
		if tok == anarchon.AbandonedToken(slot) {
			continue // nobody claimed it under this token: no claim time
		}
		claimed[tok] = true
		claims = append(claims, anarchon.ClaimRecord{Slot: slot, Token: tok, InstanceID: inst, ClaimedAt: time.UnixMilli(cl).UTC(), Attempt: int(att)})
	}
	for _, r := range resRows {
		// slot, token, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual
		rd := reader(r)
		slot, tok, inst, att, st := rd.int64(), rd.string(), rd.string(), rd.int64(), rd.string()
		cl, hasCl := rd.nullInt64()
		sa, hasSa := rd.nullInt64()
		fa, hasFa := rd.nullInt64()
		em, out, man := rd.string(), rd.string(), rd.int64()
		if err := rd.Err(); err != nil {
			return nil, b.errorf("history", err)
		}
		res := anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: inst, Attempt: int(att), Status: anarchon.Status(st), Error: em, Output: out, Manual: man != 0}
		if hasSa {
			res.StartedAt = time.UnixMilli(sa).UTC()
		}
		if hasFa {
			res.FinishedAt = time.UnixMilli(fa).UTC()
		}
		if hasCl && !claimed[tok] {
			// A manual run is its own claim record; a leased or plain run
			// whose run row another holder took over (or trimming deleted)
			// keeps its claim time in its result.
			claimed[tok] = true
			claims = append(claims, anarchon.ClaimRecord{Slot: slot, Token: tok, InstanceID: inst, ClaimedAt: time.UnixMilli(cl).UTC(), Attempt: int(att), Manual: man != 0})
			if man != 0 && anarchon.Status(st) == anarchon.StatusRunning {
				continue // recorded, no result yet
			}
		}
		results = append(results, res)
	}
	// Stored results come after the states of settled rows, so that a saved
	// result of the same token wins (BuildHistory keeps the later one).
	return anarchon.BuildHistory(job, claims, append(settled, results...), limit), nil
}

// ServerTime reads the database server's clock (SQLDialect.NowMs),
// implementing anarchon.ServerClock. Its resolution is a millisecond.
func (b *SQLBackend) ServerTime(ctx context.Context) (time.Time, error) {
	if err := b.checkOpen("server time"); err != nil {
		return time.Time{}, err
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

// CheckJob implements anarchon.JobChecker: it refuses a job name the
// tables cannot hold (empty, longer than MaxJobName bytes, or with a NUL
// byte, which PostgreSQL's text type rejects), so the job fails at
// registration rather than at its first claim.
func (b *SQLBackend) CheckJob(l anarchon.JobLimits) error {
	if err := checkJob(l.Job); err != nil {
		return fmt.Errorf("%s: %w", b.cfg.Name, err)
	}
	return nil
}
