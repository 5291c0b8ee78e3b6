package natsbackend

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// A run is visible as running from its create on, and listed in its job
// key only by the compare-and-set after it. A claim told that a run is
// running must see it live afterwards: its own later claim of another
// slot of the job, with overlap refused, is refused. Here the first
// claimer's compare-and-set is held while a second handle is answered
// running for its slot and then claims the next slot.
func TestRunningBeforeListedCountsForOverlap(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "batch"}[batch], func(t *testing.T) { testRunningBeforeListed(t, batch) })
	}
}

func testRunningBeforeListed(t *testing.T, batch bool) {
	bs, ks := openStepped(t, 2, 10*time.Second)
	ctx := t.Context()
	slot := pastSlot()
	claim := func(b *Backend, s int64, tok string, overlap bool) anarchon.ClaimOutcome {
		t.Helper()
		rc := anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "j", Slot: s, Token: tok, InstanceID: tok},
			Lease: time.Hour, AllowOverlap: overlap}
		if batch && b == bs[1] {
			// The second handle claims in batches, of two claims (one
			// claim alone may take the single path).
			other := rc
			other.Job, other.Token = "other", tok+"-other"
			outs, err := b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(ctx, []anarchon.RunClaim{rc, other})
			if err == nil {
				err = outs[0].Err
			}
			if err != nil {
				t.Fatalf("batch claim of slot %d by %s: %v", s, tok, err)
			}
			return outs[0].Outcome
		}
		out, err := b.Runs().Claim(ctx, rc)
		if err != nil {
			t.Fatalf("claim of slot %d by %s: %v", s, tok, err)
		}
		return out
	}
	// An earlier run, finished, so that the job key exists (its later
	// writes are compare-and-sets).
	if out := claim(bs[0], slot-2000, "a", true); out.Kind != anarchon.OutcomeWon {
		t.Fatalf("earlier slot: %v", out.Kind)
	}
	if _, err := bs[0].Runs().Finish(ctx, anarchon.FinishInput{Job: "j", Slot: slot - 2000, Token: "a", Status: anarchon.StatusSuccess}); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	ks[0].update = func(ctx context.Context, key string, rev uint64) (uint64, error, bool) {
		if strings.HasPrefix(key, "j.") {
			select {
			case <-held:
			default:
				close(held)
				<-release
			}
		}
		return 0, nil, false
	}
	first := make(chan anarchon.ClaimOutcome, 1)
	go func() { first <- claim(bs[0], slot, "b", true) }()
	<-held
	if out := claim(bs[1], slot, "c", true); out.Kind != anarchon.OutcomeRunning {
		t.Fatalf("a second claim of the slot while its run is being listed: %v, want running", out.Kind)
	}
	next := claim(bs[1], slot+1000, "c", false)
	close(release)
	if out := <-first; out.Kind != anarchon.OutcomeWon {
		t.Errorf("the first claim: %v, want won", out.Kind)
	}
	if next.Kind == anarchon.OutcomeWon {
		t.Errorf("the next slot, overlap refused, after its claimer was told the slot before is running: won, want overlap")
	}
}
