package natsbackend_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
)

// TestFenceIsRevision: the fence of each kind of win — a create, a
// renewal by the same token, a takeover after a release, a create in a
// ClaimRuns batch, on the fast path and through the KV API — is the revision of the run key the win wrote, as
// the package doc says (SPEC §6, "Fencing"); nothing else writes the
// bucket meanwhile, so the key's latest revision is that write.
func TestFenceIsRevision(t *testing.T) {
	url := natsURL(t)
	o := freshOptions(t, url)
	b := openN(t, url, o, 1)[0]
	rs := b.Runs()
	ctx := t.Context()
	slot := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	claim := func(slot int64, tok string) anarchon.RunClaim {
		return anarchon.RunClaim{
			ClaimInput: anarchon.ClaimInput{Job: "j", Slot: slot, Token: tok, InstanceID: "a"},
			Lease:      time.Minute, AllowOverlap: true, MaxAttempts: 3,
		}
	}
	var last uint64
	js := jetStream(t, url)
	check := func(what string, slot int64, out anarchon.ClaimOutcome, err error) {
		t.Helper()
		if err != nil || out.Kind != anarchon.OutcomeWon {
			t.Fatalf("%s: %+v, %v; want won", what, out, err)
		}
		kv, err := js.KeyValue(ctx, o.Bucket) // made by the first claim
		if err != nil {
			t.Fatal(err)
		}
		e, err := kv.Get(ctx, "r.ag."+strconv.FormatInt(slot, 10)) // "ag": "j" in base64url
		if err != nil {
			t.Fatal(err)
		}
		if out.Fence != e.Revision() || out.Fence <= last {
			t.Errorf("%s: fence %d; want the run key's revision %d, above the last fence %d", what, out.Fence, e.Revision(), last)
		}
		last = out.Fence
	}
	out, err := rs.Claim(ctx, claim(slot, "a"))
	check("create", slot, out, err)
	out, err = rs.Claim(ctx, claim(slot, "a"))
	check("renewal by the same token", slot, out, err)
	if ok, err := rs.Release(ctx, anarchon.ReleaseInput{Job: "j", Slot: slot, Token: "a"}); err != nil || !ok {
		t.Fatalf("release: %v, %v", ok, err)
	}
	out, err = rs.Claim(ctx, claim(slot, "b"))
	check("takeover", slot, out, err)
	for i, kvAPI := range []bool{false, true} {
		// The fast path's creates are stream publishes answered with
		// their sequence; the other path's are KV updates.
		restore := natsbackend.SetNoFastPath(kvAPI)
		s := slot + int64(i+1)*1000
		answers, err := rs.(anarchon.RunBatchClaimer).ClaimRuns(ctx, []anarchon.RunClaim{claim(s, "c"+strconv.Itoa(i))})
		restore()
		if err != nil || len(answers) != 1 {
			t.Fatalf("ClaimRuns: %+v, %v", answers, err)
		}
		check(fmt.Sprintf("create in a batch (KV API %v)", kvAPI), s, answers[0].Outcome, answers[0].Err)
	}
}
