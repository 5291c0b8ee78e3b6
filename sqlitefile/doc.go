// Package sqlitefile opens a SQLite database file as an anarchon backend
// in one call, bringing in a driver: [Open] returns a
// [github.com/anarchon/anarchon/sqlitebackend.Backend] that owns the
// database and closes it on Close. It is the embedded default: no server,
// and instances in several processes on one host share one file.
//
// Open refuses a path that is a directory or whose directory does not
// exist, before SQLite reports either as "unable to open database file".
// A file, or a file beside it (-wal, -shm), that this
// process may not read, write or create is reported by Init with the path
// and the file system's reason ("open PATH: permission denied", "open
// PATH: permission denied: the file can be read but not written", or
// "cannot create PATH-wal: directory DIR: permission denied"), ahead of
// SQLite's own words (sqlitebackend.Options.File); Open itself creates a
// missing file only, and leaves an existing one to SQLite, so that Open
// and OpenExisting report the same file in the same words.
//
// # Guarantees
//
// Those of sqlitebackend: exactly one winner per (job, slot) across every
// goroutine and process using the file (the tests race 8 processes over
// 2,000 slots), repeat-safe claims, leases judged by the host's clock,
// history trimming that never reopens a slot.
//
// A new database file is created with mode 0600 (SQLite gives its -wal
// and -shm files the same mode). The file's device and inode are recorded
// at Open: a file deleted or replaced under the process (a process that
// opens the path then gets a new, empty database and would claim the same
// slots) is seen at most a second later at a claim, logged as an ERROR,
// and every claim then fails closed with sqlitebackend.ErrFileReplaced
// until the process opens the database again. Claims acknowledged in the
// old file are lost to the new one, and Run.Attempt cannot fence that
// (SPEC §6, "Stores that forget").
//
// Open's pool holds at most 16 connections to the file and keeps every
// one it opened, never closing an idle one: database/sql would close idle
// connections beyond two, and SQLite's unix VFS deadlocked when one
// process opened and closed connections to a file concurrently (a
// lock-order inversion between its global mutex and the file's; three
// schedulers on one file under -race hung). A burst of claims therefore
// uses at most 16 connections per backend, where an unbounded pool opened
// one per slot in flight until the file could not be opened; a claim that
// finds all 16 busy waits for one, for as long as its context allows.
// Writers take turns on the file's write lock whatever the pool's size.
//
// Open's connections run no automatic WAL checkpoint
// (wal_autocheckpoint(0)); the backend checkpoints the WAL itself when
// its writers are idle (sqlitebackend.Options.Checkpoints, and
// sqlitebackend's doc, "Checkpoints"), so that no writer waits for a
// checkpoint inside another's commit. OpenExisting keeps SQLite's
// automatic checkpoint: its callers do not write.
//
// # Server requirements
//
// None beyond sqlitebackend's: a local file system (SQLite's locks are
// unreliable on network file systems) and a directory the process may
// write. The driver, modernc.org/sqlite, is pure Go (SQLite 3.54.1), so
// programs build with CGO_ENABLED=0.
//
// # Setup
//
//	b, err := sqlitefile.Open("/var/lib/myapp/anarchon.db", nil)
//	if err != nil { … }
//	s := anarchon.New(b, nil)
//	… // add jobs, s.Start(ctx)
//	err = s.Stop(ctx)       // waits for handlers; it does not close the backend
//	err = b.Close(context.Background()) // closes the database file
//
// # Performance
//
// The plain claim costs about 1.3–2.2× the bare
// INSERT … ON CONFLICT DO NOTHING it is built on (BenchmarkClaimVsRawInsert
// reports the ratio as claim/raw): the extra is the watermark check in the
// same statement, the wider row and the connection preparation. The lease
// claim (one BEGIN IMMEDIATE transaction of a few statements: SQLite runs
// in-process, so each costs no network round trip) measured 1.6× the same
// insert, and FinishResult (one transaction: finish, save, trim) 0.65 of
// the time of Finish followed by SaveResult (0.96 ms against 1.47 ms;
// -benchtime 3000x on the same shared machine).
//
// Re-run with v1.62.0 (go1.26, -benchtime 3000x, 2 runs) while the machine
// ran parallel builds at a load average far above its 2 cores: the plain
// claim cost 1.8–2.4× the bare insert, the lease claim 3.0–3.2×, and
// FinishResult 0.72–0.79 of Finish followed by SaveResult. The absolute
// times of that run (0.48–0.70 ms per claim) measure the load, not the
// driver; the ratios, taken within one run, are the comparable figures.
//
// Since Open keeps the backend's statements prepared on the pool's
// connections (sqlitebackend.Options.DriverLocks; sqlitebackend's
// package doc, "Prepared statements"), a plain claim no longer parses
// its statement: three runs each of the code before and after, in turn
// (2026-12-05 10:47 UTC, -benchtime 5000x, load average 0.8), measured
// the plain claim at 1.32–1.35× the bare insert (67–82 µs) against
// 2.21–2.46× (116–158 µs) before, and the lease claim at 2.39–2.58×
// (128–149 µs) against 3.02–3.15× (149–202 µs).
//
// # Driver choice
//
// The driver is modernc.org/sqlite (v1.62.0, SQLite 3.54.1), a pure-Go
// translation of the SQLite C library, so that programs using this package
// (and the anarchon daemon) build with CGO_ENABLED=0 and cross-compile.
// When it was chosen, its v1.38.2 (SQLite 3.50.3) was measured side by
// side with the cgo driver
// github.com/mattn/go-sqlite3 (v1.14.28, SQLite 3.49.1), running the same sqlitebackend code on a fresh WAL file each,
// with the same PRAGMAs (busy_timeout, journal_mode=WAL,
// synchronous=NORMAL), in one benchmark binary, on a shared 2-core Linux
// machine (go1.26, -benchtime 3000x, 3 runs each, per operation):
//
//	operation                     modernc v1.38.2     mattn v1.14.28
//	plain Claim (one INSERT)      115–174 µs          116–279 µs
//	lease Claim (transaction)     108–179 µs          115–159 µs
//	Claim + SaveResult (trimming) 1.5–2.7 ms          0.87–1.25 ms
//	History, 100 records          1.3–2.0 ms          1.25–2.1 ms
//
// The claim paths, which are the ones on a scheduler's hot path, are the
// same within the machine's noise; saving results is about 1.5–2× slower
// with the pure-Go driver, still hundreds per second per process, far
// more than a scheduler writes. The numbers do not justify cgo, so
// mattn/go-sqlite3 is not a dependency. A program that already links it
// can pass its own *sql.DB to sqlitebackend.New instead of using Open.
package sqlitefile
