package pgbackend_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
	"github.com/anarchon/anarchon/pgbackend"
	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
)

const envURL = "ANARCHON_TEST_POSTGRES_URL"

// serverURL returns the test server's URL, or skips (fails under CI=true)
// without one.
func serverURL(t testing.TB) string {
	t.Helper()
	return sqlbackendtest.ServerEnv(t, envURL, "scripts/services/postgres.sh")
}

// withParam adds a query parameter to a URL connection string.
func withParam(t testing.TB, raw, key, val string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%s is not a URL", envURL)
	}
	q := u.Query()
	q.Set(key, val)
	u.RawQuery = q.Encode()
	return u.String()
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// freshSchema returns a new schema name, dropped when t ends.
func freshSchema(t testing.TB) string {
	t.Helper()
	schema := "anarchon_t_" + randHex(6)
	url := serverURL(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer pool.Close()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("cleanup: drop schema: %v", err)
		}
	})
	return schema
}

// open opens n backends, each with its own pool of at most conns
// connections, on schema.
func open(t testing.TB, n, conns int, schema string) []*pgbackend.Backend {
	t.Helper()
	return openOptions(t, n, conns, pgbackend.Options{Schema: schema})
}

// openOptions opens n backends with opts, each with its own pool of at
// most conns connections.
func openOptions(t testing.TB, n, conns int, opts pgbackend.Options) []*pgbackend.Backend {
	t.Helper()
	u := withParam(t, serverURL(t), "pool_max_conns", itoa(conns))
	bs := make([]*pgbackend.Backend, n)
	for i := range bs {
		b, err := pgbackend.Open(context.Background(), u, &opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(context.Background()) })
		bs[i] = b
	}
	return bs
}

func itoa(n int) string { return strconv.Itoa(n) }

// schemas maps each handle of TestConformance to its schema, for Reopen.
var schemas sync.Map

func TestConformance(t *testing.T) {
	serverURL(t)
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			schema := freshSchema(t)
			var out []anarchon.Backend
			for _, b := range open(t, n, 4, schema) {
				schemas.Store(b, schema)
				out = append(out, b)
			}
			return out
		},
		// Reopen opens a new pool on the old handle's schema.
		Reopen: func(t *testing.T, old anarchon.Backend) anarchon.Backend {
			schema, ok := schemas.Load(old)
			if !ok {
				t.Fatal("Reopen: a handle the test did not open")
			}
			return open(t, 1, 4, schema.(string))[0]
		},
		Lease: 300 * time.Millisecond,
		Break: dropTables,
		// The races: 16 connection pools claim 2,000 contested slots.
		Racers:  16,
		Handles: 16,
		Rounds:  raceRounds(),
	})
}

// raceRounds is how many contested slots the race tests of the server
// backends claim: 2,000, or 300 with -short.
func raceRounds() int {
	if testing.Short() {
		return 300
	}
	return 2000
}

// TestConformanceSQLDB runs the suite on the *sql.DB adapter (pgx's
// database/sql driver).
func TestConformanceSQLDB(t *testing.T) {
	u := serverURL(t)
	if testing.Short() {
		t.Skip("the pool run covers the same in -short mode")
	}
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			schema := freshSchema(t)
			var out []anarchon.Backend
			for range n {
				db, err := sql.Open("pgx", u)
				if err != nil {
					t.Fatal(err)
				}
				db.SetMaxOpenConns(4)
				t.Cleanup(func() { db.Close() })
				b, err := pgbackend.NewFromDB(db, &pgbackend.Options{Schema: schema})
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, b)
			}
			return out
		},
		Lease: 300 * time.Millisecond,
	})
}

// TestConcurrentMigration starts 8 instances on an empty schema at once.
func TestConcurrentMigration(t *testing.T) {
	sqlbackendtest.ConcurrentMigration(t, func(t testing.TB, n int) []anarchon.Backend {
		return sqlbackendtest.Backends(open(t, n, 2, freshSchema(t)))
	})
}

// TestConcurrentMigrationPrefix does the same without a schema, on a fresh
// table prefix in the search path (no CREATE SCHEMA step).
func TestConcurrentMigrationPrefix(t *testing.T) {
	sqlbackendtest.ConcurrentMigration(t, func(t testing.TB, n int) []anarchon.Backend {
		return sqlbackendtest.Backends(openOptions(t, n, 2, pgbackend.Options{Prefix: freshPrefix(t)}))
	})
}

// TestOldSchema checks that Init adds the fence column to a schema made
// before it, with racing instances, in a schema and in the search path.
func TestOldSchema(t *testing.T) {
	t.Run("Schema", func(t *testing.T) {
		sqlbackendtest.OldSchema(t, func(t testing.TB, n int) []anarchon.Backend {
			return sqlbackendtest.Backends(open(t, n, 2, freshSchema(t)))
		})
	})
	t.Run("Prefix", func(t *testing.T) {
		sqlbackendtest.OldSchema(t, func(t testing.TB, n int) []anarchon.Backend {
			return sqlbackendtest.Backends(openOptions(t, n, 2, pgbackend.Options{Prefix: freshPrefix(t)}))
		})
	})
}

// freshPrefix returns a new table prefix, for tables in the search path;
// its tables and functions are dropped when t ends.
func freshPrefix(t testing.TB) string {
	t.Helper()
	prefix := "anarchon_p" + randHex(4) + "_"
	url := serverURL(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer pool.Close()
		for _, tbl := range []string{"jobs", "runs", "results", "instances", "control", "triggers"} {
			if _, err := pool.Exec(ctx, `DROP TABLE IF EXISTS "`+prefix+tbl+`"`); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		rows, err := pool.Query(ctx, `SELECT oid::regprocedure::text FROM pg_proc WHERE left(proname, length($1)) = $1`, prefix)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		fns, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
		for _, fn := range fns {
			if _, err := pool.Exec(ctx, `DROP FUNCTION IF EXISTS `+fn); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	return prefix
}

func oddName() string {
	n := `it's "odd" \ %_ ;-- DROP TABLE x; $1 ? Ωμέγα 日本語 ` + randHex(4)
	for utf8.RuneCountInString(n) < 200 {
		n += "ü"
	}
	return n
}

func TestJobNameRoundTrip(t *testing.T) {
	ctx := t.Context()
	b := open(t, 1, 2, freshSchema(t))[0]
	job := oddName()
	if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: job, HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: job, Slot: 60_000, Token: "t1", InstanceID: "i1"}); err != nil || !ok {
		t.Fatalf("Claim = %v, %v", ok, err)
	}
	if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: anarchon.StoredResult{Slot: 60_000, Token: "t1", InstanceID: "i1", Status: anarchon.StatusSuccess, Output: "ünïcode 'out'"}, HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	out, err := b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: 120_000, Token: "t2", InstanceID: "i1"}, Lease: time.Minute, AllowOverlap: true})
	if err != nil || out.Kind != anarchon.OutcomeWon {
		t.Fatalf("lease Claim = %+v, %v", out, err)
	}
	act, err := b.Runs().Active(ctx, job)
	if err != nil || len(act) != 1 {
		t.Fatalf("Active = %+v, %v", act, err)
	}
	recs, err := b.History(ctx, job, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Job != job || recs[1].Status != anarchon.StatusSuccess || recs[1].Output != "ünïcode 'out'" {
		t.Fatalf("History = %+v", recs)
	}
	if ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: job + "x", Slot: 60_000, Token: "t3", InstanceID: "i2"}); err != nil || !ok {
		t.Fatalf("Claim of another job = %v, %v", ok, err)
	}
}

// TestNotifyWakes checks that a release and a finish on one instance wake
// a watcher on another at once.
func TestNotifyWakes(t *testing.T) {
	ctx := t.Context()
	schema := freshSchema(t)
	bs := open(t, 2, 2, schema)
	watchCtx, cancel := context.WithCancel(ctx)
	events, err := bs[0].WatchRuns(watchCtx)
	if err != nil {
		t.Fatal(err)
	}
	job := oddName()
	claim := func(slot int64, tok string) {
		out, err := bs[1].Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: slot, Token: tok, InstanceID: "b"}, Lease: time.Minute, AllowOverlap: true})
		if err != nil || out.Kind != anarchon.OutcomeWon {
			t.Fatalf("Claim = %+v, %v", out, err)
		}
	}
	want := func(kind anarchon.RunEventKind, slot int64) {
		t.Helper()
		select {
		case ev := <-events:
			if ev.Job != job || ev.Slot != slot || ev.Kind != kind {
				t.Fatalf("event %+v, want kind %d slot %d of %q", ev, kind, slot, job)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no event (kind %d, slot %d) within 5s", kind, slot)
		}
	}
	claim(1000, "r")
	if ok, err := bs[1].Runs().Release(ctx, anarchon.ReleaseInput{Job: job, Slot: 1000, Token: "r"}); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	want(anarchon.RunReleased, 1000)
	claim(2000, "f")
	if ok, err := bs[1].Runs().Finish(ctx, anarchon.FinishInput{Job: job, Slot: 2000, Token: "f", Status: anarchon.StatusSuccess}); err != nil || !ok {
		t.Fatalf("Finish = %v, %v", ok, err)
	}
	want(anarchon.RunFinished, 2000)
	cancel()
	for range events {
	}
}

func TestPasswordNotInErrors(t *testing.T) {
	raw := serverURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cr3t-pa55word"
	u.User = url.UserPassword("anarchon_nobody", secret)
	b, err := pgbackend.Open(t.Context(), u.String()+"&connect_timeout=5", nil)
	if err != nil {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("Open error shows the password: %v", err)
		}
		return
	}
	defer b.Close(context.Background())
	err = b.Init(t.Context())
	if err == nil {
		t.Fatal("Init with a wrong password succeeded")
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("Init error shows the password: %v", err)
	}
	// A connection string that does not parse.
	_, err = pgbackend.Open(t.Context(), "postgres://x:"+secret+"@127.0.0.1:notaport/db", nil)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("bad URL: err = %v", err)
	}
}

func TestClosed(t *testing.T) {
	b := open(t, 1, 1, freshSchema(t))[0]
	if err := b.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err := b.Claim(t.Context(), anarchon.ClaimInput{Job: "j", Slot: 1, Token: "t"})
	if !errors.Is(err, anarchon.ErrClosed) {
		t.Fatalf("Claim after Close: %v, want ErrClosed", err)
	}
}

// dropTables is Harness.Break: it drops the tables under b, as an
// operator's mistake would.
func dropTables(t *testing.T, b anarchon.Backend, job string) {
	schema := b.(interface{ Schema() string }).Schema()
	pool, err := pgxpool.New(t.Context(), serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, table := range []string{"results", "runs", "jobs"} {
		if _, err := pool.Exec(t.Context(), `DROP TABLE "`+schema+`"."anarchon_`+table+`" CASCADE`); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConformanceConn runs the suite on NewFromConn with the two-function
// adapter (here over a pgx pool). Such a backend cannot LISTEN, so the
// suite gets its SQL base, which has no Watcher.
func TestConformanceConn(t *testing.T) {
	u := serverURL(t)
	if testing.Short() {
		t.Skip("the pool run covers the same in -short mode")
	}
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			schema := freshSchema(t)
			var out []anarchon.Backend
			for range n {
				pool, err := pgxpool.New(t.Context(), withParam(t, u, "pool_max_conns", "4"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pool.Close)
				b, err := pgbackend.NewFromConn(pgbackend.Pool(pool), &pgbackend.Options{Schema: schema})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := b.WatchRuns(t.Context()); !errors.Is(err, pgbackend.ErrNoWatch) {
					t.Fatalf("WatchRuns on NewFromConn: %v, want ErrNoWatch", err)
				}
				out = append(out, b.SQLBackend)
			}
			return out
		},
		Lease: 300 * time.Millisecond,
		Break: dropTables,
	})
}
