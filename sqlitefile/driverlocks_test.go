package sqlitefile_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anarchon/anarchon/sqlitebackend"
	"github.com/anarchon/anarchon/sqlitefile"
)

// Open sets sqlitebackend.Options.DriverLocks, so the backend's
// transactions are database/sql's own, begun by the driver: they must
// take the database's write lock as they begin, as BEGIN IMMEDIATE does
// (the DSN's _txlock=immediate). While one is open, and before it has
// written anything, another connection's BEGIN IMMEDIATE without a busy
// timeout is refused with SQLITE_BUSY; once it has ended, it succeeds.
func TestDriverTransactionsLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	ctx := t.Context()
	be := openPath(t, path, 1)[0]
	if err := be.Init(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open(sqlitefile.DriverName, "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	oc, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()

	tx, err := be.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = oc.ExecContext(ctx, "BEGIN IMMEDIATE")
	if err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") {
		t.Errorf("BEGIN IMMEDIATE beside an open transaction of the backend's pool: %v, want SQLITE_BUSY", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("BEGIN IMMEDIATE after the transaction ended: %v", err)
	}
	if _, err := oc.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
}

// Init's schema check is a write transaction (CREATE … IF NOT EXISTS,
// which changes nothing in a database that has the tables), so a backend
// that only reads after Init, as the daemon's history and status do,
// still makes the writers' lock file beside the database
// (sqlitebackend's writerQueue.crossLock; cmd/anarchon's README says so).
func TestInitMakesWritersLockFile(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	// A database with the tables, made by a backend that is then closed
	// (its last connection folds the WAL into the file), copied to a path
	// no backend of this process has opened: the writers' queue, and its
	// lock file, are one per path and process.
	made := filepath.Join(dir, "made.db")
	b, err := sqlitefile.Open(made, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(made)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	lock := path + sqlitebackend.LockFileSuffix
	ro, err := sqlitefile.OpenExisting(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close(ctx)
	var tables int
	if err := ro.DB().QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'anarchon_%'").Scan(&tables); err != nil || tables == 0 {
		t.Fatalf("the copy has %d anarchon tables (%v), want them all", tables, err)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Fatalf("%s exists before Init", lock)
	}
	if err := ro.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("after Init of a database that has the tables: %v, want the lock file", err)
	}
}
