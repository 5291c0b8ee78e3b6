package redisbackend_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

// countHook counts the round trips a client makes: single commands and
// pipelines (each one round trip), and the commands inside pipelines.
type countHook struct {
	singles, pipelines, piped atomic.Int64
}

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.singles.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.pipelines.Add(1)
		h.piped.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// trips returns the round trips and pipelined commands counted since the
// last call.
func (h *countHook) trips() (singles, pipelines, piped int64) {
	return h.singles.Swap(0), h.pipelines.Swap(0), h.piped.Swap(0)
}

// A batch of 100 claims, of 100 jobs or of one job, plain or lease, is
// one pipeline of one command: the script's batch form, which runs every
// claim of the batch (a batch of more than 512 claims is one command per
// 512). New slots of paused jobs add one pipeline (the settling script
// of each, as a single claim adds one command), and a server that lost
// its script cache one (EVAL after NOSCRIPT).
func TestClaimBatchRoundTrips(t *testing.T) {
	addr := redisAddr(t)
	defer redisbackend.SetEpochCheckEvery(time.Hour)() // no sentinel read among the counted commands
	hook := &countHook{}
	// One connection, set up before the counting starts: go-redis runs the
	// handshake of a new connection through the hooks (and, in v9.23,
	// dials a new connection after the first pipeline of a client).
	client := newClient(t, addr, func(o *redis.Options) { o.PoolSize = 1 })
	client.AddHook(hook)
	b, err := redisbackend.New(client, &redisbackend.Options{Prefix: freshPrefix(t, addr)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	for _, job := range []string{"paused-0", "paused-1", "paused-2"} {
		if _, err := b.SetPaused(ctx, anarchon.PauseInput{Job: job, Paused: true, By: "ops"}); err != nil {
			t.Fatal(err)
		}
	}
	slot := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	const n = 100
	batch := func(job func(i int) string) []anarchon.ClaimInput {
		slot += 1000
		in := make([]anarchon.ClaimInput, n)
		for i := range in {
			in[i] = anarchon.ClaimInput{Job: job(i), Slot: slot + int64(i), Token: "tok", InstanceID: "a"}
		}
		return in
	}
	manyJobs := func(i int) string { return fmt.Sprintf("job-%d", i) }
	oneJob := func(int) string { return "one" }
	somePaused := func(i int) string {
		if i%10 == 0 {
			return fmt.Sprintf("paused-%d", i%3)
		}
		return manyJobs(i)
	}
	check := func(what string, wantPipelines int64, wantPiped int64) {
		t.Helper()
		singles, pipelines, piped := hook.trips()
		if singles != 0 || pipelines != wantPipelines || piped != wantPiped {
			t.Errorf("%s: %d single commands and %d pipelines of %d commands; want 0 and %d of %d",
				what, singles, pipelines, piped, wantPipelines, wantPiped)
		}
	}
	claims := func(what string, in []anarchon.ClaimInput, wantWon int) {
		t.Helper()
		out, err := b.ClaimBatch(ctx, in)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		won := 0
		for i, a := range out {
			if a.Err != nil {
				t.Fatalf("%s: claim %d: %v", what, i, a.Err)
			}
			if a.Won {
				won++
			}
		}
		if won != wantWon {
			t.Errorf("%s: %d won, want %d", what, won, wantWon)
		}
	}
	if _, err := client.Pipelined(ctx, func(p redis.Pipeliner) error { p.Ping(ctx); return nil }); err != nil {
		t.Fatal(err)
	}
	hook.trips()
	in := batch(manyJobs)
	claims("100 jobs", in, n)
	check("100 jobs", 1, 1)
	claims("100 jobs, repeated", in, n)
	check("100 jobs, repeated", 1, 1)
	claims("one job", batch(oneJob), n)
	check("one job", 1, 1)
	claims("10 paused", batch(somePaused), n-10)
	check("10 paused", 2, 1+10)

	slot += 1000
	big := make([]anarchon.ClaimInput, 600)
	for i := range big {
		big[i] = anarchon.ClaimInput{Job: manyJobs(i), Slot: slot, Token: "tok", InstanceID: "a"}
	}
	claims("600 jobs", big, len(big))
	check("600 jobs", 1, 2)

	runs, ok := b.Runs().(anarchon.RunBatchClaimer)
	if !ok {
		t.Fatal("the RunStore is not a RunBatchClaimer")
	}
	for _, job := range []func(int) string{manyJobs, oneJob, somePaused} {
		in := batch(job)
		rc := make([]anarchon.RunClaim, n)
		for i := range rc {
			rc[i] = anarchon.RunClaim{ClaimInput: in[i], Lease: time.Minute, AllowOverlap: true}
		}
		out, err := runs.ClaimRuns(ctx, rc)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range out {
			if a.Err != nil || (a.Outcome.Kind != anarchon.OutcomeWon && a.Outcome.Kind != anarchon.OutcomePaused) {
				t.Fatalf("lease claim %d: %+v", i, a)
			}
		}
		check("lease claims", 1, 1)
	}

	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	hook.trips()
	claims("after SCRIPT FLUSH", batch(manyJobs), n)
	check("after SCRIPT FLUSH", 2, 2)
}

// Each answer of a batch is what a single claim of the same input gives
// in the same state: the script is the same. Both paths meet every case
// on their own key prefix, and their answers are compared item by item.
func TestClaimBatchAnswersAsClaim(t *testing.T) {
	addr := redisAddr(t)
	ctx := t.Context()
	now := time.Now().Truncate(time.Second)
	past := now.Add(-time.Hour).UnixMilli()
	future := now.Add(time.Hour).UnixMilli()
	plain := []anarchon.ClaimInput{
		{Job: "a", Slot: past, Token: "t1", InstanceID: "i"},            // won
		{Job: "a", Slot: past, Token: "t1", InstanceID: "i"},            // repeat: won
		{Job: "a", Slot: past, Token: "t2", InstanceID: "i"},            // another token: lost
		{Job: "a", Slot: future, Token: "t1", InstanceID: "i"},          // early
		{Job: "paused", Slot: past, Token: "t1", InstanceID: "i"},       // paused: settled, false
		{Job: "paused", Slot: past, Token: "t2", InstanceID: "i"},       // settled: lost
		{Job: "", Slot: past, Token: "t1"},                              // bad input
		{Job: "a", Slot: past + 1000, Token: "", InstanceID: "i"},       // bad input
		{Job: "a", Slot: redisbackend.MaxSlot + 1, Token: "t1"},         // bad input
		{Job: "b", Slot: past, Token: "t3", InstanceID: "i"},            // won
		{Job: "b", Slot: past + 1000, Token: "t3", HistorySize: 1},      // won
		{Job: "a", Slot: now.Add(-time.Minute).UnixMilli(), Token: "x"}, // won
	}
	lease := func(c anarchon.ClaimInput, mod func(*anarchon.RunClaim)) anarchon.RunClaim {
		r := anarchon.RunClaim{ClaimInput: c, Lease: time.Minute}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	leases := []anarchon.RunClaim{
		lease(anarchon.ClaimInput{Job: "l", Slot: past, Token: "t1", InstanceID: "i"}, nil),        // won
		lease(anarchon.ClaimInput{Job: "l", Slot: past, Token: "t1", InstanceID: "i"}, nil),        // repeat: won
		lease(anarchon.ClaimInput{Job: "l", Slot: past, Token: "t2", InstanceID: "j"}, nil),        // running
		lease(anarchon.ClaimInput{Job: "l", Slot: past + 1000, Token: "t3", InstanceID: "j"}, nil), // overlap
		lease(anarchon.ClaimInput{Job: "l", Slot: past + 2000, Token: "t4"}, func(r *anarchon.RunClaim) {
			r.AllowOverlap = true
		}), // won despite the running slot
		lease(anarchon.ClaimInput{Job: "late", Slot: past, Token: "t1"}, func(r *anarchon.RunClaim) { r.MaxLate = time.Minute }), // late
		lease(anarchon.ClaimInput{Job: "l", Slot: future, Token: "t1"}, nil),                                                     // early
		lease(anarchon.ClaimInput{Job: "paused", Slot: past, Token: "t1"}, nil),                                                  // paused
		lease(anarchon.ClaimInput{Job: "l", Slot: past, Token: "t1"}, func(r *anarchon.RunClaim) { r.Lease = 0 }),                // bad
		lease(anarchon.ClaimInput{Job: "l", Slot: past, Token: "t1"}, func(r *anarchon.RunClaim) { r.MaxLate = -1 }),             // bad
		lease(anarchon.ClaimInput{Job: "", Slot: past, Token: "t1"}, nil),                                                        // bad
	}
	type answer struct {
		won   bool
		kind  anarchon.OutcomeKind
		att   int
		hold  string
		early bool
		err   bool
	}
	plainAnswer := func(won bool, err error) answer {
		var ee *anarchon.EarlyError
		return answer{won: won, early: errors.As(err, &ee), err: err != nil}
	}
	leaseAnswer := func(o anarchon.ClaimOutcome, err error) answer {
		var ee *anarchon.EarlyError
		return answer{kind: o.Kind, att: o.Attempt, hold: o.Holder, early: errors.As(err, &ee), err: err != nil}
	}
	open := func() *redisbackend.Backend {
		b := newBackend(t, addr, freshPrefix(t, addr), nil)
		if _, err := b.SetPaused(ctx, anarchon.PauseInput{Job: "paused", Paused: true, By: "ops"}); err != nil {
			t.Fatal(err)
		}
		return b
	}

	single, batched := open(), open()
	var want, got []answer
	for _, c := range plain {
		want = append(want, plainAnswer(single.Claim(ctx, c)))
	}
	for _, c := range leases {
		want = append(want, leaseAnswer(single.Runs().Claim(ctx, c)))
	}
	// The batch claims in three calls, so that an answer that depends on
	// an earlier claim of the same slot sees it as the single path did.
	for _, part := range [][]anarchon.ClaimInput{plain[:1], plain[1:]} {
		out, err := batched.ClaimBatch(ctx, part)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(part) {
			t.Fatalf("%d answers for %d claims", len(out), len(part))
		}
		for _, a := range out {
			got = append(got, plainAnswer(a.Won, a.Err))
		}
	}
	for _, part := range [][]anarchon.RunClaim{leases[:1], leases[1:]} {
		out, err := batched.Runs().(anarchon.RunBatchClaimer).ClaimRuns(ctx, part)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range out {
			got = append(got, leaseAnswer(a.Outcome, a.Err))
		}
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("claim %d: batch answered %+v, a single claim %+v", i, got[i], want[i])
		}
	}
	// The paused slot was settled with its record, as a single claim does.
	for _, b := range []*redisbackend.Backend{single, batched} {
		recs, err := b.History(ctx, "paused", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].Status != anarchon.StatusPaused {
			t.Errorf("paused job's history: %+v, want one paused record", recs)
		}
	}
}

// Batches and single claims race for the same slots from 8 handles (each
// with a connection pool of its own), each racer with its own token:
// every slot has exactly one winner, for plain and lease claims, and the
// winners' repeats win again.
func TestClaimBatchRace(t *testing.T) {
	addr := redisAddr(t)
	prefix := freshPrefix(t, addr)
	const handles, racers, slots, jobs = 8, 16, 400, 7
	bs := make([]*redisbackend.Backend, handles)
	for i := range bs {
		bs[i] = newBackend(t, addr, prefix, nil)
	}
	slot0 := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	input := func(i int, tok string) anarchon.ClaimInput {
		return anarchon.ClaimInput{Job: fmt.Sprintf("race-%d", i%jobs), Slot: slot0 + int64(i)*1000, Token: tok, InstanceID: tok}
	}
	for _, lease := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "lease"}[lease], func(t *testing.T) {
			ctx := t.Context()
			if lease {
				slot0 += int64(slots) * 1000
			}
			winners := make([][]string, slots)
			var mu sync.Mutex
			var wg sync.WaitGroup
			for r := range racers {
				wg.Go(func() {
					b := bs[r%handles]
					tok := fmt.Sprintf("racer-%d", r)
					rng := rand.New(rand.NewPCG(uint64(r), 1))
					order := rng.Perm(slots)
					won := func(i int) {
						mu.Lock()
						winners[i] = append(winners[i], tok)
						mu.Unlock()
					}
					for len(order) > 0 {
						n := min(len(order), 1+rng.IntN(64))
						part := order[:n]
						order = order[n:]
						if r%2 == 0 { // single claims
							for _, i := range part {
								if claimOne(t, ctx, b, lease, input(i, tok)) {
									won(i)
								}
							}
							continue
						}
						for k, ok := range claimMany(t, ctx, b, lease, part, func(i int) anarchon.ClaimInput { return input(i, tok) }) {
							if ok {
								won(part[k])
							}
						}
					}
				})
			}
			wg.Wait()
			for i, w := range winners {
				if len(w) != 1 {
					t.Fatalf("slot %d: winners %v, want exactly one", i, w)
				}
				b := bs[i%handles]
				if !claimMany(t, ctx, b, lease, []int{i}, func(i int) anarchon.ClaimInput { return input(i, w[0]) })[0] {
					t.Fatalf("slot %d: the winner's repeat in a batch lost", i)
				}
			}
		})
	}
}

func claimOne(t *testing.T, ctx context.Context, b *redisbackend.Backend, lease bool, in anarchon.ClaimInput) bool {
	if !lease {
		ok, err := b.Claim(ctx, in)
		if err != nil {
			t.Error(err)
		}
		return ok
	}
	out, err := b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: in, Lease: time.Minute, AllowOverlap: true})
	if err != nil {
		t.Error(err)
	}
	return out.Kind == anarchon.OutcomeWon
}

func claimMany(t *testing.T, ctx context.Context, b *redisbackend.Backend, lease bool, idx []int, input func(int) anarchon.ClaimInput) []bool {
	won := make([]bool, len(idx))
	if !lease {
		in := make([]anarchon.ClaimInput, len(idx))
		for k, i := range idx {
			in[k] = input(i)
		}
		out, err := b.ClaimBatch(ctx, in)
		if err != nil {
			t.Error(err)
			return won
		}
		for k, a := range out {
			if a.Err != nil {
				t.Error(a.Err)
			}
			won[k] = a.Won
		}
		return won
	}
	in := make([]anarchon.RunClaim, len(idx))
	for k, i := range idx {
		in[k] = anarchon.RunClaim{ClaimInput: input(i), Lease: time.Minute, AllowOverlap: true}
	}
	out, err := b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(ctx, in)
	if err != nil {
		t.Error(err)
		return won
	}
	for k, a := range out {
		if a.Err != nil {
			t.Error(a.Err)
		}
		won[k] = a.Outcome.Kind == anarchon.OutcomeWon
	}
	return won
}

// With Options.Replicas a batch ends its pipeline with one WAIT: won
// claims fail closed with ErrNotReplicated when replicas fall short and
// are withdrawn, as single claims are, and succeed with a replica attached, whose copy has
// them. Through a *redis.ClusterClient the WAIT goes to each claim's
// master.
func TestClaimBatchReplicas(t *testing.T) {
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli()
	batch := func(b *redisbackend.Backend, tok string, slots ...int64) []anarchon.ClaimAnswer {
		t.Helper()
		in := make([]anarchon.ClaimInput, len(slots))
		for i, s := range slots {
			in[i] = anarchon.ClaimInput{Job: fmt.Sprintf("job-%d", i%3), Slot: s, Token: tok, InstanceID: tok}
		}
		out, err := b.ClaimBatch(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	runs := func(b *redisbackend.Backend, tok string, s int64) anarchon.RunClaimAnswer {
		t.Helper()
		out, err := b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(t.Context(), []anarchon.RunClaim{{
			ClaimInput: anarchon.ClaimInput{Job: "lease", Slot: s, Token: tok, InstanceID: tok}, Lease: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	shortfall := func(t *testing.T, b *redisbackend.Backend) {
		for i, a := range batch(b, "a", slot, slot+1000) {
			if a.Won || !errors.Is(a.Err, redisbackend.ErrNotReplicated) {
				t.Errorf("claim %d without replicas: %v, %v; want false, ErrNotReplicated", i, a.Won, a.Err)
			}
		}
		// The shortfall withdrew a's claims, as a single claim's is
		// withdrawn: b's claims are judged as new ones (not lost to a
		// claim whose caller was told not to run it), and fall short too.
		for i, a := range batch(b, "b", slot, slot+1000) {
			if a.Won || !errors.Is(a.Err, redisbackend.ErrNotReplicated) {
				t.Errorf("claim %d after a withdrawn one: %v, %v; want false, ErrNotReplicated", i, a.Won, a.Err)
			}
		}
		if a := runs(b, "a", slot); !errors.Is(a.Err, redisbackend.ErrNotReplicated) {
			t.Errorf("lease claim without replicas: %+v; want ErrNotReplicated", a)
		}
	}

	t.Run("shortfall", func(t *testing.T) {
		addr := startServer(t)
		shortfall(t, newBackend(t, addr, freshPrefix(t, addr), &redisbackend.Options{Replicas: 1, ReplicaTimeout: 100 * time.Millisecond}))
	})
	t.Run("replica", func(t *testing.T) {
		primary := startServer(t)
		replica := startServer(t, "--replicaof", strings.Replace(primary, ":", " ", 1))
		waitInfo(t, replica, "replication", "master_link_status", "up")
		waitInfo(t, primary, "replication", "connected_slaves", "1")
		prefix := freshPrefix(t, primary)
		b := newBackend(t, primary, prefix, &redisbackend.Options{Replicas: 1, ReplicaTimeout: 2 * time.Second})
		slots := []int64{slot, slot + 1000, slot + 2000, slot + 3000}
		for i, a := range batch(b, "a", slots...) {
			if !a.Won || a.Err != nil {
				t.Errorf("claim %d with one replica: %v, %v; want true", i, a.Won, a.Err)
			}
		}
		if a := runs(b, "a", slot); a.Err != nil || a.Outcome.Kind != anarchon.OutcomeWon {
			t.Errorf("lease claim with one replica: %+v; want won", a)
		}
		rc := newClient(t, replica, nil)
		if err := rc.Do(t.Context(), "REPLICAOF", "NO", "ONE").Err(); err != nil {
			t.Fatal(err)
		}
		promoted, err := redisbackend.New(rc, &redisbackend.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range batch(promoted, "b", slots...) {
			if a.Won || a.Err != nil {
				t.Errorf("claim %d on the promoted replica: %v, %v; want false (the claim was replicated)", i, a.Won, a.Err)
			}
		}
	})
	t.Run("cluster", func(t *testing.T) {
		cc := startCluster(t)
		b, err := redisbackend.New(cc, &redisbackend.Options{Prefix: "cl", Replicas: 1, ReplicaTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		shortfall(t, b)
		b, err = redisbackend.New(cc, &redisbackend.Options{Prefix: "cl2"})
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range batch(b, "a", slot, slot+1000, slot+2000, slot+3000) {
			if !a.Won || a.Err != nil {
				t.Errorf("claim %d on a cluster: %v, %v; want true", i, a.Won, a.Err)
			}
		}
	})
}

// startCluster starts a one-node Redis Cluster owning all 16384 slots and
// returns a cluster client on it.
func startCluster(t *testing.T) *redis.ClusterClient {
	addr := startServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	c := redis.NewClient(&redis.Options{Addr: addr})
	if err := c.Do(t.Context(), "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	waitInfo(t, addr, "cluster", "cluster_enabled", "1")
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	t.Cleanup(func() { _ = cc.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		state, err := cc.ClusterInfo(t.Context()).Result()
		if err == nil && strings.Contains(state, "cluster_state:ok") {
			return cc
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok: %v %s", err, state)
		}
		time.Sleep(50 * time.Millisecond) // cluster start-up has no event to wait on
	}
}

// A batch that reaches no server has no answer: ClaimBatch and ClaimRuns
// return an error and no answers, so the caller treats every claim as
// failed; after Close they return anarchon.ErrClosed.
func TestClaimBatchNoAnswer(t *testing.T) {
	addr := redisAddr(t)
	ctx := t.Context()
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	in := []anarchon.ClaimInput{{Job: "a", Slot: slot, Token: "t"}, {Job: "b", Slot: slot, Token: "t"}}
	rc := []anarchon.RunClaim{{ClaimInput: in[0], Lease: time.Minute}}
	check := func(what string, b *redisbackend.Backend, want error) {
		t.Helper()
		out, err := b.ClaimBatch(ctx, in)
		if err == nil || out != nil || (want != nil && !errors.Is(err, want)) {
			t.Errorf("%s: ClaimBatch = %v, %v; want no answers and an error (%v)", what, out, err, want)
		}
		rout, err := b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(ctx, rc)
		if err == nil || rout != nil || (want != nil && !errors.Is(err, want)) {
			t.Errorf("%s: ClaimRuns = %v, %v; want no answers and an error (%v)", what, rout, err, want)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	down, err := redisbackend.New(newClient(t, dead, func(o *redis.Options) { o.MaxRetries = -1 }), nil)
	if err != nil {
		t.Fatal(err)
	}
	check("no server", down, nil)
	b := newBackend(t, addr, freshPrefix(t, addr), nil)
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	check("closed", b, anarchon.ErrClosed)
}

// A call that fails inside a batch script fails alone: a key of the wrong
// type (an error reply of redis.call) and a record that is not JSON (a
// Lua error of the script itself) each give their own claim an error,
// and the other claims of the same script are answered.
func TestClaimBatchCallErrorIsItsOwn(t *testing.T) {
	addr := redisAddr(t)
	prefix := freshPrefix(t, addr)
	b := newBackend(t, addr, prefix, nil)
	client := newClient(t, addr, nil)
	ctx := t.Context()
	slot := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	if err := client.Set(ctx, "{"+prefix+":wrongtype}:run", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.HSet(ctx, "{"+prefix+":notjson}:run", strconv.FormatInt(slot, 10), "{").Err(); err != nil {
		t.Fatal(err)
	}
	in := []anarchon.ClaimInput{
		{Job: "a", Slot: slot, Token: "t", InstanceID: "i"},
		{Job: "wrongtype", Slot: slot, Token: "t", InstanceID: "i"},
		{Job: "b", Slot: slot, Token: "t", InstanceID: "i"},
		{Job: "notjson", Slot: slot, Token: "t", InstanceID: "i"},
		{Job: "c", Slot: slot, Token: "t", InstanceID: "i"},
	}
	out, err := b.ClaimBatch(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range out {
		failed := in[i].Job == "wrongtype" || in[i].Job == "notjson"
		if failed && (a.Err == nil || a.Won) {
			t.Errorf("claim of %q: %v, %v; want its own error", in[i].Job, a.Won, a.Err)
		}
		if !failed && (a.Err != nil || !a.Won) {
			t.Errorf("claim of %q: %v, %v; want won", in[i].Job, a.Won, a.Err)
		}
	}
	if err := out[1].Err; err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("claim of a key of the wrong type: %v; want the server's WRONGTYPE", err)
	}
}

// A batch reads the server's clock once for all its calls (luaArgs in
// scripts.go): the 512 lease claims of one script get one lease end,
// although the script runs for several milliseconds (BENCHMARKS.md §1:
// 15.0–15.3 µs of the server's time per lease claim of a batch). With a
// TIME call per claim, as before, their ends spread over those
// milliseconds.
func TestBatchReadsTheClockOnce(t *testing.T) {
	addr := redisAddr(t)
	b := newBackend(t, addr, freshPrefix(t, addr), nil)
	ctx := t.Context()
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	in := make([]anarchon.RunClaim, 512)
	for i := range in {
		in[i] = anarchon.RunClaim{
			ClaimInput: anarchon.ClaimInput{Job: fmt.Sprintf("clock-%03d", i), Slot: slot, Token: randToken(), InstanceID: "a"},
			Lease:      time.Minute,
		}
	}
	out, err := b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	ends := map[time.Time]int{}
	for i, a := range out {
		if a.Err != nil || a.Outcome.Kind != anarchon.OutcomeWon {
			t.Fatalf("claim %d: %+v, %v; want won", i, a.Outcome, a.Err)
		}
		ends[a.Outcome.LeaseUntil]++
	}
	if len(ends) != 1 {
		t.Errorf("512 claims of one batch script got %d lease ends (%v), want 1", len(ends), ends)
	}
}
