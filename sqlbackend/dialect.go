package sqlbackend

import (
	"strconv"
	"strings"
)

// SQLDialect is what differs between SQL databases (SPEC §7). The base
// writes every statement with `?` placeholders and standard SQL
// (CREATE TABLE IF NOT EXISTS, INSERT … ON CONFLICT … DO NOTHING/UPDATE,
// RETURNING); a dialect supplies the rest. A database that has those, plus
// a way to serialise the claims of one job, can be used with a dialect
// alone: see the package documentation's "Another database" section.
type SQLDialect struct {
	// BigInt is the column type of a 64-bit signed integer, e.g. "BIGINT"
	// (PostgreSQL) or "INTEGER" (SQLite). Slots, lease expiries and all
	// stored times are Unix milliseconds in columns of this type.
	BigInt string

	// NowMs is an SQL expression that reads the database server's clock as
	// Unix milliseconds (an integer). Leases, lateness and history TTLs are
	// judged by it (SPEC §6), so that instances with skewed clocks agree.
	// It must read the clock when evaluated, not at transaction start:
	// PostgreSQL's clock_timestamp() rather than now(), because a claim may
	// wait for a lock before it reads the time.
	NowMs string

	// ForUpdate is appended to the SELECTs that read the job row and the run
	// row inside a claim transaction, to lock those rows until the
	// transaction ends: " FOR UPDATE" on PostgreSQL, "" on databases without
	// row locks (SQLite, whose write transaction locks the whole file).
	ForUpdate string

	// Placeholders rewrites a statement written with `?` placeholders into
	// the database's own syntax, e.g. [Dollar] for PostgreSQL's $1, $2, ….
	// Nil keeps `?`. The base never puts a `?` inside a string literal, and
	// never builds SQL from user data: every value is a bound parameter.
	Placeholders func(query string) string

	// ExtraTables returns extra DDL the database needs, run after the base
	// tables by Init in the same migration transaction. qualify turns a
	// bare name such as "runs" into the configured, quoted table name. Nil
	// means none. Statements must be idempotent (IF NOT EXISTS).
	ExtraTables func(qualify func(name string) string) []string

	// Serialize is a statement that blocks while another transaction that
	// ran it with the same key is open, with one `?` bound to the key, e.g.
	// PostgreSQL's "SELECT 1 FROM pg_advisory_xact_lock(…, hashtext(?))".
	// Migrations run it first (a fixed key). Claims run it with the job
	// name: first of all when ForUpdate is empty; when ForUpdate is set,
	// the locked job row serialises claims and Serialize runs only to
	// create a missing job row. Empty when the connection's transactions
	// already run one at a time, like SQLite's BEGIN IMMEDIATE, which takes
	// the database's write lock.
	Serialize string

	// IsAlreadyCreated reports whether err, returned by a CREATE statement,
	// only says the object already exists: two instances migrated an empty
	// database at once, and the loser's CREATE … IF NOT EXISTS failed
	// anyway (PostgreSQL: SQLSTATE 42P07, 42P06, 42710, or 23505 on
	// pg_type). Init retries the migration when it returns true and fails
	// with the error otherwise. Nil means no error is such a race.
	IsAlreadyCreated func(err error) bool

	// IsPermanent reports whether err, returned by the database for a
	// statement, will come back if the statement is repeated: a missing
	// table, a syntax error, refused data or credentials (PostgreSQL:
	// SQLSTATE classes 42, 22, 23, 28, …). The base marks such errors with
	// anarchon.Permanent, so the scheduler gives the call up at once
	// instead of retrying it. Nil means every database error is transient
	// (retried). Errors of the base itself (bad input, a closed backend)
	// are marked without it.
	IsPermanent func(err error) bool
}

// Dollar rewrites `?` placeholders into PostgreSQL's numbered $1, $2, …,
// leaving question marks inside single-quoted literals, double-quoted
// identifiers and comments alone. Use it as [SQLDialect.Placeholders].
func Dollar(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(query[i+1:], c)
			if j < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+j+2])
			i += j + 1
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+j+1])
			i += j
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
