package sqlitefile

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/anarchon/anarchon/sqlitebackend"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// DriverName is the database/sql driver Open uses: modernc.org/sqlite,
// pure Go.
const DriverName = "sqlite"

// Open opens (creating it if absent) the SQLite database file at path and
// returns a backend that owns it: the backend's Close closes the database.
// opts may be nil; opts.CloseDB, opts.DriverLocks (its DSN has
// _txlock=immediate and busy_timeout) and opts.Checkpoints are forced on.
//
// The connection sets busy_timeout, journal_mode=WAL and
// synchronous=NORMAL (durable across process crashes; a power loss may
// lose the last transactions, never corrupt the file), and opens write
// transactions with BEGIN IMMEDIATE (DSN); it also turns SQLite's
// automatic WAL checkpoint off (wal_autocheckpoint(0)), and the backend
// checkpoints the WAL itself, off the writers' turn, when they are idle
// (sqlitebackend.Options.Checkpoints; TestCheckpointsOffTheTurn). The file's directory must exist; a
// new file is created with mode 0600. opts.File defaults to path, so a
// file deleted or replaced under the process is detected and claims fail
// closed (sqlitebackend.ErrFileReplaced); the pool's connections open the
// file without creating it (mode=rw), so a deleted file stays deleted
// (TestFileReplaced).
//
// Errors: an empty path, a path that is a directory, a directory that
// does not exist (or is not a directory), or an error creating the file;
// errors from the file system wrap the *fs.PathError (errors.Is with
// fs.ErrNotExist works). A file that exists is opened by SQLite at the
// first statement: one this process may not read or write fails the
// backend's Init, with the file system's reason ahead of SQLite's error
// (sqlitebackend's Init). The tables are created by the backend's Init.
func Open(path string, opts *sqlitebackend.Options) (*sqlitebackend.Backend, error) {
	if path == "" {
		return nil, errors.New("sqlitefile: empty path")
	}
	if path == ":memory:" {
		return nil, errors.New("sqlitefile: \":memory:\" is not a file; use sqlitebackend.New with a single-connection *sql.DB")
	}
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if opts != nil && opts.BusyTimeout < 0 {
		return nil, fmt.Errorf("sqlitefile: negative BusyTimeout %v", opts.BusyTimeout)
	}
	// Create the file ourselves, readable by its owner only (claims,
	// history and job output are in it); SQLite gives its -wal and -shm
	// files the database file's mode. An existing file keeps its mode and
	// is left to SQLite: one this process may not read or write then
	// fails at Init with the reason sqlitebackend adds, in the words
	// OpenExisting's Init gives for the same file.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if _, serr := os.Stat(path); !errors.Is(serr, fs.ErrNotExist) {
			err = nil // there: SQLite's
		} else {
			// A symbolic link to a file yet to be made (O_EXCL does
			// not follow it): made through the link.
			f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sqlitefile: %w", err)
	}
	if f != nil {
		f.Close()
	}
	return open(path, opts, func(path string, busyMs int64) string {
		// The backend checkpoints the WAL itself, off the writers' turn
		// (sqlitebackend.Options.Checkpoints).
		return DSN(path, busyMs) + "&_pragma=" + url.QueryEscape("wal_autocheckpoint(0)")
	}, true)
}

// OpenExisting is Open for a reader that must change nothing in the file:
// the file must already exist (an error wrapping fs.ErrNotExist
// otherwise), and the connection sets busy_timeout only, so the file
// keeps its journal mode (Open's journal_mode=WAL rewrites the header of
// a database in another mode, and of an empty file makes a database).
// Writes through the backend still work, in the file's own journal mode;
// the caller is the one that does not write (a read-only command checks
// the tables exist before Init, which then creates nothing).
func OpenExisting(path string, opts *sqlitebackend.Options) (*sqlitebackend.Backend, error) {
	if path == "" {
		return nil, errors.New("sqlitefile: empty path")
	}
	if path == ":memory:" {
		return nil, errors.New("sqlitefile: \":memory:\" is not a file; use sqlitebackend.New with a single-connection *sql.DB")
	}
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("sqlitefile: %w", err)
	}
	return open(path, opts, existingDSN, false)
}

// open opens the file at path, which exists, with the DSN dsn makes;
// checkpoints sets Options.Checkpoints, for a DSN that turns SQLite's own
// off.
func open(path string, opts *sqlitebackend.Options, dsn func(string, int64) string, checkpoints bool) (*sqlitebackend.Backend, error) {
	var o sqlitebackend.Options
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout < 0 {
		return nil, fmt.Errorf("sqlitefile: negative BusyTimeout %v", o.BusyTimeout)
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = sqlitebackend.DefaultBusyTimeout
	}
	o.CloseDB = true
	// The DSN's _txlock=immediate and busy_timeout are the driver's own
	// BEGIN IMMEDIATE and busy timeout, so the backend keeps its
	// statements prepared on the pool (TestDriverTransactionsLock checks
	// that they take the write lock).
	o.DriverLocks = true
	o.Checkpoints = checkpoints
	if o.File == "" {
		o.File = path // the check for a file replaced under the process
	}
	// mode=rw: a connection the pool opens later never creates the file.
	// The file exists now; if it is deleted under the process, a new
	// connection fails (SQLITE_CANTOPEN) instead of making an empty
	// database with SQLite's default mode (0644) at the path, and the
	// file guard reports the file deleted, not replaced.
	db, err := sql.Open(DriverName, dsn(path, o.BusyTimeout.Milliseconds())+"&mode=rw")
	if err != nil {
		return nil, fmt.Errorf("sqlitefile: %w", err)
	}
	// Keep every connection the pool opens: database/sql closes idle
	// connections beyond MaxIdleConns (2 by default), and SQLite's unix VFS
	// can deadlock when connections to one file are opened and closed
	// concurrently in one process (a lock-order inversion between its
	// global mutex and the file's; seen here with three schedulers on one
	// file). The bound keeps a burst of claims from opening a connection
	// per slot in flight; writers take turns on the file's lock anyway.
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	b, err := sqlitebackend.New(db, &o)
	if err != nil {
		db.Close()
		return nil, err
	}
	return b, nil
}

// checkPath refuses, with a clear error, what SQLite would only report
// at the first statement as "unable to open database file": a path that
// names a directory, and a parent that is missing or not a directory.
func checkPath(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("sqlitefile: %s is a directory, not a database file", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("sqlitefile: the directory of %s does not exist (create it first): %w", path, err)
	case err != nil:
		return fmt.Errorf("sqlitefile: checking the directory of %s: %w", path, err)
	case !st.IsDir():
		return fmt.Errorf("sqlitefile: %s is not a directory, so %s cannot be created in it", dir, path)
	}
	return nil
}

// DSN returns the modernc.org/sqlite data source name Open uses for path:
// the PRAGMAs busy_timeout (busyMs milliseconds), journal_mode=WAL and
// synchronous=NORMAL on every connection, and BEGIN IMMEDIATE for
// transactions.
func DSN(path string, busyMs int64) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyMs))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath(), RawQuery: q.Encode()}
	return u.String()
}

// existingDSN is DSN without the PRAGMAs that write to the file
// (journal_mode), for OpenExisting.
func existingDSN(path string, busyMs int64) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyMs))
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath(), RawQuery: q.Encode()}
	return u.String()
}

// maxConns bounds the connections of a backend's pool, all kept open.
const maxConns = 16
