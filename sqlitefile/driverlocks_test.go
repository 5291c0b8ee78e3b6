package sqlitefile_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

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
	be, err := sqlitefile.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close(ctx) })
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
