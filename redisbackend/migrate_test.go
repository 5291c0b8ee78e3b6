package redisbackend_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

// TestBatchOnMigratingSlot: a batch of lease claims sent while the job's
// cluster slot is being migrated (resharding, no key moved yet) is
// refused whole, as each single claim is, and writes nothing: its keys
// are all declared, so the node refuses the script before it runs
// (packArgs). Before, it declared only each call's first key; the
// script then failed at the first undeclared key the node lacked, after
// writing a running claim the caller was told had failed.
func TestBatchOnMigratingSlot(t *testing.T) {
	ctx := context.Background()
	a := startServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	b := startServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	ca := redis.NewClient(&redis.Options{Addr: a})
	t.Cleanup(func() { _ = ca.Close() })
	cb := redis.NewClient(&redis.Options{Addr: b})
	t.Cleanup(func() { _ = cb.Close() })
	if err := ca.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(b, ":")
	if err := ca.Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		ia, _ := ca.ClusterInfo(ctx).Result()
		ib, _ := cb.ClusterInfo(ctx).Result()
		if strings.Contains(ia, "cluster_state:ok") && strings.Contains(ib, "cluster_state:ok") && strings.Contains(ib, "cluster_known_nodes:2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok: %s / %s", ia, ib)
		}
		time.Sleep(50 * time.Millisecond) // cluster gossip has no event to wait on
	}
	idA, err := ca.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	idB, err := cb.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a}})
	t.Cleanup(func() { _ = cc.Close() })
	be, err := redisbackend.New(cc, &redisbackend.Options{Prefix: "mg"})
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Init(ctx); err != nil {
		t.Fatal(err)
	}
	runs := be.Runs()
	// The job has a run state, history, control state and fence, but no
	// live run: its key of live runs is absent, the key a new claim
	// writes after its run state.
	const job = "j"
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	if _, err := be.SetPaused(ctx, anarchon.PauseInput{Job: job, Paused: false}); err != nil {
		t.Fatal(err)
	}
	if o, err := runs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: base, Token: "t0", InstanceID: "i"}, Lease: time.Minute, AllowOverlap: true}); err != nil || o.Kind != anarchon.OutcomeWon {
		t.Fatalf("first claim: %+v %v", o, err)
	}
	if ok, err := runs.Finish(ctx, anarchon.FinishInput{Job: job, Slot: base, Token: "t0", Status: anarchon.StatusSuccess}); !ok || err != nil {
		t.Fatalf("finish: %v %v", ok, err)
	}
	slot := strconv.Itoa(redisbackend.KeySlot("{mg:j}:run"))
	if err := cb.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", idA).Err(); err != nil {
		t.Fatal(err)
	}
	if err := ca.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", idB).Err(); err != nil {
		t.Fatal(err)
	}
	in := []anarchon.RunClaim{
		{ClaimInput: anarchon.ClaimInput{Job: job, Slot: base + 1000, Token: "t1", InstanceID: "i"}, Lease: time.Minute, AllowOverlap: true},
		{ClaimInput: anarchon.ClaimInput{Job: job, Slot: base + 2000, Token: "t2", InstanceID: "i"}, Lease: time.Minute, AllowOverlap: true},
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := runs.(anarchon.RunBatchClaimer).ClaimRuns(cctx, in)
	if err == nil {
		for i, ans := range out {
			if ans.Err == nil {
				t.Errorf("claim %d during the migration: %+v; want an error", i, ans.Outcome)
			}
		}
	}
	fields, err := ca.HKeys(ctx, "{mg:j}:run").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if f == strconv.FormatInt(base+1000, 10) || f == strconv.FormatInt(base+2000, 10) {
			t.Errorf("the refused batch wrote the run state of slot %s", f)
		}
	}
	// The migration is given up: the slots are free to claim.
	for _, c := range []*redis.Client{ca, cb} {
		if err := c.Do(ctx, "CLUSTER", "SETSLOT", slot, "STABLE").Err(); err != nil {
			t.Fatal(err)
		}
	}
	again := in[0]
	again.Token, again.InstanceID = "retry", "k"
	if o, err := runs.Claim(ctx, again); err != nil || o.Kind != anarchon.OutcomeWon {
		t.Errorf("claim after the migration was given up: %+v %v; want won", o, err)
	}
}
