// Package mysqlbackend is anarchon's MySQL and MariaDB backend: the SQL
// base ([github.com/anarchon/anarchon/sqlbackend]) with the MySQL
// [Dialect], a connection ([Conn], READ COMMITTED transactions) and a
// server check, on github.com/go-sql-driver/mysql or any *sql.DB. The
// dialect — the Dialect value and its helpers in dialect.go, not the
// connection code — is 72 lines: the base's statements are built from its
// pieces (SPEC §7), so no SQL text is rewritten here.
//
// # Guarantees
//
// Measured by the conformance suite (anarchontest), the race of 16
// connection pools over 2,000 contested slots and a race of 8 OS
// processes over 2,000 slots, on MariaDB 10.11 (Debian 12's package):
// every slot had exactly one winner.
//
//   - Batches (anarchon.BatchClaimer, anarchon.RunBatchClaimer, SPEC §4
//     "Batches"): one READ COMMITTED transaction per batch, in which each
//     claim runs the statements it runs alone, in the order of (job, slot)
//     (lease claims: of job) so that batches never deadlock; the Batch and
//     RunBatch conformance subtests pass against a real server, and
//     TestBatchRoundTrips counts 2n+2 statements for a batch of n plain
//     claims, 5n+2 for n won lease claims.
//   - Fencing tokens (SPEC §6, "Fencing"): the base's per-job counter in
//     the jobs row, raised by every won lease claim under the job row's
//     lock in the claim's transaction (one UPDATE more per win); the
//     RunStore/Fence conformance subtests pass, the race included. It is
//     as durable as the claim it came with (Failover, below): a failover
//     to an asynchronous replica that had not received the newest commits
//     loses their fences with their claims, and a new holder can be given
//     a fence an older one still carries. Init adds the column to tables
//     made by an older version (TestOldSchema, with racing instances).
//   - Result, heartbeat and finish batches (anarchon.ResultBatcher,
//     anarchon.HeartbeatBatcher, anarchon.FinishBatcher) are one READ
//     COMMITTED transaction each too, every entry running its single
//     call's statements in the order of (job, slot); the HeartbeatBatch,
//     ResultBatch and FinishBatch conformance subtests pass against a
//     real server, and TestBatchRoundTrips counts 5n+2 statements for n
//     results, 2n+2 for n held heartbeats and 6n+2 for n held finishes.
//   - Plain claims: one INSERT … SELECT … ON DUPLICATE KEY UPDATE job = job
//     on the runs table's (job, slot) primary key, which lets exactly one
//     insert win; MySQL has no RETURNING, so the claim then reads the
//     slot's token (and the server's clock, to tell an early slot) and
//     wins if it is its own (a repeated claim with the winner's token
//     answers true again). A slot at or below the job's
//     trimming watermark is never inserted.
//   - Lease claims, Finish, Release, Heartbeat and FinishResult are
//     transactions at READ COMMITTED: the job's row is locked with SELECT …
//     FOR UPDATE, then the run's; a missing job row is created by an
//     insert whose key makes concurrent creators wait for each other.
//     READ COMMITTED, not InnoDB's default REPEATABLE READ, because a
//     locking read of a missing row would take a gap lock there, and two
//     claims inserting into the same gap would deadlock. Statements that
//     return what they change elsewhere (UPDATE … RETURNING) run as a
//     locking SELECT of the same rows followed by the UPDATE or DELETE.
//     Deadlocks (1213) and lock wait timeouts (1205) are transient errors
//     and retried by the scheduler.
//   - Clock: leases, lateness and history TTLs are judged by the server's
//     clock, UNIX_TIMESTAMP(SYSDATE(3)) in milliseconds. SYSDATE(3) reads
//     the clock when it is evaluated; NOW(3) is fixed when the statement
//     starts, which may be before the statement waited for a row lock, so
//     a claim would judge a lease by a stale time. UNIX_TIMESTAMP reads
//     the session's time zone, which is ambiguous in the hour a
//     daylight-saving zone repeats: Open sets time_zone='+00:00', and the
//     server check refuses a session that is not UTC. A server started
//     with --sysdate-is-now would read statement-start time instead.
//   - Failover: a claim is durable once its autocommit INSERT or its
//     transaction commits, as durable as the server's
//     innodb_flush_log_at_trx_commit and replication make a commit. With
//     asynchronous replication a failover may lose the newest commits, and
//     a slot claimed just before may be claimed again on the new primary;
//     semi-synchronous replication or Galera, which acknowledge a commit
//     only once a replica has it, keep every acknowledged claim. With
//     statement-based binary logging SYSDATE is unsafe; use row-based
//     (MySQL 8 and MariaDB 10.11's default is row or mixed).
//   - History is the base's: results are kept for the job's history size
//     and TTL, trimming raises a per-job watermark so that a trimmed slot
//     is never claimed again, and DedupeWindow is anarchon.Forever.
//   - No Watcher: MySQL has no LISTEN/NOTIFY, so backups poll (the
//     scheduler's lease checks) instead of waking on a release.
//   - Errors are go-sql-driver/mysql's *mysql.MySQLError, wrapped with %w;
//     [IsPermanent] marks those a retry cannot fix (a missing table, a
//     syntax error, refused data or credentials) anarchon.Permanent.
//
// # Server requirements
//
// MySQL 8.0 or newer, or MariaDB 10.11 or newer, with InnoDB as the
// session's default_storage_engine (the tables are created with it) and
// a strict sql_mode such as the default STRICT_TRANS_TABLES, so that a
// key longer than its column fails instead of being cut; Init checks all
// three (TestServerCheck). The user needs CREATE, INDEX, SELECT, INSERT, UPDATE and
// DELETE on the database. Keys are VARBINARY: job and instance names of
// up to 1,024 bytes, tokens of up to 512; other text is LONGBLOB.
//
// # Setup
//
//	b, err := mysqlbackend.Open("app:secret@tcp(db.example:3306)/app?tls=true", nil)
//	if err != nil { … }
//	defer b.Close(ctx) // closes the pool Open made
//	s := anarchon.New(b, nil)
//
// TLS and authentication are DSN parameters, as go-sql-driver/mysql
// parses them. [NewFromDB] uses a *sql.DB the program already has (its
// session time zone must be UTC: add time_zone=%27%2B00%3A00%27 to its
// DSN), and [New] any client through sqlbackend.Conn; neither is closed
// by Close. Tables are named anarchon_jobs, anarchon_runs,
// anarchon_results, anarchon_instances, anarchon_control and
// anarchon_triggers; Options.Prefix and Options.Database change that.
// Open's pool holds at most Options.MaxConns connections
// ([DefaultMaxConns], 16), all kept open when idle; a claim that finds
// them busy waits for one (TestPoolBound). Every process adds its pool to
// the server's count, which MySQL bounds with max_connections (151 by
// default). scripts/services/mysql.sh starts a test
// server.
//
// # Performance
//
// BenchmarkClaimVsRawInsert and BenchmarkLeaseClaimVsRawInsert time each
// claim against a bare INSERT IGNORE on the same server in the same run
// (BENCHMARKS.md has bench/run.sh's numbers). The plain claim is two
// statements whatever it answers (the insert, then one read of the slot's
// token and the server's clock, since there is no RETURNING); the lease
// claim is a transaction of five round trips when another instance holds
// the slot and seven when it wins one (eight when it checks for overlap):
// the driver begins a READ COMMITTED transaction with two statements, and
// TestClaimRoundTrips counts the rest. On MariaDB 10.11 on loopback, on a
// 2-core machine, bench/run.sh claim (BENCHMARKS.md §1) measured the
// plain claim's median at 4.3–4.6× the bare INSERT IGNORE's (1, 4 and 16
// claimers; 275 µs with one) and the lease claim's at 11.8–18.2× (751 µs
// with one); bench/run.sh contest (§2) had no slot without exactly one
// winner, 2 to 32 instances.
package mysqlbackend
