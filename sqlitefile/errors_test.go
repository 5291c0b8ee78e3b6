package sqlitefile_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlitebackend"
	"github.com/anarchon/anarchon/sqlitefile"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// TestErrorClasses: errors of the SQLite driver are marked
// anarchon.Permanent when a retry cannot fix them (a dropped table, bad
// input, a closed backend), and not when it may (another writer holds the
// lock, a cancelled context).
func TestErrorClasses(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "anarchon.db")
	b, err := sqlitefile.Open(path, &sqlitebackend.Options{BusyTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	job := "classes"
	if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: job, HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, permanent bool) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", what)
			return
		}
		if anarchon.IsPermanent(err) != permanent {
			t.Errorf("%s: %v: permanent %v, want %v", what, err, anarchon.IsPermanent(err), permanent)
		}
	}
	in := anarchon.ClaimInput{Job: job, Slot: 1000, Token: "t", InstanceID: "i"}
	_, err = b.Claim(ctx, anarchon.ClaimInput{Job: "", Slot: 1000, Token: "t"})
	check("Claim with an empty job name", err, true)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = b.Claim(cancelled, in)
	check("Claim on a cancelled context", err, false)

	// Another connection holds the write lock: SQLITE_BUSY after the 1ms
	// busy timeout, which a retry may get past.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	_, err = b.Claim(ctx, in)
	check("Claim while another connection writes", err, false)
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	for _, table := range []string{"results", "runs"} {
		if _, err := db.ExecContext(ctx, `DROP TABLE "anarchon_`+table+`"`); err != nil {
			t.Fatal(err)
		}
	}
	err = b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: anarchon.StoredResult{Slot: 1000, Token: "t", Status: anarchon.StatusSuccess}, HistorySize: 10})
	check("SaveResult after the results table was dropped", err, true)
	_, err = b.Claim(ctx, in)
	check("Claim after the runs table was dropped", err, true)
	_, err = b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: in, Lease: time.Minute})
	check("RunStore.Claim after the runs table was dropped", err, true)
	_, err = b.History(ctx, job, 0)
	check("History after the tables were dropped", err, true)

	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = b.Claim(ctx, in)
	check("Claim after Close", err, true)
}

func TestIsPermanentCodes(t *testing.T) {
	for code, want := range map[int]bool{
		sqlite3.SQLITE_ERROR: true, sqlite3.SQLITE_CONSTRAINT: true, sqlite3.SQLITE_CONSTRAINT_UNIQUE: true,
		sqlite3.SQLITE_READONLY: true, sqlite3.SQLITE_CORRUPT: true, sqlite3.SQLITE_NOTADB: true, sqlite3.SQLITE_MISMATCH: true,
		sqlite3.SQLITE_BUSY: false, sqlite3.SQLITE_BUSY_SNAPSHOT: false, sqlite3.SQLITE_LOCKED: false, sqlite3.SQLITE_IOERR: false,
		sqlite3.SQLITE_FULL: false, sqlite3.SQLITE_NOMEM: false, sqlite3.SQLITE_INTERRUPT: false, sqlite3.SQLITE_SCHEMA: false,
	} {
		err := fmt.Errorf("wrapped: %w", coded(code))
		if got := sqlitebackend.IsPermanent(err); got != want {
			t.Errorf("IsPermanent(code %d) = %v, want %v", code, got, want)
		}
	}
	if sqlitebackend.IsPermanent(errors.New("no code")) {
		t.Error("an error without a code is permanent")
	}
}

// The driver's error type has the method sqlitebackend.IsPermanent matches.
var _ interface{ Code() int } = (*sqlite.Error)(nil)

type coded int

func (c coded) Error() string { return fmt.Sprintf("sqlite code %d", int(c)) }
func (c coded) Code() int     { return int(c) }
