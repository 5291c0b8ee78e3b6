package sqlitefile_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
	"github.com/anarchon/anarchon/sqlitebackend"
	"github.com/anarchon/anarchon/sqlitefile"
)

// open opens n backends (n separate *sql.DB pools, as n processes would
// have) on one fresh file.
func open(t testing.TB, n int) []*sqlitebackend.Backend {
	t.Helper()
	return openPath(t, filepath.Join(t.TempDir(), "anarchon.db"), n)
}

// paths maps each handle the conformance test opened to its file, so
// that Reopen opens the same file again.
var paths sync.Map

func openPath(t testing.TB, path string, n int) []*sqlitebackend.Backend {
	t.Helper()
	bs := make([]*sqlitebackend.Backend, n)
	for i := range bs {
		b, err := sqlitefile.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(context.Background()) })
		paths.Store(b, path)
		bs[i] = b
	}
	return bs
}

func TestConformance(t *testing.T) {
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			var out []anarchon.Backend
			for _, b := range open(t, n) {
				out = append(out, b)
			}
			return out
		},
		Lease: 300 * time.Millisecond,
		// Reopen opens the old handle's file again, as a restarted process.
		Reopen: func(t *testing.T, old anarchon.Backend) anarchon.Backend {
			path, ok := paths.Load(old)
			if !ok {
				t.Fatal("Reopen: a handle the test did not open")
			}
			return openPath(t, path.(string), 1)[0]
		},
		// Break drops the tables under the handle.
		Break: func(t *testing.T, b anarchon.Backend, job string) {
			for _, table := range []string{"results", "runs", "jobs"} {
				if _, err := b.(*sqlitebackend.Backend).DB().ExecContext(t.Context(), `DROP TABLE "anarchon_`+table+`"`); err != nil {
					t.Fatal(err)
				}
			}
		},
	})
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// oddName is a 200-character name with quotes, a backslash, SQL comment
// and LIKE characters and non-ASCII letters.
func oddName() string {
	n := `it's "odd" \ %_ ;-- DROP TABLE x; Ωμέγα 日本語 ` + randHex(4)
	for utf8.RuneCountInString(n) < 200 {
		n += "ü"
	}
	return n
}

func TestJobNameRoundTrip(t *testing.T) {
	ctx := t.Context()
	b := open(t, 1)[0]
	job := oddName()
	if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: job, HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	in := anarchon.ClaimInput{Job: job, Slot: 60_000, Token: "t1", InstanceID: "i1", HistorySize: 10}
	if ok, err := b.Claim(ctx, in); err != nil || !ok {
		t.Fatalf("Claim = %v, %v", ok, err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: anarchon.StoredResult{Slot: 60_000, Token: "t1", InstanceID: "i1", Status: anarchon.StatusSuccess, StartedAt: now, FinishedAt: now}, HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	rs := b.Runs()
	out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: 120_000, Token: "t2", InstanceID: "i1"}, Lease: time.Minute, AllowOverlap: true})
	if err != nil || out.Kind != anarchon.OutcomeWon {
		t.Fatalf("lease Claim = %+v, %v", out, err)
	}
	act, err := rs.Active(ctx, job)
	if err != nil || len(act) != 1 || act[0].Slot != 120_000 {
		t.Fatalf("Active = %+v, %v", act, err)
	}
	recs, err := b.History(ctx, job, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Job != job || recs[1].Status != anarchon.StatusSuccess || recs[0].Status != anarchon.StatusRunning {
		t.Fatalf("History = %+v", recs)
	}
	// Names differing only in a trailing character are different jobs.
	if ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: job + "x", Slot: 60_000, Token: "t3", InstanceID: "i2"}); err != nil || !ok {
		t.Fatalf("Claim of another job = %v, %v", ok, err)
	}
}

func TestTrimNeverReopens(t *testing.T) {
	ctx := t.Context()
	b := open(t, 1)[0]
	const job = "trim"
	for i := range int64(5) {
		in := anarchon.ClaimInput{Job: job, Slot: i * 1000, Token: fmt.Sprint("t", i), InstanceID: "a"}
		if ok, err := b.Claim(ctx, in); err != nil || !ok {
			t.Fatalf("Claim %d = %v, %v", i, ok, err)
		}
		if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: anarchon.StoredResult{Slot: in.Slot, Token: in.Token, InstanceID: "a", Status: anarchon.StatusSuccess}, HistorySize: 2}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := b.History(ctx, job, 0)
	if err != nil || len(recs) != 2 {
		t.Fatalf("History = %d records, %v; want 2", len(recs), err)
	}
	for i := range int64(3) {
		ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: job, Slot: i * 1000, Token: "late", InstanceID: "b"})
		if err != nil || ok {
			t.Fatalf("Claim of trimmed slot %d = %v, %v; want false", i, ok, err)
		}
		out, err := b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: i * 1000, Token: "late", InstanceID: "b"}, Lease: time.Second})
		if err != nil || out.Kind != anarchon.OutcomeDone {
			t.Fatalf("lease Claim of trimmed slot %d = %+v, %v; want done", i, out, err)
		}
	}
}

// TestConcurrentMigration starts 8 instances on an empty file at once:
// Init and PrepareJob must succeed for all.
func TestConcurrentMigration(t *testing.T) {
	sqlbackendtest.ConcurrentMigration(t, func(t testing.TB, n int) []anarchon.Backend {
		return sqlbackendtest.Backends(open(t, n))
	})
}

// TestOldSchema checks that Init adds the fence column to a database made
// before it, with racing instances.
func TestOldSchema(t *testing.T) {
	sqlbackendtest.OldSchema(t, func(t testing.TB, n int) []anarchon.Backend {
		return sqlbackendtest.Backends(open(t, n))
	})
}

// raceStep is the pace of the multi-process race: slot k is claimed by
// every process at start + k·raceStep.
const raceStep = 3 * time.Millisecond

// openOne is the race's sqlbackendtest.Opener: one backend on the file at
// path.
func openOne(t testing.TB, path string) anarchon.Backend { return openPath(t, path, 1)[0] }

// TestMultiProcessRace runs 8 OS processes (this test binary, re-executed)
// claiming the same 2,000 slots of one file; each slot must have exactly
// one winner.
func TestMultiProcessRace(t *testing.T) {
	slots := 2000
	if testing.Short() {
		slots = 300
	}
	sqlbackendtest.MultiProcessRace(t, openOne, sqlbackendtest.Race{
		Procs: 8, Slots: slots, Step: raceStep,
		Arg: filepath.Join(t.TempDir(), "race.db"), Child: "TestRaceChild",
	})
}

// TestRaceChild is the body of one racing process; it does nothing unless
// run by TestMultiProcessRace.
func TestRaceChild(t *testing.T) { sqlbackendtest.RaceChild(t, openOne) }
