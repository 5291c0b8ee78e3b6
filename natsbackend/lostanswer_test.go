package natsbackend_test

import (
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// TestClaimAfterLostAnswer: a claim whose create landed but whose answer
// was lost (CreateRunOnly: the run exists with its token, nothing after
// the create ran) is completed by the next try of the same token, alone
// or in a ClaimRuns batch, as the first try would have been: refused as
// overlap while another slot of the job holds a live lease, else won,
// listed in the job key (the next slot is refused) and recorded in
// history. Before claimRun settled such a run, the retry renewed it and
// answered won past the overlap check, and the next slot won too.
func TestClaimAfterLostAnswer(t *testing.T) {
	url := natsURL(t)
	b := openN(t, url, freshOptions(t, url), 1)[0]
	rs := b.Runs()
	ctx := t.Context()
	base := time.Now().Truncate(time.Minute).Add(-10 * time.Minute).UnixMilli()
	claim := func(job string, k int, tok string) anarchon.RunClaim {
		return anarchon.RunClaim{
			ClaimInput: anarchon.ClaimInput{Job: job, Slot: base + int64(k)*1000, Token: tok, InstanceID: "a", HistorySize: 10},
			Lease:      time.Hour, MaxAttempts: 3,
		}
	}
	for _, batch := range []bool{false, true} {
		name := map[bool]string{false: "Claim", true: "ClaimRuns"}[batch]
		try := func(c anarchon.RunClaim) anarchon.ClaimOutcome {
			t.Helper()
			if err := b.CreateRunOnly(ctx, c); err != nil {
				t.Fatalf("%s: create only: %v", name, err)
			}
			var out anarchon.ClaimOutcome
			var err error
			if batch {
				var ans []anarchon.RunClaimAnswer
				ans, err = rs.(anarchon.RunBatchClaimer).ClaimRuns(ctx, []anarchon.RunClaim{c})
				if err == nil {
					out, err = ans[0].Outcome, ans[0].Err
				}
			} else {
				out, err = rs.Claim(ctx, c)
			}
			if err != nil {
				t.Fatalf("%s: retry of slot %d: %v", name, c.Slot, err)
			}
			return out
		}
		t.Run(name, func(t *testing.T) {
			lost := "lost" + randHex(4) // a claim record's message ID is its token
			// Another slot of the job is live: the unsettled run loses.
			job := "busy " + randHex(4)
			if out, err := rs.Claim(ctx, claim(job, 0, "live")); err != nil || out.Kind != anarchon.OutcomeWon {
				t.Fatalf("first slot: %+v, %v; want won", out, err)
			}
			if out := try(claim(job, 1, lost)); out.Kind != anarchon.OutcomeOverlap {
				t.Errorf("retry while another slot is live: %v; want overlap", out.Kind)
			}
			// No other slot: the retry wins and does what the first try
			// would have.
			job = "idle " + randHex(4)
			if out := try(claim(job, 0, lost)); out.Kind != anarchon.OutcomeWon || out.Attempt != 1 || out.Fence == 0 {
				t.Fatalf("retry with no other slot: %+v; want won, attempt 1, a fence", out)
			}
			if out, err := rs.Claim(ctx, claim(job, 1, "next")); err != nil || out.Kind != anarchon.OutcomeOverlap {
				t.Errorf("next slot while the retried one is live: %+v, %v; want overlap (the retried slot listed)", out, err)
			}
			recs, err := b.History(ctx, job, 0)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range recs {
				found = found || r.Token == lost
			}
			if !found {
				t.Errorf("history %+v holds no record of the retried claim", recs)
			}
		})
	}
}
