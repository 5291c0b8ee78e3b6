// Package pgbackend is anarchon's PostgreSQL backend: the SQL base
// ([github.com/anarchon/anarchon/sqlbackend]) with the PostgreSQL
// [Dialect], on a github.com/jackc/pgx/v5 pool or a *sql.DB, plus
// LISTEN/NOTIFY so that backups wake as soon as a lease is released.
//
// # Guarantees
//
//   - Job control and triggers: those of sqlbackend; the claim function
//     (anarchon_claim_v5) reads the control row after the job lock, and a
//     trigger request is announced with NOTIFY. The Control and Trigger
//     subtests pass against a real server (every conformance variant).
//   - Plain claims: one INSERT … ON CONFLICT (job, slot) DO NOTHING
//     RETURNING; the primary key lets exactly one instance win, from any
//     number of connections and hosts. A retry with the winner's token
//     answers true again.
//   - Lease claims: one call of a PL/pgSQL function (one round trip) that
//     locks the job's row FOR UPDATE (a transaction-scoped advisory lock,
//     pg_advisory_xact_lock, guards the row's creation on a job's first
//     claim), then the run's row, and decides SPEC §6's table by the
//     server's clock (clock_timestamp(), read after the locks). Finish,
//     Release and FinishResult (anarchon.ResultFinisher: finish and save
//     the result, trimming history) are one function call each too;
//     Heartbeat and Active are one statement. The same clock judges them
//     all, so instances with skewed clocks agree; [Backend.ServerTime]
//     exposes it (anarchon.ServerClock).
//   - The functions (anarchon_lock_job_v5, anarchon_claim_v5,
//     anarchon_finish_v5, anarchon_release_v5, anarchon_finish_result_v5,
//     named with the table prefix and in the tables' schema) are created
//     by Init, each only if absent, in the migration transaction under an
//     advisory lock, so instances starting at once do not race and a role
//     that does not own them can still use them. The version in the name
//     changes whenever a body does, so two versions of anarchon sharing a
//     database each call their own; they decide
//     exactly as the SQL base's plain transactions, which they serialise
//     with (both lock the job row first).
//   - DedupeWindow is anarchon.Forever; history trimming keeps a per-job
//     watermark so that a trimmed slot is never claimed again.
//   - Release, Finish and abandonment send NOTIFY in the same transaction
//     as the change, so a watcher hears of it only once it is committed.
//     [Backend.WatchRuns] listens on a dedicated connection
//     (anarchon.Watcher); its channel closes when the connection fails.
//   - Errors from pgx are wrapped with %w, so errors.As reaches
//     *pgconn.PgError; [IsAlreadyCreated] and [IsPermanent] read SQLSTATE
//     codes through the error's SQLState method only. Errors a retry
//     cannot fix (a missing table, a syntax or data error, refused
//     credentials: [IsPermanent]) are marked anarchon.Permanent; lost
//     connections, serialization failures, deadlocks and shutdowns are
//     retried. No error or log line contains the connection's password.
//
// # Server requirements
//
// PostgreSQL 10 or newer ([MinServerVersion], checked by Init). The role
// needs CREATE on the schema the tables go in (and on the database, if
// Options.Schema names a schema that does not exist yet), and
// SELECT/INSERT/UPDATE/DELETE on the tables and EXECUTE on the functions
// afterwards (PL/pgSQL is installed in every database by default). Behind
// a pooler in transaction mode (PgBouncer), claims work, since every transaction is
// self-contained and the advisory locks are transaction-scoped; add
// default_query_exec_mode=exec to the connection string if the pooler
// does not support prepared statements. LISTEN needs a session: connect
// the backend to the server directly, or set Options.NoNotify (instances
// then poll). Each Backend uses its pool's
// connections plus one per active WatchRuns.
//
// # Setup
//
//	b, err := pgbackend.Open(ctx, "postgres://app:secret@db.example:5432/app?sslmode=verify-full&pool_max_conns=8", nil)
//	if err != nil { … }
//	defer b.Close(ctx) // closes the pool Open made
//	s := anarchon.New(b, nil)
//
// TLS (sslmode, sslrootcert, sslcert, sslkey) and authentication
// (password, passfile, PGPASSWORD and the other PG* environment variables)
// are set through the connection string, as pgx parses it. [NewFromPool]
// and [NewFromDB] use a pool or *sql.DB the program already has and leave
// it open on Close. Tables are named anarchon_jobs, anarchon_runs,
// anarchon_results, anarchon_instances, anarchon_control and
// anarchon_triggers; Options.Prefix and Options.Schema change that, so
// several applications can share one database.
//
// # Performance
//
// BenchmarkClaimVsRawInsert and BenchmarkLeaseClaimVsRawInsert time each
// claim against the bare INSERT … ON CONFLICT DO NOTHING on the same pool
// in the same run. On a shared 2-core machine with PostgreSQL 15 on
// loopback (-benchtime 3000x, two runs), the plain claim cost 1.11–1.17×
// the bare insert (one statement too; the extra is the watermark check),
// and the lease claim 1.33–1.36× (one call of the claim function; it was
// 3.1–4.0× as a transaction of six round trips). BenchmarkFinishResult
// times FinishResult (about 0.7 ms, including history trimming) against
// Finish followed by SaveResult (about 1.6 ms): 0.42–0.43 of the time. A
// won lease slot thus costs the claim, one heartbeat per Lease/3, and one
// round trip for its result. Lease claims of one job queue behind each
// other by design; claims of different jobs run in parallel.
package pgbackend
