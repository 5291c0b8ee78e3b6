package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlitebackend"
	"github.com/anarchon/anarchon/sqlitefile"
)

func init() { openers["sqlite"] = openSQLite }

// openSQLite opens "sqlite:PATH" (also "sqlite://PATH" and
// "sqlite:///abs/path") with the pure-Go driver; "prefix" sets the table
// prefix. The file is created if absent; its directory must exist. With
// mustExist (history, status) a missing file is no_anarchon_data, so that
// a mistyped path never creates one, and the file is opened as it is,
// changing nothing in it: not even its journal mode. openStoreMode has
// checked the URL's parameters before: a URL that cannot be used is a
// usage error whether or not its file exists.
func openSQLite(u *url.URL, raw, prefix string, mustExist bool) (anarchon.Backend, error) {
	path, err := sqlitePath(raw)
	if err != nil {
		return nil, &StoreURLError{Code: StoreBadURL, Reason: fmt.Sprintf("does not parse: %v", err), Err: err}
	}
	if path == "" {
		return nil, &StoreURLError{Code: StoreBadURL, Reason: "no file path: want sqlite:PATH, e.g. sqlite:./anarchon.db"}
	}
	open := sqlitefile.Open
	if mustExist {
		if err := noSQLiteFile(path); err != nil {
			return nil, err
		}
		open = sqlitefile.OpenExisting
	}
	b, err := open(path, &sqlitebackend.Options{Prefix: prefix, Logger: storeLog(mustExist)})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return b, nil
}

// noSQLiteFile is the error of a command that never creates a store for
// an SQLite file path that does not exist (code no_anarchon_data), nil
// when it exists: a mistyped path must not become a new, empty store that
// no replica reads.
func noSQLiteFile(path string) error {
	if _, err := os.Stat(path); err != nil {
		return &StoreURLError{Code: StoreNoData, Reason: fmt.Sprintf("no store at %s: %v (only \"run\", \"run-now\" and \"backfill\" create one)", path, err), Err: err}
	}
	return nil
}

// sqliteMissing returns the file path of an "sqlite:" store URL whose
// file does not exist, and whether it is such a URL: false for any other
// store, a file that exists, and a path that does not parse (opening it
// says why).
func sqliteMissing(raw string) (string, bool) {
	if !strings.HasPrefix(strings.ToLower(raw), "sqlite:") {
		return "", false
	}
	path, err := sqlitePath(raw)
	if err != nil || path == "" {
		return "", false
	}
	_, err = os.Lstat(path)
	return path, errors.Is(err, fs.ErrNotExist)
}

// sqliteUndo returns, for an "sqlite:" store whose file does not exist
// yet, a function that removes the file (and SQLite's -wal, -shm and
// -journal files, and the writers' lock file) again, for a command that opened the store and then
// refused to do anything with it; for any other store, or a file that
// exists, a function that does nothing. Call it after the store is
// closed. The file is kept if it holds anarchon's tables by then: another
// process (a daemon started at the same moment) initialised it.
func sqliteUndo(raw string) func() {
	path, missing := sqliteMissing(raw)
	if !missing {
		return func() {}
	}
	return func() {
		b, err := openStoreMode(raw, true)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = storeInitialised(ctx, b, raw)
		_ = b.Close(ctx)
		var se *StoreURLError
		if !errors.As(err, &se) || se.Code != StoreNoData {
			return
		}
		for _, suffix := range []string{"", "-wal", "-shm", "-journal", sqlitebackend.LockFileSuffix} {
			_ = os.Remove(path + suffix)
		}
	}
}

// sqliteAccessError returns, when err is the failure of the SQLite store
// raw names for lack of a permission (the file system's refusal, or
// SQLite's "unable to open database file" or "attempt to write a
// readonly database"), the store's error with the file system's reason
// alone (sqlitebackend.AccessReason): every command says the same for the
// same file, whichever step failed (run's open, start or first write, a
// read-only command's check) and whatever SQLite said there, which names
// neither the file nor the cause. SQLite's error stays in Err. nil for
// any other store or error, or when no permission is denied.
func sqliteAccessError(err error, raw string) *StoreURLError {
	var c interface{ Code() int }
	coded := errors.As(err, &c) && (c.Code()&0xff == 14 || c.Code()&0xff == 8) // SQLITE_CANTOPEN, SQLITE_READONLY
	if err == nil || !strings.HasPrefix(strings.ToLower(raw), "sqlite:") || (!coded && !errors.Is(err, fs.ErrPermission)) {
		return nil
	}
	path, perr := sqlitePath(raw)
	if perr != nil || path == "" {
		return nil
	}
	reason := sqlitebackend.AccessReason(path)
	if reason == nil {
		return nil
	}
	return &StoreURLError{URL: redact(raw), Code: StoreOpenFailed, Reason: reason.Error(), Err: err}
}

// sqlitePath is the file path of an "sqlite:" URL: after "sqlite:" (and
// "//"), before the query, unescaped. A "%" not followed by two hex
// digits is an error (url.PathUnescape's): the path is not a URL path,
// and using it as it is would open another file than the one meant.
func sqlitePath(raw string) (string, error) {
	path := strings.TrimPrefix(raw[len("sqlite:"):], "//")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	return url.PathUnescape(path)
}
