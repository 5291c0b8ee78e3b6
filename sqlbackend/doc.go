// Package sqlbackend is the SQL base shared by anarchon's SQLite and
// PostgreSQL backends (SPEC §7): the tables, the plain claim, the lease
// claim transaction, history and its trimming. A database supplies only a
// connection ([Conn]), a server check and a [SQLDialect]. It uses the
// standard library only.
//
// Most users want [github.com/anarchon/anarchon/sqlitebackend] (with
// github.com/anarchon/anarchon/sqlitefile) or
// github.com/anarchon/anarchon/pgbackend, which build a [SQLBackend] for
// them. Use this package directly to run anarchon on another SQL database.
//
// # Guarantees
//
//   - Overlap limit and replace (SPEC §6): the lease claim counts the
//     job's other live runs (at most RunClaim.Limit of them are read)
//     under the job lock that serialises every claim of the job, so
//     racing claims of different slots never exceed the limit;
//     [RunStore.Replace] ([anarchon.Replacer]) is one transaction under
//     the same lock that settles the earlier runs, stores their records
//     and notifies. The Overlap/Limit and Replace conformance subtests
//     pass on SQLite, PostgreSQL (claim routine _v10) and MariaDB/MySQL.
//   - Job control (SPEC §12): the plain claim reads the job's row of
//     <prefix>control in its one INSERT … SELECT, and the lease claim in
//     its transaction after the job lock, so a claim that reaches the
//     database after SetPaused committed settles the slot as paused under
//     anarchon.PausedToken; its history record is written by the same
//     call (two more statements for plain claims: the control row's who
//     and why, and the record). Trigger requests are one row each in
//     <prefix>triggers, claimed by one conditional UPDATE. The Control and
//     Trigger conformance subtests pass on SQLite, PostgreSQL and MariaDB,
//     including three schedulers on one store.
//   - The plain claim ([SQLBackend.Claim]) is one statement,
//     INSERT … SELECT … WHERE NOT EXISTS (watermark) ON CONFLICT (job, slot)
//     DO NOTHING RETURNING token: the database's unique key lets exactly one
//     insert win. A claim that inserted nothing reads the stored token, so
//     the winner's retry with the same token answers true again (SPEC §4),
//     and in the same statement the server's clock, which tells a slot
//     refused as early (anarchon.EarlyError) from a trimmed one.
//   - The lease claim ([RunStore.Claim]) is one transaction that first
//     serialises on the job (the job row locked with SQLDialect.ForUpdate,
//     or SQLDialect.Serialize / an exclusive transaction on databases
//     without row locks), then reads the server's clock
//     (SQLDialect.NowMs) and decides SPEC §6's table. Heartbeat, Finish,
//     Release and Active judge leases by the same clock. A database with
//     stored functions may supply [Routines] (Config.Routines) that do
//     the claim, Finish, Release and FinishResult in one statement each
//     (pgbackend does): one round trip instead of a transaction of
//     several, deciding the same way and serialising with the
//     transactions of an instance that has no routines.
//   - Fencing tokens (SPEC §6, "Fencing"): the jobs row holds the job's
//     last fence; a won lease claim (a new slot, a renewal by the same
//     token, a takeover; alone or in ClaimRuns) raises it by one under the
//     job's lock, in the claim's own transaction, and answers it as
//     ClaimOutcome.Fence. Every win of the job, on any handle, path or
//     routine that locks the job row, reads the last one committed, so
//     fences go up in the order the store decided the wins. The
//     RunStore/Fence subtests pass on SQLite, PostgreSQL (the claim
//     routine, the plain transaction, and both mixed on one schema) and
//     MariaDB. The fence is kept exactly as the claim is: a database that
//     loses committed transactions (restored from a backup, a replaced
//     SQLite file, a failover to an asynchronous replica) loses the fences
//     with the claims, and a new holder can be given a fence an older one
//     still carries. Init adds the column to a database made before it
//     ([SQLDialect.HasColumn], then ALTER TABLE … ADD COLUMN, with racing
//     instances retried; sqlbackendtest.OldSchema).
//   - [RunStore.FinishResult] (anarchon.ResultFinisher) finishes a run
//     and saves its result in one transaction: a won lease costs the
//     claim, heartbeats, and one more round trip with routines.
//   - Every transaction that writes takes the job's lock before the run
//     row (claim, SaveResult, FinishResult), so two never wait for each
//     other in a cycle.
//   - DedupeWindow is anarchon.Forever. History trimming deletes old run
//     rows but raises a per-job watermark to the highest slot it deleted; a
//     claim (plain or lease) for an absent slot at or below the watermark
//     loses, so trimming never reopens a slot.
//   - Every value is a bound parameter; table names come only from the
//     validated prefix and schema. Job names of any bytes but NUL (up to
//     [MaxJobName]) round-trip.
//   - Init is idempotent and safe when many instances migrate an empty
//     database at once: the DDL is CREATE … IF NOT EXISTS inside one
//     transaction that runs Serialize first, and a "table already exists"
//     race ([SQLDialect.IsAlreadyCreated]) is retried.
//   - Errors from the driver are wrapped with %w ("sqlite: claim: …"), so
//     errors.Is and errors.As reach them. After Close every method returns
//     an error wrapping anarchon.ErrClosed. Bad input, a closed backend and
//     database errors the dialect's IsPermanent matches are marked
//     anarchon.Permanent; the scheduler retries only the others.
//
// One narrow case: a plain claim whose statement started just before a
// concurrent SaveResult deleted that same slot's row may, on PostgreSQL's
// READ COMMITTED, insert it again. Only slots older than the job's whole
// retained history are deleted, far outside any MaxLate, so no instance
// claims them in practice; lease claims are fully serialised with trimming.
//
// The instance registry (SPEC §10, [SQLBackend.RegisterInstance]) is one
// upsert per registration that reads the server's clock once (expires_at
// is exactly last_seen + ttl), and one SELECT per list that reads the
// clock it judges live and dead by. The anarchontest Registry subtests
// pass on SQLite and on PostgreSQL servers.
//
// # Server requirements
//
// A SQL database with CREATE TABLE IF NOT EXISTS, a unique key that makes
// one of two concurrent inserts lose, and a way to serialise the claims of
// one job (row locks, an advisory lock, or transactions that run one at a
// time). With the zero values of SQLDialect's optional pieces the base
// writes standard SQL — INSERT … ON CONFLICT (cols) DO NOTHING / DO UPDATE
// with excluded, RETURNING on INSERT, UPDATE and DELETE, CREATE INDEX IF
// NOT EXISTS (PostgreSQL 10+, SQLite 3.35+, CockroachDB, YugabyteDB); a
// database without them sets the pieces (mysqlbackend: ON DUPLICATE KEY,
// read-before-write instead of RETURNING, VARBINARY keys).
// The role needs CREATE on the schema for Init, and SELECT, INSERT,
// UPDATE and DELETE on its tables.
//
// # Setup
//
// A third SQL database needs a dialect ([SQLDialect]), a connection
// ([Conn]) and a server check, and nothing else; see the example of [New]:
//
//	b, err := sqlbackend.New(sqlbackend.Config{Name: "mydb", Dialect: dialect, Conn: sqlbackend.DB{DB: db}})
//
// # Performance
//
// Statements are built once per backend, placeholders rewritten once
// ([SQLDialect.Placeholders]). A plain claim is one statement when it wins
// and two otherwise (the stored token and the clock are read back; always
// two without RETURNING), as sqlbackendtest.ClaimRoundTrips counts on
// every SQL backend; a lease claim one transaction of
// a few statements (lock the job, read the run row, write it), or one
// statement with [Routines]; a finish
// with its result one transaction, or one statement with Routines;
// History two queries. A batch of claims (anarchon.BatchClaimer,
// anarchon.RunBatchClaimer) is one transaction of the single claims'
// statements, or one statement with Routines' ClaimBatch and ClaimRuns;
// so is a batch of results, heartbeats or finishes
// (anarchon.ResultBatcher, anarchon.HeartbeatBatcher,
// anarchon.FinishBatcher: the single calls' statements per entry, or one
// statement with Routines' SaveResults, Heartbeats and FinishResults).
// Where write transactions run one at a time (SQLite), the results and
// finishes of jobs with one entry each in the batch take each step of
// the single call for all of them at once, one statement per step.
// With [DB.PrepareOnce] (sqlitebackend sets it) each query is prepared
// once per transaction and run from the prepared statement for every
// entry of the batch, so a batch parses its few statements once; with
// [DB.Statements] (sqlitebackend with Options.DriverLocks, as sqlitefile
// opens it) each stays prepared on the pool's connections from one call
// to the next.
// sqlbackendtest.BatchRoundTrips counts them all. What each costs on a real server is in the
// Performance sections of sqlitebackend and pgbackend.
//
// # Schema
//
// Six tables, named prefix+name (default prefix "anarchon_"), optionally
// in a schema ([Config]):
//
//   - jobs (job PRIMARY KEY, watermark, created_at, fence): one row per
//     job, created by PrepareJob (or the first lease claim); it carries
//     the trimming watermark and the last fencing token, and is the row
//     lease claims lock.
//   - runs (job, slot PRIMARY KEY, token, instance, attempt, state, status,
//     lease_until, claimed_at): one row per claimed slot. Plain claims are
//     rows in state "running" with a NULL lease_until, and become "done"
//     when their result is saved. Lease runs move through the states of
//     SPEC §6.
//   - results (job, token PRIMARY KEY, slot, instance, attempt, status,
//     claimed_at, started_at, finished_at, error, output, manual,
//     saved_at): the history records SaveResult stores, and the manual
//     runs RecordManualRun records (those never enter runs: they are not
//     deduplicated).
//   - instances (id PRIMARY KEY, info, ttl_ms, last_seen, expires_at,
//     stopped): the instance registry (SPEC §10), one row per scheduler
//     with its anarchon.InstanceInfo as JSON; see [SQLBackend.RegisterInstance].
//   - control (job PRIMARY KEY, paused, by_who, reason, set_at): job
//     control (SPEC §12), one row per job ever paused or resumed.
//   - triggers (job, tkey PRIMARY KEY, by_who, requested_at, state,
//     instance, token, slot, claimed_at, finished_at, status, error): one
//     trigger request per key (SPEC §12).
//
// History merges runs and results by token with anarchon.BuildHistory;
// run rows that settled without a saved result (missed, skipped,
// abandoned) appear with that status. A result carries the claim time of
// its run (claimed_at, by the server's clock), so a record keeps it after
// another holder took the run row over. All times are Unix milliseconds.
// What the tables hold is anarchon's to keep compatible across versions
// (SPEC §9): columns are only ever added.
//
// # History records of lease runs
//
// A lease claim that ends a holder's attempt records it itself, in the
// same transaction, unless a result for that token is already stored
// (the records anarchon.RunStore's doc describes, as membackend writes
// them):
//
//   - a takeover of an expired lease stores the previous holder's record
//     as lease_lost, of a released one as handed_over, with its instance,
//     attempt and claim time. A holder that comes back and saves its own
//     result (FinishResult: lease_lost) replaces it and keeps the claim
//     time;
//   - an abandonment (attempts used up) stores the last holder's record
//     the same way, and the abandonment once under
//     anarchon.AbandonedToken(slot), with the settling instance and the
//     last attempt, which the claim outcome (OutcomeDone) also carries.
//     The run row takes that token, so the last holder's Finish fails.
//     The scheduler's own save of the abandonment under the same token
//     updates the one record; its attempt never goes down.
//
// # Connections
//
// [Conn] is SPEC §7's two-function adapter: All (run a statement, get every
// row) and Transaction (run a function in one transaction). [DB] adapts a
// *sql.DB, [Funcs] two plain functions; pgbackend.Pool adapts a pgx pool. A
// backend never closes a Conn it was given; [Config.Close] closes what a
// constructor opened itself.
package sqlbackend
