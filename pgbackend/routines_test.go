package pgbackend_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
	"github.com/anarchon/anarchon/pgbackend"
	"github.com/anarchon/anarchon/sqlbackend"
	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// plainBase opens the SQL base on schema with the PostgreSQL dialect but
// without the stored routines: every lease operation is a transaction of
// plain statements, as in a version of anarchon without them.
func plainBase(t testing.TB, schema string) *sqlbackend.SQLBackend {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, withParam(t, serverURL(t), "pool_max_conns", "4"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS "`+schema+`"`); err != nil && !pgbackend.IsAlreadyCreated(err) {
		t.Fatal(err)
	}
	channel := schema + "." + sqlbackend.DefaultPrefix + "runs"
	notify := func(ev anarchon.RunEvent) (string, []any) {
		// pgbackend's payload: "<kind> <slot> <job>".
		p := strconv.Itoa(int(ev.Kind)) + " " + strconv.FormatInt(ev.Slot, 10) + " " + ev.Job
		return "SELECT 1 FROM pg_notify(?, ?)", []any{channel, p}
	}
	b, err := sqlbackend.New(sqlbackend.Config{Name: "postgres", Dialect: pgbackend.Dialect, Conn: pgbackend.Pool(pool), Schema: schema, Notify: notify})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConformanceMixed runs the suite with the first backend deciding by
// plain transactions and the others by the stored routines, all on one
// schema: the two paths must agree, and must serialise with each other
// (a rolling deploy from a version without routines).
func TestConformanceMixed(t *testing.T) {
	serverURL(t)
	if testing.Short() {
		t.Skip("the pool run covers the routines in -short mode")
	}
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			schema := freshSchema(t)
			out := []anarchon.Backend{plainBase(t, schema)}
			for _, b := range open(t, n-1, 4, schema) {
				out = append(out, b)
			}
			return out
		},
		Lease: 300 * time.Millisecond,
	})
}

// TestRoutinesCreated checks that Init creates the versioned stored
// functions in the configured schema, and that a second Init (another
// instance) replaces them without error.
func TestRoutinesCreated(t *testing.T) {
	schema := freshSchema(t)
	bs := open(t, 2, 2, schema)
	ctx := t.Context()
	for _, b := range bs {
		if err := b.Init(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	err := bs[0].Pool().QueryRow(ctx, `SELECT count(*) FROM pg_proc p JOIN pg_namespace s ON s.oid = p.pronamespace
WHERE s.nspname = $1 AND p.proname LIKE 'anarchon\_%\_v4'`, schema).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Errorf("%d anarchon functions in schema %s, want 5", n, schema)
	}
}

// BenchmarkFinishResult times FinishResult (one call of a stored
// function) against Finish followed by SaveResult (two transactions) on
// the same pool in the same run, alternating them, each after a won lease
// claim of its own slot, and reports the ratio (one/two).
func BenchmarkFinishResult(b *testing.B) {
	sqlbackendtest.FinishResult(b, open(b, 1, 2, freshSchema(b))[0])
}
