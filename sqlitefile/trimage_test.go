package sqlitefile_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlbackend"
	"github.com/anarchon/anarchon/sqlitebackend"
)

// TestBatchTrimsByAge: a batch of results of jobs that have one entry
// each trims by age (HistoryTTL) as the single SaveResult does. Two
// groups of jobs get the same claims and results, one group in batches
// and the other one call each; then every stored row is made two hours
// older in the file, and a last round with a one-hour TTL leaves each
// job its last record, with its aged slots lost to later claims, in both
// groups. Before the aging, every row is checked as the single calls
// write it: the conformance subtests compare histories, which take a
// record's claim time from its run row and do not show whether a plain
// run was settled. They cannot age rows without waiting either.
func TestBatchTrimsByAge(t *testing.T) {
	b := open(t, 1)[0]
	ctx := t.Context()
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	const n, rounds = 4, 3
	var batched, single []string
	for j := range n {
		batched = append(batched, fmt.Sprintf("aged-batch-%d", j))
		single = append(single, fmt.Sprintf("aged-single-%d", j))
	}
	slot0 := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	round := func(r int, ttl time.Duration) {
		t.Helper()
		slot := slot0 + int64(r)*1000
		var in []anarchon.SaveResultInput
		for j := range n {
			for _, job := range []string{batched[j], single[j]} {
				tok := fmt.Sprintf("%s-%d", job, r)
				if won, err := b.Claim(ctx, anarchon.ClaimInput{Job: job, Slot: slot, Token: tok, InstanceID: "a"}); err != nil || !won {
					t.Fatalf("claim %s slot %d: %v, %v", job, slot, won, err)
				}
				res := anarchon.SaveResultInput{Job: job, HistoryTTL: ttl, Result: anarchon.StoredResult{
					Slot: slot, Token: tok, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}}
				if job == single[j] {
					if err := b.SaveResult(ctx, res); err != nil {
						t.Fatal(err)
					}
				} else {
					in = append(in, res)
				}
			}
		}
		errs, err := b.SaveResults(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range errs {
			if e != nil {
				t.Fatalf("result %d: %v", i, e)
			}
		}
	}
	for r := range rounds {
		round(r, 0)
	}
	// Both groups' rows as the single calls write them: every result
	// with its run row's claim time, every plain run settled.
	for _, check := range []struct{ what, query string }{
		{"results without their run's claim time", `SELECT COUNT(*) FROM anarchon_results AS r LEFT JOIN anarchon_runs AS u
			ON u.job = r.job AND u.slot = r.slot AND u.token = r.token WHERE u.claimed_at IS NULL OR r.claimed_at IS NOT u.claimed_at`},
		{"runs not settled", `SELECT COUNT(*) FROM anarchon_runs WHERE state <> 'done' OR status <> 'success'`},
	} {
		var bad int
		if err := b.DB().QueryRowContext(ctx, check.query).Scan(&bad); err != nil || bad != 0 {
			t.Errorf("%s: %d, %v", check.what, bad, err)
		}
	}
	for _, table := range []string{"anarchon_results SET saved_at = saved_at", "anarchon_runs SET claimed_at = claimed_at"} {
		if _, err := b.DB().ExecContext(ctx, "UPDATE "+table+" - 7200000"); err != nil {
			t.Fatal(err)
		}
	}
	round(rounds, time.Hour)
	for j := range n {
		for _, job := range []string{batched[j], single[j]} {
			recs, err := b.History(ctx, job, 0)
			if err != nil || len(recs) != 1 || recs[0].Token != fmt.Sprintf("%s-%d", job, rounds) {
				t.Errorf("History(%s) = %+v, %v; want the last round's record alone", job, recs, err)
			}
			if won, err := b.Claim(ctx, anarchon.ClaimInput{Job: job, Slot: slot0, Token: "late", InstanceID: "b"}); err != nil || won {
				t.Errorf("%s: a claim of the aged slot: won %v, %v; want lost", job, won, err)
			}
		}
	}
}

// TestFinishBatchNotifies: a batch of finishes wakes the watchers
// (sqlbackend.Config.Notify) of every run it finishes, once each, whether
// its job has one entry in the batch (finished with the others, one step
// at a time) or several (finished alone), and of no run it does not hold.
func TestFinishBatchNotifies(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	finished := map[string]int{} // "job slot" → RunFinished events
	b, err := sqlbackend.New(sqlbackend.Config{Name: "sqlite", Dialect: sqlitebackend.Dialect, Conn: fileConn(t),
		Notify: func(ev anarchon.RunEvent) (string, []any) {
			if ev.Kind == anarchon.RunFinished {
				mu.Lock()
				finished[fmt.Sprintf("%s %d", ev.Job, ev.Slot)]++
				mu.Unlock()
			}
			return "", nil // nothing to run: the count is the test
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	var claims []anarchon.RunClaim
	for _, js := range []struct {
		job   string
		slots int
	}{{"notify-a", 1}, {"notify-b", 1}, {"notify-c", 1}, {"notify-d", 2}} {
		for k := range js.slots {
			s := slot + int64(k)*1000
			claims = append(claims, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: js.job, Slot: s, Token: fmt.Sprintf("%s-%d", js.job, k), InstanceID: "a"},
				Lease: time.Hour, AllowOverlap: true, MaxAttempts: 1})
		}
	}
	if _, err := b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(ctx, claims); err != nil {
		t.Fatal(err)
	}
	in := successes(claimsOf(claims))
	// A token that holds nothing: not finished, no event.
	in = append(in, anarchon.SaveResultInput{Job: "notify-e", Result: anarchon.StoredResult{
		Slot: slot, Token: "stranger", InstanceID: "b", Attempt: 1, Status: anarchon.StatusSuccess}})
	held, err := b.Runs().(anarchon.FinishBatcher).FinishResults(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range held {
		if h.Err != nil || h.Held != (i < len(claims)) {
			t.Errorf("finish %d (%s): %+v", i, in[i].Job, h)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range claims {
		if k := fmt.Sprintf("%s %d", c.Job, c.Slot); finished[k] != 1 {
			t.Errorf("run %s: %d RunFinished events, want 1", k, finished[k])
		}
	}
	if len(finished) != len(claims) {
		t.Errorf("events for %d runs, want %d: %v", len(finished), len(claims), finished)
	}
}
