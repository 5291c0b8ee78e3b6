package sqlitefile_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// TestBatchTrimsByAge: a batch of results of jobs that have one entry
// each trims by age (HistoryTTL) as the single SaveResult does. Two
// groups of jobs get the same claims and results, one group in batches
// and the other one call each; then every stored row is made two hours
// older in the file, and a last round with a one-hour TTL leaves each
// job its last record, with its aged slots lost to later claims, in both
// groups. The conformance subtests cannot age rows without waiting.
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
