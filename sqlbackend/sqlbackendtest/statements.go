package sqlbackendtest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlbackend"
)

// Counter is a sqlbackend.Conn that counts the statements run through
// the Conn it wraps: each All call, in or out of a transaction, and two
// for each transaction (its BEGIN and its COMMIT or ROLLBACK), so that N
// is the round trips to the server of a driver that sends each as one.
type Counter struct {
	conn sqlbackend.Conn
	n    atomic.Int64
}

// Count returns a Counter over conn, at zero.
func Count(conn sqlbackend.Conn) *Counter { return &Counter{conn: conn} }

// N returns the statements counted so far.
func (c *Counter) N() int64 { return c.n.Load() }

// All counts one statement and runs it on the wrapped Conn.
func (c *Counter) All(ctx context.Context, query string, args ...any) ([][]any, error) {
	c.n.Add(1)
	return c.conn.All(ctx, query, args...)
}

// Transaction counts two statements, and each statement of fn, and runs
// fn in a transaction of the wrapped Conn.
func (c *Counter) Transaction(ctx context.Context, fn func(tx sqlbackend.Querier) error) error {
	c.n.Add(2)
	return c.conn.Transaction(ctx, func(tx sqlbackend.Querier) error {
		return fn(sqlbackend.QuerierFunc(func(ctx context.Context, q string, args ...any) ([][]any, error) {
			c.n.Add(1)
			return tx.All(ctx, q, args...)
		}))
	})
}

// ClaimStatements is how many statements ([Counter]) one claim runs, by
// its answer.
type ClaimStatements struct {
	// Plain claims (anarchon.Backend.Claim): won; lost to another token;
	// refused as early; lost below the trimming watermark; lost on a slot
	// another instance settled as paused.
	Won, Lost, Early, Trimmed, PausedLoser int64
	// Lease claims (anarchon.RunStore.Claim, overlap allowed): won on a
	// new slot; answered running, held by another.
	LeaseWon, LeaseRunning int64
}

// ClaimRoundTrips makes each kind of claim of [ClaimStatements] once
// through b, a backend built on c (and, for the paused slot, an
// anarchon.JobControl), and fails t unless each ran the statements want
// says: the round trips each answer costs, which the backends' docs state.
func ClaimRoundTrips(t *testing.T, b anarchon.Backend, c *Counter, want ClaimStatements) {
	ctx := t.Context()
	sc, ok := b.(anarchon.ServerClock)
	if !ok {
		t.Fatalf("%T is not an anarchon.ServerClock", b)
	}
	ctl, ok := anarchon.As[anarchon.JobControl](b)
	if !ok {
		t.Fatalf("%T is not an anarchon.JobControl", b)
	}
	const job, paused = "round-trips", "round-trips-paused"
	for _, j := range []string{job, paused} {
		if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: j, HistorySize: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ctl.SetPaused(ctx, anarchon.PauseInput{Job: paused, Paused: true, By: "test"}); err != nil {
		t.Fatal(err)
	}
	now, err := sc.ServerTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := now.Add(-time.Hour).Truncate(time.Second).UnixMilli()
	in := func(job string, slot int64, tok, inst string) anarchon.ClaimInput {
		return anarchon.ClaimInput{Job: job, Slot: slot, Token: tok, InstanceID: inst}
	}
	// counted runs claim and returns the statements it ran.
	counted := func(claim func() error) int64 {
		t.Helper()
		n := c.N()
		if err := claim(); err != nil {
			t.Fatal(err)
		}
		return c.N() - n
	}
	plain := func(in anarchon.ClaimInput, wantWon bool) func() error {
		return func() error {
			won, err := b.Claim(ctx, in)
			if err == nil && won != wantWon {
				err = errors.New("claim of " + in.Token + ": wrong answer")
			}
			return err
		}
	}
	var got ClaimStatements
	got.Won = counted(plain(in(job, base, "won", "a"), true))
	got.Lost = counted(plain(in(job, base, "lost", "b"), false))
	got.Early = counted(func() error {
		_, err := b.Claim(ctx, in(job, now.Add(time.Hour).UnixMilli(), "early", "b"))
		if errors.Is(err, anarchon.ErrEarly) {
			return nil
		}
		return errors.Join(errors.New("early claim not refused as early"), err)
	})
	// A result saved for a later slot, keeping one record, trims base.
	if !won(t, b, in(job, base+1000, "next", "a")) {
		t.Fatal("claim of the next slot lost")
	}
	for _, s := range []anarchon.StoredResult{
		{Slot: base, Token: "won", InstanceID: "a", Status: anarchon.StatusSuccess},
		{Slot: base + 1000, Token: "next", InstanceID: "a", Status: anarchon.StatusSuccess},
	} {
		if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: s, HistorySize: 1}); err != nil {
			t.Fatal(err)
		}
	}
	got.Trimmed = counted(plain(in(job, base, "trimmed", "b"), false))
	if won(t, b, in(paused, base, "settles", "a")) {
		t.Fatal("claim of a paused job's slot won")
	}
	got.PausedLoser = counted(plain(in(paused, base, "loser", "b"), false))
	if lb, ok := b.(anarchon.LeaseBackend); ok {
		rs := lb.Runs()
		lease := func(tok, inst string, kind anarchon.OutcomeKind) func() error {
			return func() error {
				out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: in(job, base+2000, tok, inst), Lease: time.Minute, AllowOverlap: true})
				if err == nil && out.Kind != kind {
					err = errors.New("lease claim of " + tok + ": outcome " + out.Kind.String())
				}
				return err
			}
		}
		got.LeaseWon = counted(lease("lease-a", "a", anarchon.OutcomeWon))
		got.LeaseRunning = counted(lease("lease-b", "b", anarchon.OutcomeRunning))
	}
	if got != want {
		t.Errorf("statements per claim = %+v, want %+v", got, want)
	}
}

func won(t *testing.T, b anarchon.Backend, in anarchon.ClaimInput) bool {
	t.Helper()
	ok, err := b.Claim(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// BatchStatements is how many statements ([Counter]) one batch of n
// entries runs, by its kind and the answer all its entries get, as a
// function of n.
type BatchStatements struct {
	// Plain claims (anarchon.BatchClaimer): n new slots, won; the same n
	// slots claimed again by other tokens, lost (Lost also counts a
	// repeat of the won batch under its own tokens, won again: the same
	// held rows).
	Won, Lost func(n int) int64
	// Lease claims (anarchon.RunBatchClaimer, overlap allowed): n new
	// slots, won; the same claimed by other tokens, running.
	LeaseWon, LeaseRunning func(n int) int64
	// Results (anarchon.ResultBatcher): the results of the n won plain
	// claims. Heartbeats (anarchon.HeartbeatBatcher): the n won leases,
	// each held. Finishes (anarchon.FinishBatcher): the same n leases
	// finished with their results, each held. Each is checked if b has
	// the ability; then a nil function fails the test.
	Results, Heartbeats, Finishes func(n int) int64
}

// BatchRoundTrips sends batches of 1, 10 and 100 claims of each kind of
// [BatchStatements] through b, a backend built on c, across two jobs,
// followed by batches of the results, heartbeats and finishes of the
// slots won, and fails t unless each batch ran the statements want says
// for its size and every entry got the expected answer.
func BatchRoundTrips(t *testing.T, b anarchon.Backend, c *Counter, want BatchStatements) {
	ctx := t.Context()
	sc, ok := b.(anarchon.ServerClock)
	if !ok {
		t.Fatalf("%T is not an anarchon.ServerClock", b)
	}
	bc, ok := anarchon.As[anarchon.BatchClaimer](b)
	if !ok {
		t.Fatalf("%T is not an anarchon.BatchClaimer", b)
	}
	jobs := [2]string{"batch-trips-a", "batch-trips-b"}
	for _, j := range jobs {
		if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: j, HistorySize: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	now, err := sc.ServerTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := now.Add(-time.Hour).Truncate(time.Second).UnixMilli()
	next := int64(0) // slots used so far
	ins := func(n int, tok string) []anarchon.ClaimInput {
		in := make([]anarchon.ClaimInput, n)
		for k := range in {
			in[k] = anarchon.ClaimInput{Job: jobs[k%2], Slot: base + (next+int64(k))*1000, Token: tok + "-" + jobs[k%2] + "-" + time.Duration(k).String(), InstanceID: tok, HistorySize: 1000}
		}
		return in
	}
	check := func(what string, n int, got int64, want func(int) int64) {
		t.Helper()
		if want == nil {
			t.Errorf("%s: BatchStatements has no count for it", what)
			return
		}
		if wantN := want(n); got != wantN {
			t.Errorf("%s, batch of %d: %d statements, want %d", what, n, got, wantN)
		}
	}
	// claimAll sends one plain batch, checks its statements with want and
	// that every claim's answer is won (what says which claims).
	claimAll := func(what string, in []anarchon.ClaimInput, want func(int) int64, won bool) {
		t.Helper()
		n := len(in)
		before := c.N()
		out, err := bc.ClaimBatch(ctx, in)
		check("plain, "+what, n, c.N()-before, want)
		if err != nil || len(out) != n {
			t.Fatalf("ClaimBatch(%d) = %d answers, %v", n, len(out), err)
		}
		for k, a := range out {
			if a.Won != won || a.Err != nil {
				t.Fatalf("ClaimBatch(%d), %s: claim %d = %+v, want won=%v", n, what, k, a, won)
			}
		}
	}
	for _, n := range []int{1, 10, 100} {
		in := ins(n, "a")
		claimAll("won", in, want.Won, true)
		claimAll("lost", ins(n, "b"), want.Lost, false)
		claimAll("repeated", in, want.Lost, true) // the same held rows
		var before int64
		if rb, ok := anarchon.As[anarchon.ResultBatcher](b); ok {
			res := make([]anarchon.SaveResultInput, n)
			for k, c := range in {
				res[k] = anarchon.SaveResultInput{Job: c.Job, HistorySize: 1000, Result: anarchon.StoredResult{
					Slot: c.Slot, Token: c.Token, InstanceID: c.InstanceID, Attempt: 1, Status: anarchon.StatusSuccess}}
			}
			before = c.N()
			errs, err := rb.SaveResults(ctx, res)
			check("results", n, c.N()-before, want.Results)
			if err != nil || len(errs) != n {
				t.Fatalf("SaveResults(%d) = %d answers, %v", n, len(errs), err)
			}
			for k, e := range errs {
				if e != nil {
					t.Fatalf("SaveResults(%d): result %d: %v", n, k, e)
				}
			}
		}
		next += int64(n)
	}
	rb, ok := anarchon.As[anarchon.RunBatchClaimer](b)
	if !ok {
		return
	}
	runs := func(in []anarchon.ClaimInput) []anarchon.RunClaim {
		out := make([]anarchon.RunClaim, len(in))
		for k, c := range in {
			out[k] = anarchon.RunClaim{ClaimInput: c, Lease: time.Hour, AllowOverlap: true, MaxAttempts: 1}
		}
		return out
	}
	for _, n := range []int{1, 10, 100} {
		won := ins(n, "la")
		for _, tc := range []struct {
			tok  string
			kind anarchon.OutcomeKind
			want func(int) int64
		}{{"la", anarchon.OutcomeWon, want.LeaseWon}, {"lb", anarchon.OutcomeRunning, want.LeaseRunning}} {
			before := c.N()
			out, err := rb.ClaimRuns(ctx, runs(ins(n, tc.tok)))
			check("lease, "+tc.kind.String(), n, c.N()-before, tc.want)
			if err != nil || len(out) != n {
				t.Fatalf("ClaimRuns(%d) = %d answers, %v", n, len(out), err)
			}
			for k, a := range out {
				if a.Err != nil || a.Outcome.Kind != tc.kind {
					t.Fatalf("ClaimRuns(%d): claim %d = %+v, want %v", n, k, a, tc.kind)
				}
			}
		}
		heldLeases(t, b, c, n, won, want, check)
		next += int64(n)
	}
}

// heldLeases sends the heartbeats, then the finishes, of the n leases
// won (each held) through b's batches, if it has them, and checks their
// statements (BatchRoundTrips).
func heldLeases(t *testing.T, b anarchon.Backend, c *Counter, n int, won []anarchon.ClaimInput, want BatchStatements, check func(string, int, int64, func(int) int64)) {
	t.Helper()
	ctx := t.Context()
	if hb, ok := anarchon.As[anarchon.HeartbeatBatcher](b); ok {
		in := make([]anarchon.HeartbeatInput, n)
		for k, w := range won {
			in[k] = anarchon.HeartbeatInput{Job: w.Job, Slot: w.Slot, Token: w.Token, Lease: time.Hour}
		}
		before := c.N()
		out, err := hb.Heartbeats(ctx, in)
		check("heartbeats", n, c.N()-before, want.Heartbeats)
		if err != nil || len(out) != n {
			t.Fatalf("Heartbeats(%d) = %d answers, %v", n, len(out), err)
		}
		for k, a := range out {
			if !a.Held || a.Err != nil {
				t.Fatalf("Heartbeats(%d): lease %d = %+v, want held", n, k, a)
			}
		}
	}
	if fb, ok := anarchon.As[anarchon.FinishBatcher](b); ok {
		in := make([]anarchon.SaveResultInput, n)
		for k, w := range won {
			in[k] = anarchon.SaveResultInput{Job: w.Job, HistorySize: 1000, Result: anarchon.StoredResult{
				Slot: w.Slot, Token: w.Token, InstanceID: w.InstanceID, Attempt: 1, Status: anarchon.StatusSuccess}}
		}
		before := c.N()
		out, err := fb.FinishResults(ctx, in)
		check("finishes", n, c.N()-before, want.Finishes)
		if err != nil || len(out) != n {
			t.Fatalf("FinishResults(%d) = %d answers, %v", n, len(out), err)
		}
		for k, a := range out {
			if !a.Held || a.Err != nil {
				t.Fatalf("FinishResults(%d): run %d = %+v, want held", n, k, a)
			}
		}
	}
}
