package sqlitefile_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlbackend"
	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
	"github.com/anarchon/anarchon/sqlitebackend"
	"github.com/anarchon/anarchon/sqlitefile"
)

// countedBackend opens a backend on a new database file through a
// statement counter.
func countedBackend(t *testing.T) (*sqlitebackend.Backend, *sqlbackendtest.Counter) {
	t.Helper()
	c := sqlbackendtest.Count(fileConn(t))
	b, err := sqlitebackend.NewFromConn(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}

// fileConn opens a new database file as the backend's Conn, closed when
// t ends.
func fileConn(t *testing.T) sqlbackend.DB {
	t.Helper()
	db, err := sql.Open(sqlitefile.DriverName, sqlitefile.DSN(filepath.Join(t.TempDir(), "conn.db"), 10_000))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return sqlbackend.DB{DB: db, Begin: "BEGIN IMMEDIATE"}
}

// TestClaimRoundTrips counts the statements of each kind of claim (the
// package doc's Performance): a won plain claim is its INSERT alone, any
// other answer one read more; a lease claim is one BEGIN IMMEDIATE
// transaction.
func TestClaimRoundTrips(t *testing.T) {
	b, c := countedBackend(t)
	sqlbackendtest.ClaimRoundTrips(t, b, c, sqlbackendtest.ClaimStatements{
		Won: 1, Lost: 2, Early: 2, Trimmed: 2, PausedLoser: 2,
		// BEGIN, lock (read) the job row, read the run row, read the
		// control row, insert, take the fence, COMMIT; BEGIN, job, run,
		// COMMIT.
		LeaseWon: 7, LeaseRunning: 4,
	})
}

// TestBatchRoundTrips counts the statements of claim batches: one BEGIN
// IMMEDIATE transaction per batch (one hold of the write lock), after the
// batch's one read of its slots' rows, which answers the slots already
// held (and, for lease claims, settled) without the transaction. In it,
// the new slots of a plain batch are one INSERT (so a won batch of up to
// 500 slots is 4 statements), and each lease claim runs the statements
// it runs alone; in-process, a statement is no round trip.
func TestBatchRoundTrips(t *testing.T) {
	b, c := countedBackend(t)
	plus := func(c, k int64) func(int) int64 { return func(n int) int64 { return c + k*int64(n) } }
	per := func(k int64) func(int) int64 { return plus(2, k) }
	// A batch first reads the rows of its slots (one SELECT) and decides
	// in the transaction only the slots that row does not answer: a plain
	// claim's slot without a row, a lease claim's slot without a row or
	// whose lease it may take over or renew. A batch of more than one
	// slot reads its first slot's row before (the probe): a batch whose
	// first slot has none skips the read (sqlbackend's preRead).
	held := func(n int) int64 {
		if n == 1 {
			return 1
		}
		return 2
	}
	// A lease claim that is its job's only one in the batch is won with
	// the others like it by one INSERT and one UPDATE of the fences (the
	// batch of 1: read, BEGIN, those two, COMMIT); the larger batches here
	// claim several slots of each of two jobs, and each of those claims
	// runs the 5 statements of a single claim.
	leaseWon := func(n int) int64 {
		if n == 1 {
			return 5
		}
		return 3 + 5*int64(n)
	}
	sqlbackendtest.BatchRoundTrips(t, b, c, sqlbackendtest.BatchStatements{
		Won: func(int) int64 { return 4 }, Lost: held, LeaseWon: leaseWon, LeaseRunning: held,
		Results: per(5), Heartbeats: per(1), Finishes: per(5),
	})
}

// A plain batch larger than one read's share of parameters reads its
// slots' rows in several statements (sqlbackend's heldChunk, 500 slots)
// and answers every claim: 1,200 new slots won, then the same slots under
// other tokens lost in three reads (after the probe of the first slot's
// row) and no write, then won again under their own.
func TestBatchBeyondOneRead(t *testing.T) {
	b, c := countedBackend(t)
	ctx := t.Context()
	const n = 1200
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	batch := func(tok string) []anarchon.ClaimInput {
		in := make([]anarchon.ClaimInput, n)
		for i := range in {
			job := fmt.Sprintf("large-%04d", i)
			in[i] = anarchon.ClaimInput{Job: job, Slot: slot, Token: tok + "-" + job, InstanceID: tok, HistorySize: 10}
		}
		return in
	}
	for _, tc := range []struct {
		what  string
		in    []anarchon.ClaimInput
		won   bool
		reads int64 // statements, when every slot is held
	}{
		{"new", batch("a"), true, 0},
		{"another token's", batch("b"), false, 4},
		{"repeated", batch("a"), true, 4},
	} {
		before := c.N()
		out, err := b.ClaimBatch(ctx, tc.in)
		if err != nil || len(out) != n {
			t.Fatalf("%s: ClaimBatch = %d answers, %v", tc.what, len(out), err)
		}
		for i, a := range out {
			if a.Won != tc.won || a.Err != nil {
				t.Fatalf("%s: claim %d = %+v, want won=%v", tc.what, i, a, tc.won)
			}
		}
		if got := c.N() - before; tc.reads > 0 && got != tc.reads {
			t.Errorf("%s: %d statements, want %d (the probe and the reads)", tc.what, got, tc.reads)
		}
	}
}

// TestBurstBatchRoundTrips counts batches shaped like a burst, one new
// slot of each of 100 jobs: a plain batch is the probe of its first slot's
// row (which finds none, so the batch reads no other), BEGIN, one INSERT
// and COMMIT; a lease batch the probe, BEGIN, one INSERT, one UPDATE of
// the fences and COMMIT; the batch of their results, and the one of their
// finishes, one statement per step in one transaction (7; the statements
// are the same for any number of entries up to 500, TestBatchBeyondOneChunk).
func TestBurstBatchRoundTrips(t *testing.T) {
	b, c := countedBackend(t)
	ctx := t.Context()
	const n = 100
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	jobs := make([]string, n)
	for i := range jobs {
		jobs[i] = fmt.Sprintf("burst-%03d", i)
		if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: jobs[i], HistorySize: 10}); err != nil {
			t.Fatal(err)
		}
	}
	plain := make([]anarchon.ClaimInput, n)
	for i, j := range jobs {
		plain[i] = anarchon.ClaimInput{Job: j, Slot: slot, Token: "p-" + j, InstanceID: "a", HistorySize: 10}
	}
	before := c.N()
	out, err := b.ClaimBatch(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range out {
		if !a.Won || a.Err != nil {
			t.Fatalf("plain claim %d = %+v, want won", i, a)
		}
	}
	if got := c.N() - before; got != 4 {
		t.Errorf("plain burst batch of %d: %d statements, want 4", n, got)
	}
	lease := make([]anarchon.RunClaim, n)
	for i, j := range jobs {
		lease[i] = anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: j, Slot: slot + 1000, Token: "l-" + j, InstanceID: "a", HistorySize: 10},
			Lease: time.Hour, AllowOverlap: true, MaxAttempts: 1}
	}
	rb, ok := anarchon.As[anarchon.RunBatchClaimer](b)
	if !ok {
		t.Fatal("no RunBatchClaimer")
	}
	before = c.N()
	answers, err := rb.ClaimRuns(ctx, lease)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range answers {
		if a.Err != nil || a.Outcome.Kind != anarchon.OutcomeWon || a.Outcome.Fence == 0 {
			t.Fatalf("lease claim %d = %+v, want won with a fence", i, a)
		}
	}
	if got := c.N() - before; got != 5 {
		t.Errorf("lease burst batch of %d: %d statements, want 5", n, got)
	}
	before = c.N()
	errs, err := b.SaveResults(ctx, successes(plain))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if e != nil {
			t.Fatalf("result %d: %v", i, e)
		}
	}
	// BEGIN, the jobs' rows, the results, the plain runs settled, the
	// two trims, COMMIT.
	if got := c.N() - before; got != 7 {
		t.Errorf("burst batch of %d results: %d statements, want 7", n, got)
	}
	fb, ok := anarchon.As[anarchon.FinishBatcher](b)
	if !ok {
		t.Fatal("no FinishBatcher")
	}
	before = c.N()
	held, err := fb.FinishResults(ctx, successes(claimsOf(lease)))
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range held {
		if !h.Held || h.Err != nil {
			t.Fatalf("finish %d = %+v, want held", i, h)
		}
	}
	// BEGIN, the jobs' rows, the runs finished, the results, the two
	// trims, COMMIT.
	if got := c.N() - before; got != 7 {
		t.Errorf("burst batch of %d finishes: %d statements, want 7", n, got)
	}
}

// TestBatchBeyondOneChunk: the results, and the finishes, of a batch of
// 1,200 jobs with one entry each go in chunks of 500 (sqlbackend's
// heldChunk), each chunk one statement per step: 2 + 3 × 5 statements,
// and every entry stored.
func TestBatchBeyondOneChunk(t *testing.T) {
	b, c := countedBackend(t)
	ctx := t.Context()
	const n = 1200
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	plain := make([]anarchon.ClaimInput, n)
	lease := make([]anarchon.RunClaim, n)
	for i := range n {
		job := fmt.Sprintf("chunks-%04d", i)
		plain[i] = anarchon.ClaimInput{Job: job, Slot: slot, Token: "p-" + job, InstanceID: "a"}
		lease[i] = anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: slot + 1000, Token: "l-" + job, InstanceID: "a"},
			Lease: time.Hour, AllowOverlap: true, MaxAttempts: 1}
	}
	if _, err := b.ClaimBatch(ctx, plain); err != nil {
		t.Fatal(err)
	}
	before := c.N()
	errs, err := b.SaveResults(ctx, successes(plain))
	if err != nil || slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		t.Fatalf("SaveResults: %v, %v", errs, err)
	}
	if got := c.N() - before; got != 17 {
		t.Errorf("%d results: %d statements, want 17", n, got)
	}
	rb := b.Runs().(anarchon.RunBatchClaimer)
	if _, err := rb.ClaimRuns(ctx, lease); err != nil {
		t.Fatal(err)
	}
	before = c.N()
	held, err := b.Runs().(anarchon.FinishBatcher).FinishResults(ctx, successes(claimsOf(lease)))
	if err != nil || slices.ContainsFunc(held, func(h anarchon.HeldAnswer) bool { return !h.Held || h.Err != nil }) {
		t.Fatalf("FinishResults: %v", err)
	}
	if got := c.N() - before; got != 17 {
		t.Errorf("%d finishes: %d statements, want 17", n, got)
	}
	for i := range n {
		recs, err := b.History(ctx, plain[i].Job, 0)
		if err != nil || len(recs) != 2 || recs[0].Token != lease[i].Token || recs[1].Token != plain[i].Token ||
			recs[0].Status != anarchon.StatusSuccess || recs[1].Status != anarchon.StatusSuccess {
			t.Fatalf("History(%s) = %+v, %v; want the finished lease run over the plain one", plain[i].Job, recs, err)
		}
	}
}

// successes returns a success result for each claim of in, under its
// token, with the default history size.
func successes(in []anarchon.ClaimInput) []anarchon.SaveResultInput {
	out := make([]anarchon.SaveResultInput, len(in))
	for i, c := range in {
		out[i] = anarchon.SaveResultInput{Job: c.Job, Result: anarchon.StoredResult{
			Slot: c.Slot, Token: c.Token, InstanceID: c.InstanceID, Attempt: 1, Status: anarchon.StatusSuccess}}
	}
	return out
}
