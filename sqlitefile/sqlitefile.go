package sqlitefile

import (
	"database/sql"
	"errors"
	"fmt"
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
// opts may be nil; opts.CloseDB is forced on.
//
// The connection sets busy_timeout, journal_mode=WAL and
// synchronous=NORMAL (durable across process crashes; a power loss may
// lose the last transactions, never corrupt the file), and opens write
// transactions with BEGIN IMMEDIATE. The file's directory must exist.
//
// Errors: an empty path, a missing directory, or an error opening the
// file. The tables are created by the backend's Init.
func Open(path string, opts *sqlitebackend.Options) (*sqlitebackend.Backend, error) {
	if path == "" {
		return nil, errors.New("sqlitefile: empty path")
	}
	if path == ":memory:" {
		return nil, errors.New("sqlitefile: \":memory:\" is not a file; use sqlitebackend.New with a single-connection *sql.DB")
	}
	if dir := filepath.Dir(path); dir != "" {
		if st, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("sqlitefile: %w", err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("sqlitefile: %s is not a directory", dir)
		}
	}
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
	db, err := sql.Open(DriverName, DSN(path, o.BusyTimeout.Milliseconds()))
	if err != nil {
		return nil, fmt.Errorf("sqlitefile: %w", err)
	}
	b, err := sqlitebackend.New(db, &o)
	if err != nil {
		db.Close()
		return nil, err
	}
	return b, nil
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
