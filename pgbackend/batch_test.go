package pgbackend_test

import (
	"context"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/jackc/pgx/v5"
)

// TestHeartbeatsRepeatedEntry checks what only the one-statement
// Heartbeats has to take care of: two entries for one run and token are
// both answered held and the lease ends at the later entry's, as two
// single calls in turn leave it; an entry with another token is not
// held, and one with a job name that is not UTF-8 (which the statement's
// JSON cannot carry: it goes alone) fails alone, as the single call.
func TestHeartbeatsRepeatedEntry(t *testing.T) {
	b := open(t, 1, 2, freshSchema(t))[0]
	ctx := t.Context()
	rs := b.Runs()
	hb, ok := rs.(anarchon.HeartbeatBatcher)
	if !ok {
		t.Fatalf("%T is not an anarchon.HeartbeatBatcher", rs)
	}
	now, err := b.ServerTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slot := now.Add(-time.Minute).Truncate(time.Second).UnixMilli()
	out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "hb", Slot: slot, Token: "t1", InstanceID: "a"}, Lease: time.Minute, AllowOverlap: true})
	if err != nil || out.Kind != anarchon.OutcomeWon {
		t.Fatal(out, err)
	}
	in := []anarchon.HeartbeatInput{
		{Job: "hb", Slot: slot, Token: "t1", Lease: time.Hour},
		{Job: "hb", Slot: slot, Token: "other", Lease: time.Hour},
		{Job: "hb", Slot: slot, Token: "t1", Lease: 3 * time.Hour},
	}
	for _, tc := range []struct {
		name string
		in   []anarchon.HeartbeatInput
		want []bool
	}{
		{"statement", in, []bool{true, false, true}},
		{"one alone", append(in, anarchon.HeartbeatInput{Job: "hb\xff", Slot: slot, Token: "t1", Lease: time.Hour}), []bool{true, false, true, false}},
	} {
		got, err := hb.Heartbeats(ctx, tc.in)
		if err != nil || len(got) != len(tc.in) {
			t.Fatalf("%s: Heartbeats(%d) = %d answers, %v", tc.name, len(tc.in), len(got), err)
		}
		for i, a := range got {
			if bad := i == 3; (a.Err != nil) != bad || a.Held != tc.want[i] {
				t.Errorf("%s: heartbeat %d = %+v, want held %v, an error %v", tc.name, i, a, tc.want[i], bad)
			}
		}
		act, err := rs.Active(ctx, "hb")
		if err != nil || len(act) != 1 {
			t.Fatalf("%s: Active = %+v, %v", tc.name, act, err)
		}
		if left := act[0].LeaseUntil.Sub(now); left < 2*time.Hour+time.Minute {
			t.Errorf("%s: the lease ends %v after the claim, want the later entry's 3h", tc.name, left)
		}
	}
}

// TestResultBatchesOneAlone checks that a result whose instance is not
// UTF-8 (which the statement's JSON cannot carry) goes alone through the
// single call in SaveResults and FinishResults: PostgreSQL refuses it,
// and only it; the others of the batch are stored.
func TestResultBatchesOneAlone(t *testing.T) {
	b := open(t, 1, 2, freshSchema(t))[0]
	ctx := t.Context()
	rs := b.Runs()
	now, err := b.ServerTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slot := now.Add(-time.Minute).Truncate(time.Second).UnixMilli()
	res := func(slot int64, tok, inst string) anarchon.SaveResultInput {
		return anarchon.SaveResultInput{Job: "rb", HistorySize: 10, Result: anarchon.StoredResult{
			Slot: slot, Token: tok, InstanceID: inst, Attempt: 1, Status: anarchon.StatusSuccess}}
	}
	for _, tok := range []string{"l1", "l2"} {
		out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "rb", Slot: slot, Token: tok, InstanceID: "a"}, Lease: time.Hour, AllowOverlap: true})
		if err != nil || (tok == "l1" && out.Kind != anarchon.OutcomeWon) {
			t.Fatal(out, err)
		}
		slot += 1000
	}
	errs, err := b.SaveResults(ctx, []anarchon.SaveResultInput{res(slot, "p1", "a"), res(slot+1000, "p2", "a\xff")})
	if err != nil || len(errs) != 2 || errs[0] != nil || errs[1] == nil {
		t.Fatalf("SaveResults = %v, %v; want the second entry alone refused", errs, err)
	}
	fb := rs.(anarchon.FinishBatcher)
	first := slot - 2000
	out, err := fb.FinishResults(ctx, []anarchon.SaveResultInput{res(first, "l1", "a"), res(first+1000, "l2", "a\xff")})
	if err != nil || len(out) != 2 || out[0].Err != nil || !out[0].Held || out[1].Err == nil {
		t.Fatalf("FinishResults = %+v, %v; want the first held, the second alone refused", out, err)
	}
	h, err := b.History(ctx, "rb", 0)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]anarchon.Status{}
	for _, r := range h {
		stored[r.Token] = r.Status
	}
	if stored["p1"] != anarchon.StatusSuccess || stored["l1"] != anarchon.StatusSuccess {
		t.Errorf("History = %+v, want p1 and l1 stored as success", h)
	}
}

// TestClaimRunsPreRead: a lease claim batch answers the claims of slots
// held by another live lease or settled from one read, without the job's
// lock: with every job row locked by another session, such a batch is
// answered (running, done, none), and the answers are those single claims
// give once the lock is gone. A claim of a new slot in a batch still
// takes the lock: it waits for the session, then wins.
func TestClaimRunsPreRead(t *testing.T) {
	schema := freshSchema(t)
	b := open(t, 1, 4, schema)[0]
	ctx := t.Context()
	rs := b.Runs()
	rb := rs.(anarchon.RunBatchClaimer)
	now, err := b.ServerTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slot := now.Add(-time.Minute).Truncate(time.Second).UnixMilli()
	claim := func(job, tok string, maxLate time.Duration) anarchon.RunClaim {
		return anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: slot, Token: tok, InstanceID: "a"}, Lease: time.Hour, MaxLate: maxLate}
	}
	for _, c := range []anarchon.RunClaim{claim("held", "t1", 0), claim("done", "t1", 0), claim("missed", "t1", time.Millisecond)} {
		if _, err := rs.Claim(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := rs.Finish(ctx, anarchon.FinishInput{Job: "done", Slot: slot, Token: "t1", Status: anarchon.StatusSuccess}); err != nil || !ok {
		t.Fatalf("finish: %v %v", ok, err)
	}
	in := []anarchon.RunClaim{claim("held", "t2", 0), claim("done", "t2", 0), claim("missed", "t2", 0)}
	want := []anarchon.OutcomeKind{anarchon.OutcomeRunning, anarchon.OutcomeDone, anarchon.OutcomeNone}

	conn, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var jobs string
	if err := conn.QueryRow(ctx, `SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables
		WHERE schemaname = $1 AND tablename LIKE '%jobs'`, schema).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var locked int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM `+jobs+` FOR UPDATE) AS l`).Scan(&locked); err != nil || locked != 3 {
		t.Fatalf("locking the job rows: %d locked, %v", locked, err)
	}
	// Bounded only so that a batch that does wait for the lock fails the
	// test instead of hanging it.
	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := rb.ClaimRuns(bctx, in)
	if err != nil {
		t.Fatalf("batch of held and settled slots under the job locks: %v", err)
	}
	for i, a := range got {
		if a.Err != nil || a.Outcome.Kind != want[i] {
			t.Errorf("%s: %+v, want %v", in[i].Job, a, want[i])
		}
	}
	// A new slot of a locked job waits for the lock.
	fresh := claim("held", "t3", 0)
	fresh.Slot -= 1000
	fresh.AllowOverlap = true
	done := make(chan anarchon.RunClaimAnswer, 1)
	go func() {
		out, err := rb.ClaimRuns(ctx, []anarchon.RunClaim{fresh})
		if err != nil {
			out = []anarchon.RunClaimAnswer{{Err: err}}
		}
		done <- out[0]
	}()
	waitFor(t, "the new slot's claim waiting on the job's lock", func() bool {
		var n int
		if err := b.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%claim_runs%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if a := <-done; a.Err != nil || a.Outcome.Kind != anarchon.OutcomeWon {
		t.Errorf("new slot after the lock: %+v, want won", a)
	}
	for i, c := range in {
		out, err := rs.Claim(ctx, c)
		if err != nil || out.Kind != got[i].Outcome.Kind || out.Attempt != got[i].Outcome.Attempt ||
			out.Holder != got[i].Outcome.Holder || !out.LeaseUntil.Equal(got[i].Outcome.LeaseUntil) || out.Status != got[i].Outcome.Status {
			t.Errorf("%s: single claim %+v, %v; the batch answered %+v", c.Job, out, err, got[i].Outcome)
		}
	}
}
