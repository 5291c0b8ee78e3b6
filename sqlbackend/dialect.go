package sqlbackend

import (
	"strconv"
	"strings"
)

// SQLDialect is what differs between SQL databases (SPEC §7). The base
// writes every statement with `?` placeholders and builds it from the
// dialect's pieces: the required ones (BigInt, NowMs) and the optional
// ones below IsPermanent, whose zero values give standard SQL (INSERT … ON
// CONFLICT … DO NOTHING/UPDATE, RETURNING, TEXT keys, CREATE INDEX IF NOT
// EXISTS). A database with a unique key and a way to serialise the claims
// of one job can be used with a dialect alone (mysqlbackend is one).
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

	// The fields below are optional: their zero values give the standard
	// SQL that PostgreSQL and SQLite share. A database that differs sets
	// the pieces it needs (see mysqlbackend for MySQL and MariaDB).

	// KeyText returns the column type of a text column that is part of a
	// primary key and holds at most maxBytes bytes: jobs.job, runs.job,
	// results.job and results.token, instances.id (CREATE TABLE in
	// sql/schema.sql and sql/registry.sql). Keys compare byte for byte.
	// Nil means "TEXT". MySQL cannot index TEXT without a length, and
	// InnoDB keys hold at most 3,072 bytes, so it uses VARBINARY(maxBytes).
	KeyText func(maxBytes int) string

	// Text is the column type of the other text columns (states, statuses,
	// errors, output, instance info), which may hold any length. "" means
	// "TEXT"; MySQL's TEXT holds only 64 KiB, so it uses LONGTEXT.
	Text string

	// TextCast and BigIntCast are the types in CAST(? AS …), which the
	// INSERT … SELECT statements (plainClaim, registerInstance) and the
	// trimming DELETEs use to type their parameters. "" means "TEXT" and
	// BigInt; MySQL casts to CHAR and SIGNED.
	TextCast, BigIntCast string

	// Quote quotes a table or index name in every statement (Qualify).
	// Nil means SQL's double quotes; MySQL, unless ANSI_QUOTES is set,
	// needs backticks.
	Quote func(ident string) string

	// InsertIgnore returns the clause that ends an INSERT whose row may
	// already exist under key (a comma-separated column list, the table's
	// primary key) and then inserts nothing: plainClaim, insertJob,
	// insertManual, insertStoreResult. Nil means
	// "ON CONFLICT (key) DO NOTHING". MySQL: "ON DUPLICATE KEY UPDATE
	// <first key column> = <itself>", which changes nothing and, unlike
	// INSERT IGNORE, turns no other error into a warning.
	InsertIgnore func(key string) string

	// Upsert returns the start of the clause that turns an INSERT whose row
	// exists under key into an UPDATE; the assignments follow it:
	// upsertResult and registerInstance. Nil means
	// "ON CONFLICT (key) DO UPDATE SET"; MySQL: "ON DUPLICATE KEY UPDATE".
	// In the assignments, the existing row's columns are named through the
	// table ({results}.attempt), and the proposed row's through Excluded.
	Upsert func(key string) string

	// Excluded names the value the INSERT proposed for column col inside
	// the Upsert assignments. Nil means "excluded.col"; MySQL "VALUES(col)".
	Excluded func(col string) string

	// JSONKeys is true when the database has SQLite's json_each and
	// json_extract: a batch's statements (heldSlots, plainClaims,
	// leaseClaims, takeFences, and the result and finish batches'
	// statements of batch_sets.go) then take their entries as one JSON
	// array argument, read with json_each (jsonb_each where Init's probe
	// finds it: SQLite 3.45.0 and later), instead of one SELECT of
	// parameters per entry joined with UNION ALL, so that the statement
	// stays short, and as quick to parse and plan, whatever the batch's
	// size. A batch with a
	// text that JSON would change (invalid UTF-8, NUL) uses the UNION ALL.
	// False: every batch uses the UNION ALL, which every SQL database reads.
	JSONKeys bool

	// NoReturning is true when the database has no UPDATE/DELETE …
	// RETURNING (MySQL; MariaDB has it for DELETE only). The base then runs
	// a statement that would return rows — heartbeat, finish, release,
	// trimRuns — in a transaction, after a SELECT … ForUpdate of the same
	// WHERE clause (sql/*.sql: heartbeatRead, finishRead, releaseRead,
	// trimRunsRead) that locks and returns the rows the statement then
	// changes; the plain claim's INSERT returns nothing, and Claim reads
	// the slot's token after it, as it does after a lost claim.
	// ForUpdate must be set with it.
	NoReturning bool

	// HasColumn returns a query (in `?` syntax) and its arguments that
	// returns at least one row if table, a bare table name with its
	// prefix ("anarchon_jobs"), has column. schema is Config.Schema, ""
	// for the connection's default, where CREATE TABLE put the table.
	// Init runs it, inside the migration transaction, before adding a
	// column a newer version of the schema has (ALTER TABLE … ADD
	// COLUMN), so that a database made by an older version gets it. Nil
	// means information_schema.columns, in current_schema() when schema is
	// "" (PostgreSQL); SQLite lists pragma_table_info, MySQL reads
	// information_schema in DATABASE().
	HasColumn func(schema, table, column string) (query string, args []any)

	// InlineIndexes is true when the secondary index on results (job,
	// slot) must be declared inside CREATE TABLE, because the database has
	// no CREATE INDEX IF NOT EXISTS (MySQL 8). False runs createResultsSlot.
	InlineIndexes bool

	// PartialIndexes is true when the database takes CREATE INDEX IF NOT
	// EXISTS … WHERE (PostgreSQL, SQLite): Init then also creates the
	// index runs_live on the runs that hold a lease (sql/schema.sql), which
	// keeps a lease claim's overlap check from reading every run of the
	// job's history. False (MySQL) leaves it out: the check reads the
	// job's runs by the primary key. On a database an older version made,
	// the first Init after the upgrade builds the index in its migration
	// transaction, which holds back writes to the runs table meanwhile
	// (PostgreSQL's CREATE INDEX, not CONCURRENTLY); its time grows with
	// the table, which keeps about HistorySize runs per job.
	PartialIndexes bool
}

// hasColumn returns d.HasColumn's query and arguments, or the standard
// one.
func (d SQLDialect) hasColumn(schema, table, column string) (string, []any) {
	if d.HasColumn != nil {
		return d.HasColumn(schema, table, column)
	}
	if schema == "" {
		return "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?",
			[]any{table, column}
	}
	return "SELECT 1 FROM information_schema.columns WHERE table_schema = ? AND table_name = ? AND column_name = ?",
		[]any{schema, table, column}
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
