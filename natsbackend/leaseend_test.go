package natsbackend_test

import (
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// TestLeaseUntilIsWhenABackupMayWin checks the lease end a holder is told
// against the store's own judgement, by the server's clock alone: while
// a backup's claims answer running they report the very LeaseUntil the
// holder's won claim returned, and the takeover that finally wins is
// written (its revision's server time stamp, LeaseUntil − lease of the
// backup's won claim) no earlier than that instant. A short lease is
// claimed and left to run out; the backup claims every 5 ms through its
// own connection, so it wins as soon as the server lets it.
func TestLeaseUntilIsWhenABackupMayWin(t *testing.T) {
	url := natsURL(t)
	bs := openN(t, url, freshOptions(t, url), 2)
	ctx := t.Context()
	const lease = 500 * time.Millisecond
	job := "lease end " + randHex(4)
	slot := time.Now().UnixMilli()
	claim := func(token, inst string) anarchon.RunClaim {
		return anarchon.RunClaim{
			ClaimInput: anarchon.ClaimInput{Job: job, Slot: slot, Token: token, InstanceID: inst, HistorySize: 10},
			Lease:      lease, MaxAttempts: 3,
		}
	}
	holder, err := bs[0].Runs().Claim(ctx, claim("holder-"+randHex(4), "holder"))
	if err != nil || holder.Kind != anarchon.OutcomeWon || holder.LeaseUntil.IsZero() {
		t.Fatalf("holder's claim: %+v, %v; want won with a lease end", holder, err)
	}
	backupRC := claim("backup-"+randHex(4), "backup")
	deadline := time.Now().Add(5 * time.Second)
	for running := 0; ; running++ {
		out, err := bs[1].Runs().Claim(ctx, backupRC)
		if err != nil {
			t.Fatalf("backup's claim: %v", err)
		}
		if out.Kind == anarchon.OutcomeWon {
			written := out.LeaseUntil.Add(-lease)
			if written.Before(holder.LeaseUntil) {
				t.Fatalf("the takeover was written at %v by the server's clock, %v before the end the holder was told (%v)",
					written, holder.LeaseUntil.Sub(written), holder.LeaseUntil)
			}
			if out.Attempt != 2 {
				t.Errorf("takeover attempt %d, want 2", out.Attempt)
			}
			if running == 0 {
				t.Error("the backup won at once, before the holder's lease ran out")
			}
			return
		}
		if out.Kind != anarchon.OutcomeRunning {
			t.Fatalf("backup's claim: outcome %v, want running, then won", out.Kind)
		}
		if !out.LeaseUntil.Equal(holder.LeaseUntil) {
			t.Fatalf("a backup is told the lease ends at %v, the holder at %v", out.LeaseUntil, holder.LeaseUntil)
		}
		if time.Now().After(deadline) {
			t.Fatal("the backup did not win in 5 s")
		}
		time.Sleep(5 * time.Millisecond) // the backup's poll interval
	}
}
