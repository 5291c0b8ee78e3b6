// Package sqlitebackend is anarchon's SQLite backend: the SQL base
// ([github.com/anarchon/anarchon/sqlbackend]) with the SQLite [Dialect], on
// a *sql.DB from any SQLite driver. It uses the standard library only; the
// github.com/anarchon/anarchon/sqlitefile module opens a file with a
// pure-Go driver for you.
//
// # Guarantees
//
// Everything the SQL base guarantees (plain claims by one
// INSERT … ON CONFLICT DO NOTHING, lease claims by one transaction,
// trimming that never reopens a slot, DedupeWindow anarchon.Forever), for
// any number of goroutines and of OS processes sharing one database file on
// one host: SQLite's file locks serialise writers, and every transaction
// the backend opens is BEGIN IMMEDIATE, which takes the write lock before
// reading, so a lease claim cannot decide on a stale read. The clock is the
// host's (julianday('now')), the same for every process on it. Errors
// whose SQLite result code says a retry cannot fix them ([IsPermanent]:
// SQLITE_ERROR such as a missing table, SQLITE_CONSTRAINT, …) are marked
// anarchon.Permanent; SQLITE_BUSY and the like are retried.
//
// Batches (anarchon.BatchClaimer, anarchon.RunBatchClaimer, SPEC §4
// "Batches") first read the rows of their slots in one SELECT, which
// answers the slots already held without the write lock (a batch whose
// first slot has no row, a burst's first wave, skips that read after a
// read of that one row), then decide the
// others in one BEGIN IMMEDIATE transaction, one hold of the lock: the
// new slots of a plain batch with one INSERT (sqlitefile's
// TestBatchRoundTrips: 4 statements for a won batch of 1, 10 or 100
// slots; one INSERT per 500),
// the lease claims that are their job's only one in the batch with one
// INSERT and one UPDATE of their fences, and every other claim with the
// statements it runs alone. The slots go to those statements as one
// JSON array read with json_each (SQLDialect.JSONKeys), a statement of
// the same short text whatever the batch's size (TestBatchKeysAsJSON);
// on SQLite 3.45.0 and later, which Init finds by a probe, with
// jsonb_each, which hands each entry to json_extract in SQLite's binary
// JSON instead of text it parses again (TestJSONEachBeforeJSONB covers
// an older library).
// Batches of results, heartbeats and finishes (anarchon.ResultBatcher,
// anarchon.HeartbeatBatcher, anarchon.FinishBatcher) are one transaction
// too. The results and finishes of jobs that have one entry each in the
// batch (a burst's) take each step of the single call for all of them
// at once, a statement per step with the entries as one JSON array: the
// jobs' rows, the runs finished (finishes) or settled (plain results),
// the results stored, the history trimmed, the watermarks raised over
// trimmed runs (sqlitefile's TestBurstBatchRoundTrips: 7 statements for
// 100 results, and for 100 finishes). Entries of a job that has several
// in the batch run as their single call (5 statements each); a
// heartbeat is 1 statement each. The HeartbeatBatch, ResultBatch,
// ResultBatchJobs, FinishBatch and FinishBatchJobs conformance subtests
// pass on a file (the *Jobs ones compare a batch of one entry per job
// with the same entries sent as single calls). sqlitefile's
// BenchmarkResultBatch (256 results of jobs with full histories,
// 2026-12-04) measured 117–124 µs per result this way against 150–159
// µs with each result alone, and an instance of a burst of 10,000 jobs
// on 3 processes spent 9–24% less CPU (bench/HISTORY.md §8).
// BENCHMARKS.md §1 measured it at 63–67 µs per result, 12.1–13.3× 256
// prepared inserts of result rows in one transaction; on go1.26.8 it
// measured 122–128 µs per result at 01:17 on 2026-12-05 and 112–120 µs
// at 08:29 with the partial index runs_live (bench/HISTORY.md §1). Each
// statement is prepared once per transaction, or once per pooled
// connection with Options.DriverLocks ("Prepared statements" below).
// sqlitefile's BenchmarkClaimBatch (batches of 256 new slots) measured
// 16.5–16.6 µs per won claim and 5.8–6.0 µs per lost one, 2.5× the
// raw floor of 256 prepared INSERT … ON CONFLICT DO NOTHING in one
// transaction (BENCHMARKS.md §1). With the slots joined by UNION ALL
// instead of JSON it measured 3.66–4.09× where JSON measured 2.98–3.36×,
// the two run in turn on 2026-12-04 (go1.26.8; bench/HISTORY.md §1).
//
// A lease claim's overlap check counts the job's live runs through the
// partial index runs_live (SQLDialect.PartialIndexes), so it does not read
// the settled runs the job's history keeps: sqlitefile's
// BenchmarkClaimRunsHistory measured 19.8–20.2 µs per won claim of a batch
// of 256 when the jobs keep no settled run and 26.7–27.0 µs when they keep
// 100 (BENCHMARKS.md §1, "History"), where the count without the index
// took 231 µs per claim at 100 runs (one run of 20x on 2026-12-05,
// go1.26.8); TestOverlapCheckUsesLiveIndex checks that the planner reads
// the index.
//
// Fencing tokens (SPEC §6, "Fencing"): the base's per-job counter, in the
// jobs row of the database file, raised by every won lease claim in its
// BEGIN IMMEDIATE transaction; the RunStore/Fence conformance subtests
// pass. It holds for as long as the file does: a file deleted or replaced
// under running processes, or restored from a copy, starts the counter
// again with the claims it lost, and a new holder can be given a fence an
// older one still carries. With Options.File set, a process fails its
// claims closed once its file was replaced (ErrFileReplaced) instead of
// claiming in the new one.
//
// # Writers in one process
//
// The writers of one process take turns on a queue of their own per
// database file (every Backend on the file in the process shares it,
// whatever the driver, found by the file's name at Init) before they ask
// SQLite for the write lock: every transaction and every statement other
// than a SELECT waits there, first come first served, for as long as its
// context allows. SQLite's busy handler then only arbitrates between
// processes. The reason: that handler is not a queue. A waiter sleeps
// 1, 2, 5, … then 100 ms between tries, while a writer that has just
// committed asks again at once, so under steady contention the oldest
// waiters find the lock free least often. Without the queue, in the
// Batch/Race conformance subtest (16 goroutines over 4 handles claiming
// 200 slots in a tight loop, half in batches, which hold the lock longer
// than one claim) on a 2-CPU host, the racers' first claims waited the
// whole 10 s busy timeout and failed with SQLITE_BUSY in every run
// (10.6 s measured for one), though every slot still had one winner;
// with it the subtest passes, and TestWritersQueueInProcess (8 writers,
// 4 handles, a 1 ms busy timeout) sees no SQLITE_BUSY, against 277 of
// 320 writes failing without the queue. The failures were not a read
// transaction upgraded to a write one (which SQLite refuses at once with
// SQLITE_BUSY, busy handler or not): the plain claim is one INSERT in
// autocommit, and every transaction the backend opens is BEGIN
// IMMEDIATE.
//
// # Writers across processes
//
// The processes on one file take turns too: the holder of a process's
// turn then takes an exclusive flock(2) of a lock file beside the
// database (its path with [LockFileSuffix], "-writers"), and asks SQLite
// for the write lock only once it holds it. The kernel wakes a waiting
// process the moment the holder lets go, where SQLite's busy handler
// sleeps up to 100 ms between tries and lets the process that just
// committed take the lock again first. The lock file is created at the
// process's first write, with the database file's permission bits, kept
// open for the life of the process, and not removed by the backend. It
// only orders the writers; SQLite's own lock still decides, so a writer
// without it is slower, never wrong:
//
//   - A wait for the lock file lasts the longer of Options.BusyTimeout
//     and DefaultBusyTimeout at most (a process holding it that long is
//     stuck; a short busy timeout is for SQLite's handler, which sleeps
//     between tries, and does not end a wait in a queue early); the
//     writer then goes on to SQLite's lock, and its busy handler, without
//     it. A wait whose context ends returns at once with the context's
//     cause. Either way the lock the wait may still get is let go in the
//     background, and the process's writers go without the lock file
//     until it is.
//   - A writer that does not take the lock file (the sqlite3 shell, a
//     program on the file through another library) meets the busy
//     handler as before, as does every writer where the lock file cannot
//     be created (a read-only directory) or locked, or the system has no
//     flock (Windows, AIX, Solaris).
//
// sqlitefile's TestWritersQueueAcrossProcesses (three processes, busy
// timeout 1 ms, batches of 100 claims) sees no SQLITE_BUSY; without the
// lock file, 10 of 30 batches of one process failed in one run.
// BENCHMARKS.md §8 measures the bursts of three processes.
//
// # Checkpoints
//
// In WAL mode SQLite copies the WAL back into the database file in a
// checkpoint, which it runs by itself inside the COMMIT that takes the
// WAL past 1,000 pages (PRAGMA wal_autocheckpoint): the copy and its
// fsyncs then happen while that writer still holds the process's turn
// and the lock file, and every other writer of every process waits for
// them. One instance's third of a 10,000-job burst's lease claims
// (batches of 256, in the queue's order) wrote 1,353 WAL frames
// (sqlitefile's TestBatchesInNameOrderWriteFewerPages): several such
// waits inside a burst's first claims. With Options.Checkpoints
// (sqlitefile sets it, and turns the automatic checkpoint off in its
// DSN) a goroutine of the backend runs a PASSIVE checkpoint from a
// connection of the pool, outside the turn, once the process's writers
// of the file have been idle for [CheckpointIdle] (100 ms), or, while
// they never are, [CheckpointEvery] (5 s) after the last one; writers go
// on appending to the WAL while it copies. A checkpoint that fails
// (another connection's holds the lock) is tried again at the next look.
// TestCheckpointsOffTheTurn (sqlitefile) checks that 8 MiB written stay
// out of the database file until the writers are idle and are in it
// after; TestCheckpointerWaitsForIdleWriters checks the timing.
// bench/HISTORY.md ("§8 of 2026-12-05: K = 10,000 on 8fc7759 …",
// 4a04876) has the bursts before and after.
//
// # Prepared statements
//
// SQLite runs in the process, so a statement's parsing and planning is
// CPU time of the caller's own, and for the backend's statements (a
// plain claim is one INSERT … SELECT with three subqueries) it was the
// largest share: sqlite3_prepare_v2 took about 40% of a single plain
// claim's CPU, and 37% of a lease claim's, in a CPU profile of
// sqlitefile's BenchmarkClaimVsRawInsert and BenchmarkLeaseClaimVsRawInsert
// (go test -bench ClaimVsRawInsert -cpuprofile, 2026-12-05), most of the
// rest being the statements' run and the write of their pages to the
// WAL. With Options.DriverLocks
// (sqlitefile sets it) the backend keeps one *sql.Stmt per statement
// text (sqlbackend.DB.Statements), which database/sql prepares once on
// each pooled connection, and runs its transactions as database/sql's
// own (the DSN's _txlock=immediate makes them BEGIN IMMEDIATE), which
// reuse the connection's statements (Tx.StmtContext); a statement a
// transaction runs first is prepared for that transaction, then on the
// pool once it has ended. Without DriverLocks (a *sql.DB of the
// caller's, which may lack those DSN parameters) the backend begins its
// transactions itself on a *sql.Conn, where no pooled statement runs,
// and prepares each statement once per transaction. sqlitefile's
// BenchmarkClaimVsRawInsert and BenchmarkLeaseClaimVsRawInsert, the two
// ways in turn, three runs each (2026-12-05 10:47 UTC, load average
// 0.8): a plain claim 67–82 µs, 1.32–1.35× the raw insert, against
// 116–158 µs, 2.21–2.46×, preparing in every call; a lease claim 128–149
// µs, 2.39–2.58×, against 149–202 µs, 3.02–3.15×, preparing once per
// transaction (its transaction commits more pages: the run, the index
// of live runs and the job's fence).
//
// # Server requirements
//
// SQLite 3.35.0 or newer ([MinVersion]; RETURNING) with the JSON
// functions json_each and json_extract, which batches of claims and
// results use (built in since 3.38.0; an older library needs its JSON1
// extension),
// both checked by Init, which refuses a library without them with a
// permanent error. A
// local file system: SQLite's locks are unreliable on network file systems,
// so instances on several hosts need a server database (pgbackend).
//
// # Setup
//
// The backend prepares connections itself, so the DSN may be plain:
//
//   - Init switches the file to WAL (PRAGMA journal_mode=WAL, stored in the
//     file) unless Options.KeepJournalMode, so readers do not block the
//     writer.
//   - Every pooled connection gets PRAGMA busy_timeout (Options.BusyTimeout,
//     default 10 s) before its first use, so a writer waits for another
//     process's lock instead of failing with SQLITE_BUSY.
//   - Transactions are opened by the backend with an explicit
//     "BEGIN IMMEDIATE" on one connection, whatever the driver's own
//     transaction mode (_txlock) is.
//
// A DSN may still set the same PRAGMAs (modernc.org/sqlite:
// _pragma=busy_timeout(10000)&_pragma=journal_mode(WAL); mattn/go-sqlite3:
// _busy_timeout=10000&_journal_mode=WAL). An in-memory database
// (":memory:") is private to one connection: use db.SetMaxOpenConns(1).
// The pool's size is the caller's: bound it (SetMaxOpenConns, and
// SetMaxIdleConns to the same number; sqlitefile.Open keeps 16), or a
// burst of claims opens a connection per slot in flight. The backend
// never closes the *sql.DB unless Options.CloseDB is set.
//
// # Performance
//
// Writers take turns on the file's write lock. BENCHMARKS.md §1 measured,
// with modernc.org/sqlite on one host: a plain claim at 43 µs p50 with
// one claimer, 339 µs with 4 and 1.4 ms with 16 (a bare autocommit INSERT:
// 30–31 µs), a lease claim at 77 µs p50 with one, and about 6,000–20,100
// claims/s in all. Every claimer waits for the lock: the p50 and p99 grow
// with their number (a plain claim's p99 0.6 ms with 4, 2.4 ms with 16).
package sqlitebackend
