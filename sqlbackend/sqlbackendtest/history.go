package sqlbackendtest

import (
	"context"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// histLease is the lease of the history tests; histWait outlasts it.
const (
	histLease = 200 * time.Millisecond
	histWait  = 350 * time.Millisecond
)

// histClaim is a lease claim of slot by instance inst.
func histClaim(job string, slot int64, inst string, maxAttempts int) anarchon.RunClaim {
	return anarchon.RunClaim{
		ClaimInput:   anarchon.ClaimInput{Job: job, Slot: slot, Token: inst + "-" + randHex(6), InstanceID: inst},
		Lease:        histLease,
		MaxAttempts:  maxAttempts,
		AllowOverlap: true,
	}
}

// mustClaim claims and checks the outcome's kind and attempt.
func mustClaim(t testing.TB, b anarchon.Backend, c anarchon.RunClaim, kind anarchon.OutcomeKind, attempt int) anarchon.ClaimOutcome {
	t.Helper()
	out, err := runs(t, b).Claim(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != kind || out.Attempt != attempt {
		t.Fatalf("claim by %s: got %v attempt %d, want %v attempt %d", c.InstanceID, out.Kind, out.Attempt, kind, attempt)
	}
	return out
}

// history returns the job's whole history, keyed by token, and checks
// that no token appears twice.
func history(t testing.TB, b anarchon.Backend, job string) ([]anarchon.RunRecord, map[string]anarchon.RunRecord) {
	t.Helper()
	recs, err := b.History(context.Background(), job, 0)
	if err != nil {
		t.Fatal(err)
	}
	by := make(map[string]anarchon.RunRecord, len(recs))
	for _, r := range recs {
		if _, dup := by[r.Token]; dup {
			t.Errorf("token %s appears twice in %+v", r.Token, recs)
		}
		by[r.Token] = r
	}
	return recs, by
}

// checkRecord checks one record's instance, attempt, status and claim
// time.
func checkRecord(t testing.TB, by map[string]anarchon.RunRecord, token, inst string, attempt int, status anarchon.Status, claimed bool) {
	t.Helper()
	r, ok := by[token]
	switch {
	case !ok:
		t.Errorf("no record for token %s", token)
	case r.InstanceID != inst || r.Attempt != attempt || r.Status != status:
		t.Errorf("token %s: got inst=%s att=%d status=%s, want inst=%s att=%d status=%s",
			token, r.InstanceID, r.Attempt, r.Status, inst, attempt, status)
	case claimed && r.ClaimedAt.IsZero():
		t.Errorf("token %s (%s): zero ClaimedAt", token, status)
	case !claimed && !r.ClaimedAt.IsZero():
		t.Errorf("token %s (%s): ClaimedAt %v, want none", token, status, r.ClaimedAt)
	}
}

// HistoryRecords checks the history records of lease runs that a takeover
// ends (SPEC §6, anarchon.RunStore's doc): the dead holder's attempt as
// lease_lost, a released one as handed_over, each with its claim time, and
// an abandoned slot once, under anarchon.AbandonedToken, with the last
// holder's attempt. It runs the subtests DeadHolderLeaseLost,
// HandedOverClaimedAt and AbandonedOnce, each on handles from open, and
// sleeps past a lease of 200ms a few times: the leases run out by the
// store's clock.
func HistoryRecords(t *testing.T, open Open) {
	ctx := context.Background()
	slot := time.Now().Truncate(time.Second).UnixMilli()

	t.Run("DeadHolderLeaseLost", func(t *testing.T) {
		bs := open(t, 2)
		a, b := bs[0], bs[1]
		ca := histClaim("dead", slot, "A", 3)
		mustClaim(t, a, ca, anarchon.OutcomeWon, 1)
		time.Sleep(histWait) // A dies: its lease runs out by the store's clock
		cb := histClaim("dead", slot, "B", 3)
		mustClaim(t, b, cb, anarchon.OutcomeWon, 2)
		now := time.Now()
		ok, err := finisher(t, b).FinishResult(ctx, anarchon.SaveResultInput{Job: "dead", Result: anarchon.StoredResult{
			Slot: slot, Token: cb.Token, InstanceID: "B", Attempt: 2, Status: anarchon.StatusSuccess,
			StartedAt: now, FinishedAt: now,
		}, HistorySize: 10})

		if err != nil || !ok {
			t.Fatalf("FinishResult: %v %v", ok, err)
		}
		recs, by := history(t, b, "dead")
		if len(recs) != 2 {
			t.Fatalf("got %d records, want 2: %+v", len(recs), recs)
		}
		checkRecord(t, by, cb.Token, "B", 2, anarchon.StatusSuccess, true)
		checkRecord(t, by, ca.Token, "A", 1, anarchon.StatusLeaseLost, true)
		if recs[0].Token != cb.Token {
			t.Errorf("newest record is %s, want B's", recs[0].Token)
		}

		// A wakes up and saves its own result: it replaces the store's
		// record, as lease_lost, and keeps the claim time.
		ok, err = finisher(t, a).FinishResult(ctx, anarchon.SaveResultInput{Job: "dead", Result: anarchon.StoredResult{
			Slot: slot, Token: ca.Token, InstanceID: "A", Attempt: 1, Status: anarchon.StatusSuccess,
			StartedAt: now, FinishedAt: now,
		}, HistorySize: 10})

		if err != nil || ok {
			t.Fatalf("late FinishResult by A: %v %v, want false", ok, err)
		}
		recs, by = history(t, a, "dead")
		if len(recs) != 2 {
			t.Fatalf("got %d records, want 2: %+v", len(recs), recs)
		}
		checkRecord(t, by, ca.Token, "A", 1, anarchon.StatusLeaseLost, true)
		if by[ca.Token].StartedAt.IsZero() {
			t.Errorf("A's own result lost its start time")
		}
	})

	t.Run("HandedOverClaimedAt", func(t *testing.T) {
		bs := open(t, 2)
		a, b := bs[0], bs[1]
		rs := runs(t, a)
		for i, saveFirst := range []bool{true, false} {
			s := slot + int64(i)*1000
			ca := histClaim("handover", s, "A", 3)
			mustClaim(t, a, ca, anarchon.OutcomeWon, 1)
			if ok, err := rs.Release(ctx, anarchon.ReleaseInput{Job: "handover", Slot: s, Token: ca.Token}); err != nil || !ok {
				t.Fatalf("Release: %v %v", ok, err)
			}
			save := func() {
				now := time.Now()
				err := a.SaveResult(ctx, anarchon.SaveResultInput{Job: "handover", Result: anarchon.StoredResult{
					Slot: s, Token: ca.Token, InstanceID: "A", Attempt: 1, Status: anarchon.StatusHandedOver,
					StartedAt: now, FinishedAt: now, Error: "handed over",
				}, HistorySize: 10})

				if err != nil {
					t.Fatal(err)
				}
			}
			if saveFirst {
				save()
			}
			cb := histClaim("handover", s, "B", 3)
			mustClaim(t, b, cb, anarchon.OutcomeWon, 2)
			if !saveFirst {
				save()
			}
			_, by := history(t, b, "handover")
			checkRecord(t, by, ca.Token, "A", 1, anarchon.StatusHandedOver, true)
			checkRecord(t, by, cb.Token, "B", 2, anarchon.StatusRunning, true)
			if r := by[ca.Token]; r.Error != "handed over" || r.StartedAt.IsZero() {
				t.Errorf("save first %v: the saved result was not kept: %+v", saveFirst, r)
			}
		}
	})

	t.Run("AbandonedOnce", func(t *testing.T) {
		bs := open(t, 4)
		ca := histClaim("abandon", slot, "A", 2)
		mustClaim(t, bs[0], ca, anarchon.OutcomeWon, 1)
		time.Sleep(histWait)
		cb := histClaim("abandon", slot, "B", 2)
		mustClaim(t, bs[1], cb, anarchon.OutcomeWon, 2)
		time.Sleep(histWait)
		cc := histClaim("abandon", slot, "C", 2)
		out := mustClaim(t, bs[2], cc, anarchon.OutcomeDone, 2)
		if out.Status != anarchon.StatusAbandoned {
			t.Fatalf("status %q, want abandoned", out.Status)
		}
		// A later backup learns the same, and every backup saves the
		// abandonment as the scheduler does, under one token.
		cd := histClaim("abandon", slot, "D", 2)
		out = mustClaim(t, bs[3], cd, anarchon.OutcomeDone, 2)
		if out.Status != anarchon.StatusAbandoned {
			t.Fatalf("repeat: status %q, want abandoned", out.Status)
		}
		tok := anarchon.AbandonedToken(slot)
		for i, inst := range []string{"C", "D"} {
			err := bs[2+i].SaveResult(ctx, anarchon.SaveResultInput{Job: "abandon", Result: anarchon.StoredResult{
				Slot: slot, Token: tok, InstanceID: inst, Status: anarchon.StatusAbandoned,
			}, HistorySize: 10})

			if err != nil {
				t.Fatal(err)
			}
		}
		recs, by := history(t, bs[0], "abandon")
		if len(recs) != 3 {
			t.Fatalf("got %d records, want 3 (A, B lease_lost; the abandonment): %+v", len(recs), recs)
		}
		n := 0
		for _, r := range recs {
			if r.Status == anarchon.StatusAbandoned {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d abandoned records, want 1: %+v", n, recs)
		}
		checkRecord(t, by, tok, "D", 2, anarchon.StatusAbandoned, false)
		checkRecord(t, by, ca.Token, "A", 1, anarchon.StatusLeaseLost, true)
		checkRecord(t, by, cb.Token, "B", 2, anarchon.StatusLeaseLost, true)
		// The last holder no longer holds the slot.
		ok, err := runs(t, bs[1]).Finish(ctx, anarchon.FinishInput{Job: "abandon", Slot: slot, Token: cb.Token, Status: anarchon.StatusSuccess})
		if err != nil || ok {
			t.Errorf("Finish by the last holder after abandonment: %v %v, want false", ok, err)
		}
	})
}

// finisher returns b's run store as an anarchon.ResultFinisher, failing t
// if it is not one.
func finisher(t testing.TB, b anarchon.Backend) anarchon.ResultFinisher {
	t.Helper()
	f, ok := runs(t, b).(anarchon.ResultFinisher)
	if !ok {
		t.Fatalf("the run store of %T is not an anarchon.ResultFinisher", b)
	}
	return f
}
