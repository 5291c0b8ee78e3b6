// Package pgbackend is anarchon's PostgreSQL backend: the SQL base
// ([github.com/anarchon/anarchon/sqlbackend]) with the PostgreSQL
// [Dialect], on a github.com/jackc/pgx/v5 pool or a *sql.DB, plus
// LISTEN/NOTIFY so that backups wake as soon as a lease is released.
//
// # Guarantees
//
//   - Job control and triggers: those of sqlbackend; the claim function
//     (anarchon_claim_v10) reads the control row after the job lock, and a
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
//     Release, FinishResult (anarchon.ResultFinisher: finish and save
//     the result, trimming history) and SaveResult (the job's lock, the
//     result, a plain claim's run row, trimming) are one function call
//     each too;
//     Heartbeat and Active are one statement. The same clock judges them
//     all, so instances with skewed clocks agree; [Backend.ServerTime]
//     exposes it (anarchon.ServerClock).
//   - Batches (anarchon.BatchClaimer, anarchon.RunBatchClaimer, SPEC §4
//     "Batches"): one call of anarchon_claim_batch_v10 decides a batch of
//     plain claims with two statements for the whole batch (one INSERT
//     … ON CONFLICT DO NOTHING of every slot's run row in the batch's
//     order, then one SELECT of those rows that answers each claim as
//     the plain claim alone would), and one call of
//     anarchon_claim_runs_v10 a batch of lease claims: one read of the
//     batch's run rows answers, without a lock, the claims of slots held
//     by another live lease or settled (what the claim function would
//     answer them, and writes nothing: the losing claims of a burst);
//     one statement then locks the job rows of every other claim, in
//     job order; the new slots among them that are their job's only
//     claim in the batch (the winning claims of a burst) are won
//     together by one INSERT and one UPDATE of the jobs' fences, with
//     the checks the claim function makes (watermark, early, paused,
//     max-late, overlap limit: the job's live runs are counted through
//     the partial index anarchon_runs_live, so a claim does not read the
//     settled runs the job's history keeps; BenchmarkClaimRunsHistory);
//     and anarchon_claim_v10 decides
//     each claim left, in the batch's order, under the job's lock.
//     TestClaimRunsPreRead checks the read's answers and the
//     conformance subtest RunBatch/Burst races such batches against
//     single claims (one winner per slot, each job's fences growing)
//     and meets each refusal with them; the claims go as one JSON argument, so
//     any driver can send them. TestBatchRoundTrips counts one statement
//     per batch of 1, 10 and 100; the Batch and RunBatch conformance
//     subtests pass against a real server.
//   - Result, heartbeat and finish batches (anarchon.ResultBatcher,
//     anarchon.HeartbeatBatcher, anarchon.FinishBatcher, SPEC §4
//     "Batches"): one statement each. SaveResults calls the save_results
//     function, which runs the save_result function per entry (the one
//     a single SaveResult calls: the job's lock, the result, a plain
//     claim's run row, trimming); FinishResults calls finish_results,
//     which runs finish_result per entry; Heartbeats is one UPDATE … FROM
//     jsonb_to_recordset(…) that locks the runs in (job, slot) order
//     first. Entries go as one JSON argument, so any driver can send
//     them. TestBatchRoundTrips counts one statement per batch of 1, 10
//     and 100; the HeartbeatBatch, ResultBatch and FinishBatch
//     conformance subtests pass against a real server, also with
//     instances without the functions on the same tables
//     (TestConformanceMixed).
//   - The functions (anarchon_lock_job_v10, anarchon_trim_history_v10,
//     anarchon_claim_v10, anarchon_finish_v10, anarchon_release_v10,
//     anarchon_finish_result_v10, anarchon_claim_batch_v10,
//     anarchon_claim_runs_v10, anarchon_save_result_v10,
//     anarchon_save_results_v10, anarchon_finish_results_v10,
//     named with the table prefix and in the tables' schema) are created
//     by Init, each only if absent, in the migration transaction under an
//     advisory lock, so instances starting at once do not race and a role
//     that does not own them can still use them. The version in the name
//     changes whenever a body does, so two versions of anarchon sharing a
//     database each call their own; they decide
//     exactly as the SQL base's plain transactions, which they serialise
//     with (both lock the job row first).
//   - Fencing tokens (SPEC §6, "Fencing"): the job row's fence column,
//     raised by one in each won branch of anarchon_claim_v10 (a new slot,
//     a renewal by the same token, a takeover) after lock_job locked the
//     row, in the call's own transaction, and returned as o_fence;
//     claim_runs passes it on per slot, and the SQL base's plain
//     transaction raises the same column under the same lock, so the two
//     paths share one counter. The RunStore/Fence subtests pass on every
//     conformance variant (the routines, plain transactions, both mixed on
//     one schema, database/sql). A fence is kept exactly as the claim it
//     came with: on a single server or a synchronous standby it is as
//     durable as any commit; a failover to an asynchronous standby that
//     was behind loses the newest claims and their fences together, and
//     the promoted server gives a later holder a fence the holder from
//     before the failover still carries (the failover section of
//     RELIABILITY.md; the drills there check the fences). Init adds the
//     column to a schema made by an older version (TestOldSchema); an
//     instance still running claim_v5 in a rolling deploy wins without
//     raising it, and its runs carry no fence (0).
//   - DedupeWindow is anarchon.Forever; history trimming keeps a per-job
//     watermark so that a trimmed slot is never claimed again.
//   - Release, Finish and abandonment send NOTIFY in the same transaction
//     as the change, so a watcher hears of it only once it is committed.
//     [Backend.WatchRuns] listens on a dedicated connection
//     (anarchon.Watcher); its channel closes when the connection fails.
//   - Replication: Init reads pg_is_in_recovery(), synchronous_commit,
//     synchronous_standby_names and the physical standbys of
//     pg_stat_replication in one statement, and reports them
//     ([Backend.Replication], [Replication]): the [Topology] (single,
//     async standby, sync standby), whether it is safe, and a WARN on
//     Options.Logger naming each risk ("async standby: a failover can
//     lose acknowledged claims …"; synchronous_commit off, local or
//     remote_write). Safe is a synchronous standby
//     (synchronous_standby_names set) with synchronous_commit on or
//     remote_apply, or a single server with synchronous_commit not off.
//     Init on a standby fails with [ErrStandby]. What a failover does in
//     each topology is in the table below.
//   - Errors from pgx are wrapped with %w, so errors.As reaches
//     *pgconn.PgError; [IsAlreadyCreated] and [IsPermanent] read SQLSTATE
//     codes through the error's SQLState method only. Errors a retry
//     cannot fix (a missing table, a syntax or data error, refused
//     credentials: [IsPermanent]) are marked anarchon.Permanent; lost
//     connections, serialization failures, deadlocks and shutdowns are
//     retried. No error or log line contains the connection's password.
//
// What a failover did, as the drill in the faults module measured it
// (faults/pgfailover_test.go; RELIABILITY.md has every run): three
// instances on a multi-host URL with target_session_attrs=read-write, a
// plain job and a leased job (lease 2 s, 2.5 s of work) every second, the
// standby made to lag, then every process of the primary SIGKILLed and,
// 2 s later, the standby promoted with pg_ctl promote (the single server:
// started again on its data). Lost slots never started: their claims
// failed or went unanswered during the outage, and a failed claim is not
// retried past its slot (fail closed). Duplicates are slots started twice
// with the same Attempt, or with the next one although the first attempt
// had completed and recorded it. Delay is from the kill to the first run
// of a later slot.
//
//	| Topology | Fault | Lost slots | Duplicates | Delay | Measured by |
//	|---|---|---|---|---|---|
//	| single | SIGKILL, started again on its data 2 s later | 6, 8 | 0 | first run 3.5, 4.9 s after the kill | TestPostgresCrashSingle, soak, 2 drills |
//	| async standby | replication stalled 5 s, primary SIGKILL, promote | 5–10 per drill | 6 slots ran twice as Attempt 1 in 10 drills (0 or 1 per drill); 0 as Attempt 2 | 2.3–3.3 s | TestPostgresFailoverAsync, soak, 10 drills |
//	| sync standby | replication delayed 200–500 ms, primary SIGKILL, promote | 5–13 per drill | 0 (1–2 takeovers as Attempt 2 per drill, after the holder stopped or could not record its end) | 2.2–3.7 s | TestPostgresFailoverSync, CI and soak, 8 drills |
//
// On the synchronous standby the leased run in progress at the kill was
// taken over as Attempt 2 after the promotion, once its holder had stopped
// on its lost lease: at least once, fenced by Attempt. On the asynchronous
// standby that run's claim, acknowledged by the old primary, never reached
// the standby: a backup claimed the slot afresh and ran it again as
// Attempt 1, which Attempt cannot fence (SPEC §6, "Stores that forget").
// Run a synchronous standby; Init warns when there is none.
//
// Fences through a failover (one drill each, RELIABILITY.md): on the
// synchronous standby every leased start carried a fence and the
// takeover's was above its holder's; on the asynchronous standby the
// slot run twice as Attempt 1 ran the second time with a smaller fence
// (8 after 9), and two fences were each carried by two starts, since the
// promoted standby's counter had lost the claims with them.
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
// With a standby, list every server (each with its port) and ask for the
// one that takes writes; pgx tries them in order, so after a failover the
// pool's new connections reach the promoted standby:
//
//	postgres://app:secret@db1:5432,db2:5432/app?sslmode=verify-full&target_session_attrs=read-write
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
// 3.1–4.0× as a transaction of six round trips). The fencing token
// costs a won claim one UPDATE of the job row inside the function: with
// the test binaries of claim_v5 and claim_v6 run in turn five times
// (-benchtime 3000x, a busier machine), the lease claim cost 2.03–2.27×
// the bare insert before and 2.37–2.52× after; the plain claim, which
// takes no fence, 1.56–1.60× and 1.52–1.57×. BenchmarkFinishResult
// times FinishResult (about 0.7 ms, including history trimming) against
// Finish followed by SaveResult (about 1.6 ms): 0.42–0.43 of the time,
// when SaveResult was a transaction of six statements. With SaveResult
// one call of save_result, the same benchmark (three runs of 3000x,
// load 0.8) gave FinishResult 0.90–0.95 ms against Finish and SaveResult
// 1.03–1.09 ms: 0.87–0.88, the cost of one round trip more. A won lease
// slot thus costs the claim, one heartbeat per Lease/3, and one round
// trip for its result; a burst's heartbeats and results go in batches of
// one statement each. Lease claims of one job queue behind each
// other by design; claims of different jobs run in parallel.
//
// BenchmarkClaimBatch times batches of 256 plain claims of new slots
// against one INSERT … SELECT FROM unnest(…) ON CONFLICT DO NOTHING of
// the same 256 rows (-benchtime 50x, two runs each, load 1.5–2.3): with the
// batch decided by two statements for the whole batch (claim_batch_v9),
// 13.3–13.5 µs per won claim (2.2–2.3× the raw insert's 6.1–6.2 µs) and
// 10.5–11.1 µs per lost one; with two statements per claim
// (claim_batch_v6), 19.3 µs won (3.0–3.1×) and 20.8–21.0 µs lost.
//
// BenchmarkClaimRunsHistory times a batch of 256 lease claims under the
// default overlap policy whose jobs keep 0 or 100 settled runs: 32.8–33.7
// and 48.4–48.9 µs per won claim, against 9.0–10.1 µs per row of the raw
// insert (two runs of 50x, load 3.4, BENCHMARKS.md §1 "History").
// Without the index runs_live the overlap count read every run the job
// keeps: 158 µs per claim at 100 runs (one run of 20x on 2026-12-05,
// go1.26.8).
package pgbackend
