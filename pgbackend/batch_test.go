package pgbackend_test

import (
	"testing"
	"time"

	"github.com/anarchon/anarchon"
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
