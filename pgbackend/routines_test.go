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

// TestConformanceMixed runs the suite with the backends deciding in turn
// by plain transactions (handles 0, 2, …) and by the stored routines
// (handles 1, 3, …), all on one schema: the two paths must agree, and
// must serialise with each other (a rolling deploy from a version without
// routines). Each answer the suite asks of one handle (the early claim of
// handle 0, the first claim after a pause on handle 2) is thus checked on
// the plain transaction here and on the routine in TestConformance.
func TestConformanceMixed(t *testing.T) {
	serverURL(t)
	if testing.Short() {
		t.Skip("the pool run covers the routines in -short mode")
	}
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			schema := freshSchema(t)
			routines := open(t, n/2, 4, schema)
			out := make([]anarchon.Backend, n)
			for i := range out {
				if i%2 == 0 {
					out[i] = plainBase(t, schema)
				} else {
					out[i] = routines[i/2]
				}
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
WHERE s.nspname = $1 AND p.proname LIKE 'anarchon\_%\`+pgbackend.RoutineVersion+`'`, schema).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 11 { // routines.go's routineNames
		t.Errorf("%d anarchon functions in schema %s, want 11", n, schema)
	}
}

// BenchmarkFinishResult times FinishResult (one call of a stored
// function) against Finish followed by SaveResult (two transactions) on
// the same pool in the same run, alternating them, each after a won lease
// claim of its own slot, and reports the ratio (one/two).
func BenchmarkFinishResult(b *testing.B) {
	sqlbackendtest.FinishResult(b, open(b, 1, 2, freshSchema(b))[0])
}

// TestPlainClaimClockAfterLock checks that the lease claim's transaction
// (the SQL base without routines) judges by the server's clock as read
// after it got the job's lock, not before it waited for it: PostgreSQL
// computes a SELECT's columns before FOR UPDATE locks the row, and keeps
// them when the holder only locked it, so the clock must not be read in
// the locking statement itself.
func TestPlainClaimClockAfterLock(t *testing.T) {
	ctx := t.Context()
	schema := freshSchema(t)
	b := plainBase(t, schema)
	const job = "clock-after-lock"
	if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: job, HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+b.Qualify("jobs")+` WHERE job = $1 FOR UPDATE`, job); err != nil {
		t.Fatal(err)
	}
	start, err := b.ServerTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const lease = time.Minute
	type result struct {
		out anarchon.ClaimOutcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := b.Runs().Claim(ctx, anarchon.RunClaim{
			ClaimInput: anarchon.ClaimInput{Job: job, Slot: start.Add(-time.Second).UnixMilli(), Token: "t", InstanceID: "i"},
			Lease:      lease, AllowOverlap: true,
		})
		done <- result{out, err}
	}()
	// Wait until the claim waits for the lock, then until the server's
	// clock has moved on past that moment, then let it go.
	for waiting := 0; waiting == 0; {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`, schema).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	seen, err := b.ServerTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	released := seen
	for !released.After(seen) {
		if released, err = b.ServerTime(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.out.Kind != anarchon.OutcomeWon {
		t.Fatalf("lease claim = %+v, %v", r.out, r.err)
	}
	if min := released.Add(lease); r.out.LeaseUntil.Before(min) {
		t.Errorf("LeaseUntil %v is before %v (the clock once the lock was free, plus the lease): the claim read the clock before it waited for the lock",
			r.out.LeaseUntil.Format(time.RFC3339Nano), min.Format(time.RFC3339Nano))
	}
}

// TestClaimRoundTrips counts the statements of each kind of claim (the
// package doc's Performance): a won plain claim is its INSERT alone, any
// other answer one read more; a lease claim is one call of the stored
// function.
func TestClaimRoundTrips(t *testing.T) {
	schema := freshSchema(t)
	pool, err := pgxpool.New(t.Context(), withParam(t, serverURL(t), "pool_max_conns", "2"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	c := sqlbackendtest.Count(pgbackend.Pool(pool))
	b, err := pgbackend.NewFromConn(c, &pgbackend.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	sqlbackendtest.ClaimRoundTrips(t, b, c, sqlbackendtest.ClaimStatements{
		Won: 1, Lost: 2, Early: 2, Trimmed: 2, PausedLoser: 2,
		LeaseWon: 1, LeaseRunning: 1,
	})
}

// TestBatchRoundTrips counts the statements of claim batches: one call of
// a stored function per batch, whatever its size.
func TestBatchRoundTrips(t *testing.T) {
	schema := freshSchema(t)
	pool, err := pgxpool.New(t.Context(), withParam(t, serverURL(t), "pool_max_conns", "2"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	c := sqlbackendtest.Count(pgbackend.Pool(pool))
	b, err := pgbackend.NewFromConn(c, &pgbackend.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	one := func(int) int64 { return 1 }
	sqlbackendtest.BatchRoundTrips(t, b, c, sqlbackendtest.BatchStatements{
		Won: one, Lost: one, LeaseWon: one, LeaseRunning: one,
		Results: one, Heartbeats: one, Finishes: one,
	})
}
