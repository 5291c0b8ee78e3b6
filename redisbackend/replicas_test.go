package redisbackend_test

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

// TestWaitReplicasShortfall: with Options.Replicas on a primary that has
// fewer replicas, a winning claim fails with ErrNotReplicated (fail
// closed) and the claim is withdrawn, so another token's claim wins the
// slot anew (and falls short too).
func TestWaitReplicasShortfall(t *testing.T) {
	addr := startServer(t) // a primary of its own: no replicas
	prefix := freshPrefix(t, addr)
	b := newBackend(t, addr, prefix, &redisbackend.Options{Replicas: 1, ReplicaTimeout: 100 * time.Millisecond})
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli()
	tok := randToken()
	in := anarchon.ClaimInput{Job: "wait", Slot: slot, Token: tok, InstanceID: "a"}
	start := time.Now()
	ok, err := b.Claim(t.Context(), in)
	if !errors.Is(err, redisbackend.ErrNotReplicated) || ok {
		t.Fatalf("claim without replicas: %v, %v; want false, ErrNotReplicated", ok, err)
	}
	if d := time.Since(start); d < 90*time.Millisecond {
		t.Errorf("claim returned after %v, before the 100ms WAIT timeout", d)
	}
	other := in
	other.Token = randToken()
	if ok, err := b.Claim(t.Context(), other); ok || !errors.Is(err, redisbackend.ErrNotReplicated) {
		t.Errorf("claim after the withdrawal: %v, %v; want false, ErrNotReplicated", ok, err)
	}
	out, err := b.Runs().Claim(t.Context(), anarchon.RunClaim{
		ClaimInput: anarchon.ClaimInput{Job: "wait-lease", Slot: slot, Token: tok, InstanceID: "a"},
		Lease:      time.Minute,
	})
	if !errors.Is(err, redisbackend.ErrNotReplicated) {
		t.Errorf("lease claim without replicas: %+v, %v; want ErrNotReplicated", out, err)
	}
}

// TestWaitReplicas: with a real replica attached, a claim with
// Options.Replicas = 1 succeeds and the replica has it; the script is
// loaded with EVAL when the primary's script cache is empty.
func TestWaitReplicas(t *testing.T) {
	primary := startServer(t)
	replica := startServer(t, "--replicaof", strings.Replace(primary, ":", " ", 1))
	waitInfo(t, replica, "replication", "master_link_status", "up")
	waitInfo(t, primary, "replication", "connected_slaves", "1")
	prefix := freshPrefix(t, primary)
	c := newClient(t, primary, nil)
	b, err := redisbackend.New(c, &redisbackend.Options{Prefix: prefix, Replicas: 1, ReplicaTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// No Init: the first claim meets an empty script cache (NOSCRIPT, then EVAL).
	if err := c.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli()
	tok := randToken()
	start := time.Now()
	ok, err := b.Claim(t.Context(), anarchon.ClaimInput{Job: "wait", Slot: slot, Token: tok, InstanceID: "a"})
	t.Logf("claim with WAIT for one replica: %v", time.Since(start))
	if err != nil || !ok {
		t.Fatalf("claim with one replica: %v, %v; want true", ok, err)
	}
	out, err := b.Runs().Claim(t.Context(), anarchon.RunClaim{
		ClaimInput: anarchon.ClaimInput{Job: "wait-lease", Slot: slot, Token: tok, InstanceID: "a"},
		Lease:      time.Minute,
	})
	if err != nil || out.Kind != anarchon.OutcomeWon {
		t.Fatalf("lease claim with one replica: %+v, %v; want won", out, err)
	}
	// The replica answers the claim as the primary would: a backend reading
	// it (after a failover) sees the slot taken.
	rc := newClient(t, replica, nil)
	if err := rc.Do(t.Context(), "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	promoted, err := redisbackend.New(rc, &redisbackend.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := promoted.Claim(t.Context(), anarchon.ClaimInput{Job: "wait", Slot: slot, Token: randToken(), InstanceID: "b"}); ok || err != nil {
		t.Errorf("claim on the promoted replica: %v, %v; want false (the claim was replicated)", ok, err)
	}
	if ok, err := promoted.Claim(t.Context(), anarchon.ClaimInput{Job: "wait", Slot: slot, Token: tok, InstanceID: "a"}); !ok || err != nil {
		t.Errorf("repeat on the promoted replica: %v, %v; want true", ok, err)
	}
	out, err = promoted.Runs().Claim(t.Context(), anarchon.RunClaim{
		ClaimInput: anarchon.ClaimInput{Job: "wait-lease", Slot: slot, Token: randToken(), InstanceID: "b"},
		Lease:      time.Minute,
	})
	if err != nil || out.Kind != anarchon.OutcomeRunning || out.Holder != "a" {
		t.Errorf("lease claim on the promoted replica: %+v, %v; want running, holder a", out, err)
	}
}

// TestCluster runs claims, leases and history through a *redis.ClusterClient
// on a one-node cluster owning all 16384 slots: Redis Cluster refuses a
// script whose keys span slots (CROSSSLOT), so this checks the hash tags.
func TestCluster(t *testing.T) {
	cc := startCluster(t)
	b, err := redisbackend.New(cc, &redisbackend.Options{Prefix: "cl", Replicas: 0})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli()
	for _, job := range []string{"plain", "odd {tag} } {", "Ωμέγα"} {
		tok := randToken()
		if ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: job, Slot: slot, Token: tok, InstanceID: "a"}); err != nil || !ok {
			t.Fatalf("%q: claim: %v %v", job, ok, err)
		}
		if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}, HistorySize: 1, HistoryTTL: time.Hour}); err != nil {
			t.Fatalf("%q: save: %v", job, err)
		}
		if _, err := b.RecordManualRun(ctx, anarchon.ClaimInput{Job: job, Slot: slot + 1, Token: randToken(), InstanceID: "a"}); err != nil {
			t.Fatalf("%q: manual: %v", job, err)
		}
		if recs, err := b.History(ctx, job, 5); err != nil || len(recs) != 2 {
			t.Fatalf("%q: history: %d records, %v", job, len(recs), err)
		}
		rs := b.Runs()
		lt := randToken()
		out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: slot + 5000, Token: lt, InstanceID: "a"}, Lease: time.Minute})
		if err != nil || out.Kind != anarchon.OutcomeWon {
			t.Fatalf("%q: lease claim: %+v %v", job, out, err)
		}
		if ok, err := rs.Heartbeat(ctx, anarchon.HeartbeatInput{Job: job, Slot: slot + 5000, Token: lt, Lease: time.Minute}); err != nil || !ok {
			t.Fatalf("%q: heartbeat: %v %v", job, ok, err)
		}
		if runs, err := rs.Active(ctx, job); err != nil || len(runs) != 1 {
			t.Fatalf("%q: active: %+v %v", job, runs, err)
		}
		if ok, err := rs.Release(ctx, anarchon.ReleaseInput{Job: job, Slot: slot + 5000, Token: lt}); err != nil || !ok {
			t.Fatalf("%q: release: %v %v", job, ok, err)
		}
		if ok, err := rs.Finish(ctx, anarchon.FinishInput{Job: job, Slot: slot + 5000, Token: lt, Status: anarchon.StatusHandedOver}); err != nil || !ok {
			t.Fatalf("%q: finish: %v %v", job, ok, err)
		}
	}
	if _, err := b.ServerTime(ctx); err != nil {
		t.Fatal(err)
	}
	clusterBatches(t, cc, b)
	// WAIT through the cluster client goes to the job's master.
	wb, err := redisbackend.New(cc, &redisbackend.Options{Prefix: "cl", Replicas: 1, ReplicaTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := wb.Claim(ctx, anarchon.ClaimInput{Job: "wait", Slot: slot, Token: randToken(), InstanceID: "a"}); !errors.Is(err, redisbackend.ErrNotReplicated) {
		t.Errorf("cluster claim with Replicas 1 and no replica: %v, %v; want ErrNotReplicated", ok, err)
	}
}

// TestWaitShortfallWithdrawn: a won claim whose WAIT falls short is taken
// back, so that no later claim wins what the caller was told not to run.
// A repeat of a first lease claim with the same token past the slot's
// MaxLate is answered late (left in place, it would win again as soon as
// a replica acknowledged it: leased slots started tens of seconds late
// after a failover); a plain claim leaves the slot free; a takeover leaves
// the run released, so the next claim is the next attempt.
func TestWaitShortfallWithdrawn(t *testing.T) {
	addr := startServer(t) // a primary of its own: no replicas
	prefix := freshPrefix(t, addr)
	wb := newBackend(t, addr, prefix, &redisbackend.Options{Replicas: 1, ReplicaTimeout: 50 * time.Millisecond})
	nb := newBackend(t, addr, prefix, nil) // no WAIT: sees what the primary kept
	ctx := t.Context()
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli()

	tok := randToken()
	lease := anarchon.RunClaim{
		ClaimInput: anarchon.ClaimInput{Job: "lease", Slot: slot, Token: tok, InstanceID: "a"},
		Lease:      time.Minute, MaxLate: 0, MaxAttempts: 3,
	}
	if out, err := wb.Runs().Claim(ctx, lease); !errors.Is(err, redisbackend.ErrNotReplicated) {
		t.Fatalf("lease claim without replicas: %+v, %v; want ErrNotReplicated", out, err)
	}
	lease.MaxLate = time.Minute // the slot is an hour old
	out, err := nb.Runs().Claim(ctx, lease)
	if err != nil || out.Kind != anarchon.OutcomeLate {
		t.Errorf("repeat of the withdrawn claim past MaxLate: %+v, %v; want late", out, err)
	}
	if runs, err := nb.Runs().Active(ctx, "lease"); err != nil || len(runs) != 0 {
		t.Errorf("active after withdrawal: %+v, %v; want none", runs, err)
	}

	plain := anarchon.ClaimInput{Job: "plain", Slot: slot, Token: randToken(), InstanceID: "a"}
	if ok, err := wb.Claim(ctx, plain); !errors.Is(err, redisbackend.ErrNotReplicated) || ok {
		t.Fatalf("plain claim without replicas: %v, %v; want ErrNotReplicated", ok, err)
	}
	plain.Token = randToken()
	if ok, err := nb.Claim(ctx, plain); err != nil || !ok {
		t.Errorf("another token after the withdrawal: %v, %v; want won", ok, err)
	}

	first := anarchon.RunClaim{
		ClaimInput: anarchon.ClaimInput{Job: "takeover", Slot: slot, Token: randToken(), InstanceID: "a"},
		Lease:      time.Minute, MaxAttempts: 5,
	}
	firstOut, err := nb.Runs().Claim(ctx, first)
	if err != nil || firstOut.Kind != anarchon.OutcomeWon {
		t.Fatalf("first holder: %+v, %v", firstOut, err)
	}
	if ok, err := nb.Runs().Release(ctx, anarchon.ReleaseInput{Job: "takeover", Slot: slot, Token: first.Token}); err != nil || !ok {
		t.Fatalf("release: %v, %v", ok, err)
	}
	second := first
	second.Token, second.InstanceID = randToken(), "b"
	// The withdrawn takeover's fence is not handed out (no outcome), and
	// the next win's is larger than the first holder's (SPEC §6,
	// "Fencing").
	if out, err := wb.Runs().Claim(ctx, second); !errors.Is(err, redisbackend.ErrNotReplicated) || out.Fence != 0 {
		t.Fatalf("takeover without replicas: %+v, %v; want ErrNotReplicated and no fence", out, err)
	}
	third := first
	third.Token, third.InstanceID = randToken(), "c"
	out, err = nb.Runs().Claim(ctx, third)
	if err != nil || out.Kind != anarchon.OutcomeWon || out.Attempt != 3 || out.Fence <= firstOut.Fence {
		t.Errorf("claim after the withdrawn takeover: %+v, %v; want won, attempt 3, a fence above the first holder's %d", out, err, firstOut.Fence)
	}

	// A renewal or finish that no replica has is not confirmed either: a
	// failover could lose it, and a backup then takes the run over while
	// (or after) its holder runs. Both are safe to repeat.
	if ok, err := wb.Runs().Heartbeat(ctx, anarchon.HeartbeatInput{Job: "takeover", Slot: slot, Token: third.Token, Lease: time.Minute}); ok || !errors.Is(err, redisbackend.ErrNotReplicated) {
		t.Errorf("heartbeat without replicas: %v, %v; want ErrNotReplicated", ok, err)
	}
	fin := anarchon.FinishInput{Job: "takeover", Slot: slot, Token: third.Token, Status: anarchon.StatusSuccess}
	if ok, err := wb.Runs().Finish(ctx, fin); ok || !errors.Is(err, redisbackend.ErrNotReplicated) {
		t.Errorf("finish without replicas: %v, %v; want ErrNotReplicated", ok, err)
	}
	if ok, err := nb.Runs().Finish(ctx, fin); !ok || err != nil {
		t.Errorf("repeat of the finish: %v, %v; want true (the finish stands on the primary)", ok, err)
	}
}

// TestInitTopology: Init reports the replicas, min-replicas-to-write and
// persistence it finds, and warns, naming the risk, when replicas run
// without WAIT (a failover can lose acknowledged claims) and when WAIT
// asks for every connected replica (one lost node stops every claim); a
// WAIT for a minority of the replicas gets no warning.
func TestInitTopology(t *testing.T) {
	primary := startServer(t)
	admin := newClient(t, primary, nil)
	setConfig(t, admin, "min-replicas-to-write", "1")
	replicaOf := strings.Replace(primary, ":", " ", 1)
	r1 := startServer(t, "--replicaof", replicaOf)
	waitInfo(t, r1, "replication", "master_link_status", "up")
	waitInfo(t, primary, "replication", "connected_slaves", "1")
	initLog := func(o redisbackend.Options) string {
		var buf syncBuffer
		o.Prefix = freshPrefix(t, primary)
		o.Logger = slog.New(slog.NewTextHandler(&buf, nil))
		b, err := redisbackend.New(newClient(t, primary, nil), &o)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Init(t.Context()); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	out := initLog(redisbackend.Options{})
	for _, want := range []string{"replicas_connected=1", "min_replicas_to_write=1", "persistence=off", "level=WARN msg=\"redis: no WAIT: a failover can lose acknowledged claims"} {
		if !strings.Contains(out, want) {
			t.Errorf("no WAIT, one replica: log lacks %q:\n%s", want, out)
		}
	}
	out = initLog(redisbackend.Options{Replicas: 1})
	if !strings.Contains(out, "losing any one node stops all claims") {
		t.Errorf("WAIT 1, one replica: no warning that one lost node stops claims:\n%s", out)
	}
	out = initLog(redisbackend.Options{Replicas: 2})
	if !strings.Contains(out, "WAIT needs more replicas than are connected") {
		t.Errorf("WAIT 2, one replica: no warning:\n%s", out)
	}
	r2 := startServer(t, "--replicaof", replicaOf)
	waitInfo(t, r2, "replication", "master_link_status", "up")
	waitInfo(t, primary, "replication", "connected_slaves", "2")
	out = initLog(redisbackend.Options{Replicas: 1})
	if !strings.Contains(out, "replicas_connected=2") || strings.Contains(out, "level=WARN msg=\"redis: WAIT") || strings.Contains(out, "no WAIT") {
		t.Errorf("WAIT 1 of 2 replicas: want the topology and no WAIT warning:\n%s", out)
	}
}

// clusterBatches runs batches of every kind across 100 jobs, three slots
// each, through a cluster client: the calls of one job share a cluster
// slot and travel in one batch script, the jobs' scripts go apart (one
// script whose keys spanned slots would fail with CROSSSLOT). It also
// checks that the slot the backend computes for a key is the server's.
func clusterBatches(t *testing.T, cc *redis.ClusterClient, b *redisbackend.Backend) {
	t.Helper()
	ctx := t.Context()
	slot := time.Now().Truncate(time.Minute).Add(-2 * time.Hour).UnixMilli()
	var plain []anarchon.ClaimInput
	var leased []anarchon.RunClaim
	for j := range 100 {
		job := fmt.Sprintf("batch-%d", j)
		key := "{cl:" + job + "}:run"
		if want, err := cc.ClusterKeySlot(ctx, key).Result(); err != nil || int(want) != redisbackend.KeySlot(key) {
			t.Fatalf("slot of %q: server %d (%v), backend %d", key, want, err, redisbackend.KeySlot(key))
		}
		for k := range 3 {
			in := anarchon.ClaimInput{Job: job, Slot: slot + int64(k)*1000, Token: randToken(), InstanceID: "a"}
			plain = append(plain, in)
			in.Slot += 10000
			in.Token = randToken()
			leased = append(leased, anarchon.RunClaim{ClaimInput: in, Lease: time.Minute, AllowOverlap: true})
		}
	}
	answers, err := b.ClaimBatch(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	saves := make([]anarchon.SaveResultInput, len(plain))
	for i, a := range answers {
		if !a.Won || a.Err != nil {
			t.Fatalf("plain claim %d: %v, %v; want won", i, a.Won, a.Err)
		}
		saves[i] = anarchon.SaveResultInput{Job: plain[i].Job, Result: anarchon.StoredResult{Slot: plain[i].Slot, Token: plain[i].Token, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}}
	}
	errs, err := b.SaveResults(ctx, saves)
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("save %d: %v", i, err)
		}
	}
	rs := b.Runs().(*redisbackend.RunStore)
	runs, err := rs.ClaimRuns(ctx, leased)
	if err != nil {
		t.Fatal(err)
	}
	beats := make([]anarchon.HeartbeatInput, len(leased))
	finishes := make([]anarchon.SaveResultInput, len(leased))
	for i, a := range runs {
		if a.Outcome.Kind != anarchon.OutcomeWon || a.Err != nil {
			t.Fatalf("lease claim %d: %+v, %v; want won", i, a.Outcome, a.Err)
		}
		c := leased[i]
		beats[i] = anarchon.HeartbeatInput{Job: c.Job, Slot: c.Slot, Token: c.Token, Lease: time.Minute}
		finishes[i] = anarchon.SaveResultInput{Job: c.Job, Result: anarchon.StoredResult{Slot: c.Slot, Token: c.Token, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}}
	}
	for _, step := range []struct {
		what string
		call func() ([]anarchon.HeldAnswer, error)
	}{
		{"heartbeat", func() ([]anarchon.HeldAnswer, error) { return rs.Heartbeats(ctx, beats) }},
		{"finish", func() ([]anarchon.HeldAnswer, error) { return rs.FinishResults(ctx, finishes) }},
	} {
		what := step.what
		held, err := step.call()
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range held {
			if !h.Held || h.Err != nil {
				t.Fatalf("%s %d: %v, %v; want held", what, i, h.Held, h.Err)
			}
		}
	}
}
