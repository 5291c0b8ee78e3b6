package natsbackend_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
)

// TestLaggingReplicaIsNotARefusal: a direct get may be served by a replica
// that has not yet seen the run (one just back from a freeze), which
// answers "absent". A holder's heartbeat, finish and release must not be
// answered "not held" on such a read: each is confirmed with the stream's
// leader, which holds the run, and goes through, alone and in batches.
// Before, the holder's finish was answered not held, the run stayed
// running until its lease ran out, and a backup ran the slot again (the
// NATS cluster drill, once).
func TestLaggingReplicaIsNotARefusal(t *testing.T) {
	url := natsURL(t)
	b := openN(t, url, freshOptions(t, url), 1)[0]
	rs := b.Runs()
	ctx := t.Context()
	base := time.Now().Truncate(time.Minute).Add(-10 * time.Minute).UnixMilli()
	claim := func(k int) anarchon.SaveResultInput {
		t.Helper()
		tok := fmt.Sprintf("holder-%d", k)
		c := anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "lag", Slot: base + int64(k)*1000, Token: tok, InstanceID: "a"},
			Lease: time.Hour, AllowOverlap: true}
		if out, err := rs.Claim(ctx, c); err != nil || out.Kind != anarchon.OutcomeWon {
			t.Fatalf("claim %d = %+v, %v", k, out, err)
		}
		return anarchon.SaveResultInput{Job: "lag", HistorySize: 100, Result: anarchon.StoredResult{
			Slot: c.Slot, Token: tok, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}}
	}
	var in []anarchon.SaveResultInput
	for k := range 6 {
		in = append(in, claim(k))
	}
	// Every read of a run key of the job now misses, as on a lagging
	// replica; the leader still answers.
	defer natsbackend.SetLaggingReplica(func(key string) bool { return strings.HasPrefix(key, "r.") })()

	beat := func(c anarchon.SaveResultInput) anarchon.HeartbeatInput {
		return anarchon.HeartbeatInput{Job: c.Job, Slot: c.Result.Slot, Token: c.Result.Token, Lease: time.Hour}
	}
	if held, err := rs.Heartbeat(ctx, beat(in[0])); err != nil || !held {
		t.Errorf("Heartbeat on a lagging read = %v, %v; want held", held, err)
	}
	hb, err := rs.(anarchon.HeartbeatBatcher).Heartbeats(ctx, []anarchon.HeartbeatInput{beat(in[1]), beat(in[2])})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range hb {
		if a.Err != nil || !a.Held {
			t.Errorf("Heartbeats[%d] on a lagging read = %+v; want held", i, a)
		}
	}
	if held, err := rs.(anarchon.ResultFinisher).FinishResult(ctx, in[3]); err != nil || !held {
		t.Errorf("FinishResult on a lagging read = %v, %v; want held", held, err)
	}
	fin, err := rs.(anarchon.FinishBatcher).FinishResults(ctx, in[4:6])
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range fin {
		if a.Err != nil || !a.Held {
			t.Errorf("FinishResults[%d] on a lagging read = %+v; want held", i, a)
		}
	}
	if ok, err := rs.Release(ctx, anarchon.ReleaseInput{Job: "lag", Slot: in[0].Result.Slot, Token: in[0].Result.Token}); err != nil || !ok {
		t.Errorf("Release on a lagging read = %v, %v; want released", ok, err)
	}
	// A real refusal is still one: another token holds none of the runs.
	if held, err := rs.Heartbeat(ctx, anarchon.HeartbeatInput{Job: "lag", Slot: in[1].Result.Slot, Token: "other", Lease: time.Hour}); err != nil || held {
		t.Errorf("another token's Heartbeat = %v, %v; want not held", held, err)
	}
	if held, err := rs.Heartbeat(ctx, anarchon.HeartbeatInput{Job: "lag", Slot: base - 1000, Token: "nobody", Lease: time.Hour}); err != nil || held {
		t.Errorf("a Heartbeat of a run that does not exist = %v, %v; want not held", held, err)
	}

	// Read as the leader has them: the finished runs are done, so a
	// backup's claim finds them done; the released one is taken over.
	restore := natsbackend.SetLaggingReplica(nil)
	defer restore()
	for k := 3; k < 6; k++ {
		out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "lag", Slot: in[k].Result.Slot, Token: "backup", InstanceID: "b"}, Lease: time.Hour, AllowOverlap: true})
		if err != nil || out.Kind != anarchon.OutcomeDone {
			t.Errorf("a backup's claim of finished run %d = %+v, %v; want done", k, out, err)
		}
	}
}

// TestLaggingReplicaIsNotAnAbsentRun: the overlap check reads the runs a
// job's key lists, with direct gets that a replica behind the leader may
// answer "absent". Such a run was dropped from the list uncounted, so a
// new slot was won beside a live run with overlap refused; now the leader
// confirms an absent run before it is dropped. Alone and in a batch.
func TestLaggingReplicaIsNotAnAbsentRun(t *testing.T) {
	url := natsURL(t)
	b := openN(t, url, freshOptions(t, url), 1)[0]
	rs := b.Runs()
	ctx := t.Context()
	base := time.Now().Truncate(time.Minute).Add(-10 * time.Minute).UnixMilli()
	claim := func(job string, slot int64, tok string) anarchon.RunClaim {
		return anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: slot, Token: tok, InstanceID: tok}, Lease: time.Hour}
	}
	for _, job := range []string{"single", "batch"} {
		if out, err := rs.Claim(ctx, claim(job, base, "first")); err != nil || out.Kind != anarchon.OutcomeWon {
			t.Fatalf("%s: first claim = %+v, %v", job, out, err)
		}
	}
	// Every direct get of the first slot's runs answers "absent".
	first := fmt.Sprintf(".%d", base)
	defer natsbackend.SetLaggingReplica(func(key string) bool { return strings.HasPrefix(key, "r.") && strings.HasSuffix(key, first) })()
	if out, err := rs.Claim(ctx, claim("single", base+1000, "second")); err != nil || out.Kind != anarchon.OutcomeOverlap {
		t.Errorf("single claim beside a live run read as absent = %+v, %v; want overlap", out, err)
	}
	got, err := rs.(anarchon.RunBatchClaimer).ClaimRuns(ctx, []anarchon.RunClaim{claim("batch", base+1000, "second"), claim("other", base, "x")})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Err != nil || got[0].Outcome.Kind != anarchon.OutcomeOverlap {
		t.Errorf("batch claim beside a live run read as absent = %+v; want overlap", got[0])
	}
}
