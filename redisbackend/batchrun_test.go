package redisbackend_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

// runBatchers returns b's HeartbeatBatcher, ResultBatcher and
// FinishBatcher.
func runBatchers(t *testing.T, b *redisbackend.Backend) (anarchon.HeartbeatBatcher, anarchon.ResultBatcher, anarchon.FinishBatcher) {
	t.Helper()
	hb, ok1 := b.Runs().(anarchon.HeartbeatBatcher)
	rb, ok2 := anarchon.Backend(b).(anarchon.ResultBatcher)
	fb, ok3 := b.Runs().(anarchon.FinishBatcher)
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("HeartbeatBatcher %v, ResultBatcher %v, FinishBatcher %v; want all", ok1, ok2, ok3)
	}
	return hb, rb, fb
}

// leaseMany wins a lease on each of n slots (of n jobs, or of one job)
// with one ClaimRuns call and returns the claims.
func leaseMany(t *testing.T, b *redisbackend.Backend, n int, slot int64, job func(i int) string) []anarchon.RunClaim {
	t.Helper()
	in := make([]anarchon.RunClaim, n)
	for i := range in {
		in[i] = anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job(i), Slot: slot + int64(i)*1000, Token: randToken(), InstanceID: "a"},
			Lease: time.Minute, AllowOverlap: true}
	}
	out, err := b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range out {
		if a.Err != nil || a.Outcome.Kind != anarchon.OutcomeWon {
			t.Fatalf("lease claim %d: %+v", i, a)
		}
	}
	return in
}

func beatsOf(rc []anarchon.RunClaim) []anarchon.HeartbeatInput {
	in := make([]anarchon.HeartbeatInput, len(rc))
	for i, c := range rc {
		in[i] = anarchon.HeartbeatInput{Job: c.Job, Slot: c.Slot, Token: c.Token, Lease: time.Minute}
	}
	return in
}

func resultsOf(cs []anarchon.ClaimInput, status anarchon.Status) []anarchon.SaveResultInput {
	in := make([]anarchon.SaveResultInput, len(cs))
	now := time.Now()
	for i, c := range cs {
		in[i] = anarchon.SaveResultInput{Job: c.Job, HistorySize: 10, Result: anarchon.StoredResult{
			Slot: c.Slot, Token: c.Token, InstanceID: c.InstanceID, Attempt: 1, Status: status,
			StartedAt: now.Add(-time.Second), FinishedAt: now}}
	}
	return in
}

func claimInputs(rc []anarchon.RunClaim) []anarchon.ClaimInput {
	out := make([]anarchon.ClaimInput, len(rc))
	for i, c := range rc {
		out[i] = c.ClaimInput
	}
	return out
}

// A batch of 100 heartbeats, results or finishes, of 100 jobs or of one
// job, is one pipeline of one script, the batch form of the call's
// script: one round trip and one command, whatever its size.
// A refused entry (a bad lease) sends nothing; a server that lost its
// script cache costs one more pipeline (EVAL after NOSCRIPT).
func TestRunBatchRoundTrips(t *testing.T) {
	addr := redisAddr(t)
	defer redisbackend.SetEpochCheckEvery(time.Hour)() // no sentinel read among the counted commands
	hook := &countHook{}
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
	hb, rb, fb := runBatchers(t, b)
	check := func(what string, wantPipelines, wantPiped int64) {
		t.Helper()
		singles, pipelines, piped := hook.trips()
		if singles != 0 || pipelines != wantPipelines || piped != wantPiped {
			t.Errorf("%s: %d single commands and %d pipelines of %d commands; want 0 and %d of %d",
				what, singles, pipelines, piped, wantPipelines, wantPiped)
		}
	}
	held := func(what string, out []anarchon.HeldAnswer, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for i, a := range out {
			if a.Err != nil || !a.Held {
				t.Fatalf("%s: entry %d: %+v, want held", what, i, a)
			}
		}
	}
	const n = 100
	slot := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	for _, tc := range []struct {
		name string
		job  func(i int) string
	}{
		{"100 jobs", func(i int) string { return fmt.Sprintf("job-%d", i) }},
		{"one job", func(int) string { return "one" }},
	} {
		slot += 1000 * n
		leases := leaseMany(t, b, n, slot, tc.job)
		hook.trips()

		beats := beatsOf(leases)
		out, err := hb.Heartbeats(ctx, beats)
		held(tc.name+": heartbeats", out, err)
		check(tc.name+": heartbeats", 1, 1)

		beats[0].Lease = 0 // refused before any I/O
		out, err = hb.Heartbeats(ctx, beats)
		if err != nil || out[0].Err == nil || out[0].Held {
			t.Fatalf("%s: heartbeat with a zero lease: %+v, %v; want its own error", tc.name, out[0], err)
		}
		held(tc.name+": heartbeats after a refused one", out[1:], nil)
		check(tc.name+": heartbeats with a refused one", 1, 1)

		out, err = fb.FinishResults(ctx, resultsOf(claimInputs(leases), anarchon.StatusSuccess))
		held(tc.name+": finishes", out, err)
		check(tc.name+": finishes", 1, 1)

		// Plain runs: claims, then their results.
		var plain []anarchon.ClaimInput
		for i := range n {
			plain = append(plain, anarchon.ClaimInput{Job: tc.job(i), Slot: slot + int64(n+i)*1000, Token: randToken(), InstanceID: "a"})
		}
		if _, err := b.ClaimBatch(ctx, plain); err != nil {
			t.Fatal(err)
		}
		hook.trips()
		errs, err := rb.SaveResults(ctx, resultsOf(plain, anarchon.StatusSuccess))
		if err != nil || len(errs) != n {
			t.Fatalf("%s: SaveResults = %d errors, %v", tc.name, len(errs), err)
		}
		for i, e := range errs {
			if e != nil {
				t.Fatalf("%s: result %d: %v", tc.name, i, e)
			}
		}
		check(tc.name+": results", 1, 1)
	}

	slot += 1000 * n
	leases := leaseMany(t, b, n, slot, func(i int) string { return fmt.Sprintf("job-%d", i) })
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	hook.trips()
	out, err := hb.Heartbeats(ctx, beatsOf(leases))
	held("heartbeats after SCRIPT FLUSH", out, err)
	check("heartbeats after SCRIPT FLUSH", 2, 2)
}

// Each answer of a batch is what the single call gives for the same
// input in the same state: both paths meet every case on their own key
// prefix, and their answers and the history they leave are compared.
func TestRunBatchAnswersAsSingle(t *testing.T) {
	addr := redisAddr(t)
	ctx := t.Context()
	slot := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	type answer struct {
		held, err bool
	}
	held := func(ok bool, err error) answer { return answer{ok, err != nil} }
	run := func(batch bool) (answers []answer, history map[string][]anarchon.RunRecord) {
		b := newBackend(t, addr, freshPrefix(t, addr), nil)
		hb, rb, fb := runBatchers(t, b)
		runs := b.Runs()
		claim := func(job string, s int64, tok string) {
			o, err := runs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: s, Token: tok, InstanceID: "a"}, Lease: time.Minute, AllowOverlap: true})
			if err != nil || o.Kind != anarchon.OutcomeWon {
				t.Fatalf("claim: %+v, %v", o, err)
			}
		}
		claim("l", slot, "held")
		claim("l", slot+1000, "released")
		claim("m", slot, "done")
		if ok, err := runs.Release(ctx, anarchon.ReleaseInput{Job: "l", Slot: slot + 1000, Token: "released"}); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if ok, err := runs.Finish(ctx, anarchon.FinishInput{Job: "m", Slot: slot, Token: "done", Status: anarchon.StatusSuccess}); !ok || err != nil {
			t.Fatal(ok, err)
		}
		beats := []anarchon.HeartbeatInput{
			{Job: "l", Slot: slot, Token: "held", Lease: time.Minute},            // held
			{Job: "l", Slot: slot, Token: "other", Lease: time.Minute},           // another token
			{Job: "l", Slot: slot + 1000, Token: "released", Lease: time.Minute}, // released
			{Job: "m", Slot: slot, Token: "done", Lease: time.Minute},            // finished
			{Job: "l", Slot: slot + 5000, Token: "held", Lease: time.Minute},     // never claimed
			{Job: "l", Slot: slot, Token: "held", Lease: 0},                      // bad lease
			{Job: "", Slot: slot, Token: "held", Lease: time.Minute},             // bad job
		}
		finishes := []anarchon.SaveResultInput{
			{Job: "l", Result: anarchon.StoredResult{Slot: slot, Token: "held", InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}},
			{Job: "l", Result: anarchon.StoredResult{Slot: slot, Token: "held", InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}}, // repeat
			{Job: "l", Result: anarchon.StoredResult{Slot: slot + 1000, Token: "stranger", InstanceID: "b", Attempt: 1, Status: anarchon.StatusError}},
			{Job: "l", Result: anarchon.StoredResult{Slot: slot + 1000, Token: "released", InstanceID: "a", Attempt: 1, Status: anarchon.StatusError}},
			{Job: "l", Result: anarchon.StoredResult{Slot: slot + 2000, Token: "x", InstanceID: "a", Attempt: 1}},                    // no status
			{Job: "l", Result: anarchon.StoredResult{Slot: slot + 2000, Token: "x", Status: anarchon.StatusSuccess}, HistoryTTL: -1}, // bad TTL
		}
		results := []anarchon.SaveResultInput{
			{Job: "p", HistorySize: 1, Result: anarchon.StoredResult{Slot: slot, Token: "p1", InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}},
			{Job: "p", HistorySize: 1, Result: anarchon.StoredResult{Slot: slot + 1000, Token: "p2", InstanceID: "a", Attempt: 1, Status: anarchon.StatusError}}, // trims p1
			{Job: "", Result: anarchon.StoredResult{Slot: slot, Token: "p1", Status: anarchon.StatusSuccess}},
			{Job: "p", Result: anarchon.StoredResult{Slot: redisbackend.MaxSlot + 1, Token: "p1", Status: anarchon.StatusSuccess}},
		}
		for _, c := range []anarchon.ClaimInput{{Job: "p", Slot: slot, Token: "p1", InstanceID: "a"}, {Job: "p", Slot: slot + 1000, Token: "p2", InstanceID: "a"}} {
			if ok, err := b.Claim(ctx, c); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
		if batch {
			out, err := hb.Heartbeats(ctx, beats)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range out {
				answers = append(answers, held(a.Held, a.Err))
			}
			// One call per entry whose answer depends on an earlier one.
			for _, part := range [][]anarchon.SaveResultInput{finishes[:1], finishes[1:]} {
				out, err = fb.FinishResults(ctx, part)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range out {
					answers = append(answers, held(a.Held, a.Err))
				}
			}
			errs, err := rb.SaveResults(ctx, results)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range errs {
				answers = append(answers, held(false, e))
			}
		} else {
			for _, in := range beats {
				answers = append(answers, held(runs.Heartbeat(ctx, in)))
			}
			for _, in := range finishes {
				answers = append(answers, held(runs.(anarchon.ResultFinisher).FinishResult(ctx, in)))
			}
			for _, in := range results {
				answers = append(answers, held(false, b.SaveResult(ctx, in)))
			}
		}
		history = map[string][]anarchon.RunRecord{}
		for _, job := range []string{"l", "m", "p"} {
			recs, err := b.History(ctx, job, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := range recs { // times differ between the two runs
				recs[i].ClaimedAt, recs[i].StartedAt, recs[i].FinishedAt = time.Time{}, time.Time{}, time.Time{}
			}
			history[job] = recs
		}
		return answers, history
	}
	want, wantHist := run(false)
	got, gotHist := run(true)
	T, F, E := answer{held: true}, answer{}, answer{err: true}
	expect := []answer{T, F, F, F, F, E, E, T, T, F, T, E, E, F, F, E, E}
	if fmt.Sprint(want) != fmt.Sprint(expect) {
		t.Errorf("single calls answered %v, want %v", want, expect)
	}
	if len(got) != len(want) {
		t.Fatalf("%d batch answers, %d single ones", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: batch answered %+v, a single call %+v", i, got[i], want[i])
		}
	}
	for job, w := range wantHist {
		if fmt.Sprint(gotHist[job]) != fmt.Sprint(w) {
			t.Errorf("history of %s: after the batches %+v, after single calls %+v", job, gotHist[job], w)
		}
	}
}

// With Options.Replicas a batch of heartbeats or finishes ends its
// pipeline with one WAIT: without a replica every held entry fails with
// ErrNotReplicated, exactly as its single call does, and an entry that
// did not hold its run answers false; with a replica attached all
// succeed, and the replica has the finishes. Results, like SaveResult,
// wait for no replica.
func TestRunBatchReplicas(t *testing.T) {
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli()
	job := func(i int) string { return fmt.Sprintf("job-%d", i%3) }
	shortfall := func(t *testing.T, plain, waiting *redisbackend.Backend) {
		ctx := t.Context()
		hb, _, fb := runBatchers(t, waiting)
		leases := leaseMany(t, plain, 4, slot, job)
		beats := append(beatsOf(leases), anarchon.HeartbeatInput{Job: "job-0", Slot: slot, Token: "other", Lease: time.Minute})
		out, err := hb.Heartbeats(ctx, beats)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range out {
			single, serr := waiting.Runs().Heartbeat(ctx, beats[i])
			if a.Held != single || errors.Is(a.Err, redisbackend.ErrNotReplicated) != errors.Is(serr, redisbackend.ErrNotReplicated) {
				t.Errorf("heartbeat %d: batch %v, %v; single %v, %v", i, a.Held, a.Err, single, serr)
			}
			if wantErr := i < len(leases); errors.Is(a.Err, redisbackend.ErrNotReplicated) != wantErr {
				t.Errorf("heartbeat %d without replicas: %v, %v; want ErrNotReplicated: %v", i, a.Held, a.Err, wantErr)
			}
		}
		fin := resultsOf(claimInputs(leases), anarchon.StatusSuccess)
		fout, err := fb.FinishResults(ctx, fin)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range fout {
			if a.Held || !errors.Is(a.Err, redisbackend.ErrNotReplicated) {
				t.Errorf("finish %d without replicas: %v, %v; want false, ErrNotReplicated", i, a.Held, a.Err)
			}
			// The finish stands on the primary; a repeat answers as the
			// first did, alone as in a batch.
			if ok, err := waiting.Runs().(anarchon.ResultFinisher).FinishResult(ctx, fin[i]); ok || !errors.Is(err, redisbackend.ErrNotReplicated) {
				t.Errorf("finish %d repeated alone: %v, %v; want false, ErrNotReplicated", i, ok, err)
			}
		}
	}
	t.Run("shortfall", func(t *testing.T) {
		addr := startServer(t)
		prefix := freshPrefix(t, addr)
		shortfall(t, newBackend(t, addr, prefix, nil),
			newBackend(t, addr, prefix, &redisbackend.Options{Replicas: 1, ReplicaTimeout: 100 * time.Millisecond}))
	})
	t.Run("replica", func(t *testing.T) {
		primary := startServer(t)
		replica := startServer(t, "--replicaof", strings.Replace(primary, ":", " ", 1))
		waitInfo(t, replica, "replication", "master_link_status", "up")
		waitInfo(t, primary, "replication", "connected_slaves", "1")
		prefix := freshPrefix(t, primary)
		hook := &countHook{}
		client := newClient(t, primary, func(o *redis.Options) { o.PoolSize = 1 }) // one connection: see TestClaimBatchRoundTrips
		client.AddHook(hook)
		b, err := redisbackend.New(client, &redisbackend.Options{Prefix: prefix, Replicas: 1, ReplicaTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if err := b.Init(ctx); err != nil {
			t.Fatal(err)
		}
		hb, rb, fb := runBatchers(t, b)
		leases := leaseMany(t, newBackend(t, primary, prefix, nil), 4, slot, job)
		if _, err := client.Pipelined(ctx, func(p redis.Pipeliner) error { p.Ping(ctx); return nil }); err != nil {
			t.Fatal(err)
		}
		hook.trips()
		out, err := hb.Heartbeats(ctx, beatsOf(leases))
		for i, a := range out {
			if err != nil || !a.Held || a.Err != nil {
				t.Errorf("heartbeat %d with one replica: %+v, %v; want held", i, a, err)
			}
		}
		if singles, pipelines, piped := hook.trips(); singles != 0 || pipelines != 1 || piped != 2 {
			t.Errorf("heartbeats: %d single commands and %d pipelines of %d commands; want one pipeline of 2 (the batch script and one WAIT)",
				singles, pipelines, piped)
		}
		out, err = fb.FinishResults(ctx, resultsOf(claimInputs(leases), anarchon.StatusSuccess))
		for i, a := range out {
			if err != nil || !a.Held || a.Err != nil {
				t.Errorf("finish %d with one replica: %+v, %v; want held", i, a, err)
			}
		}
		plain := []anarchon.ClaimInput{{Job: "p", Slot: slot, Token: "p1", InstanceID: "a"}}
		if _, err := newBackend(t, primary, prefix, nil).Claim(ctx, plain[0]); err != nil {
			t.Fatal(err)
		}
		hook.trips()
		if errs, err := rb.SaveResults(ctx, resultsOf(plain, anarchon.StatusSuccess)); err != nil || errs[0] != nil {
			t.Fatalf("SaveResults: %v, %v", errs, err)
		}
		if _, pipelines, piped := hook.trips(); pipelines != 1 || piped != 1 {
			t.Errorf("results: %d pipelines of %d commands; want one of 1 (no WAIT)", pipelines, piped)
		}
		rc := newClient(t, replica, nil)
		if err := rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
			t.Fatal(err)
		}
		promoted, err := redisbackend.New(rc, &redisbackend.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range leases {
			o, err := promoted.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: c.Job, Slot: c.Slot, Token: "b", InstanceID: "b"}, Lease: time.Minute})
			if err != nil || o.Kind != anarchon.OutcomeDone || o.Status != anarchon.StatusSuccess {
				t.Errorf("claim of %s slot %d on the promoted replica: %+v, %v; want done (the finish was replicated)", c.Job, c.Slot, o, err)
			}
		}
	})
	t.Run("cluster", func(t *testing.T) {
		cc := startCluster(t)
		plain, err := redisbackend.New(cc, &redisbackend.Options{Prefix: "cl"})
		if err != nil {
			t.Fatal(err)
		}
		waiting, err := redisbackend.New(cc, &redisbackend.Options{Prefix: "cl", Replicas: 1, ReplicaTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		shortfall(t, plain, waiting)
	})
}

// A batch that reaches no server has no answer: Heartbeats, SaveResults
// and FinishResults return an error and no answers, so the caller treats
// every entry as a failed single call; after Close they return
// anarchon.ErrClosed.
func TestRunBatchNoAnswer(t *testing.T) {
	addr := redisAddr(t)
	ctx := t.Context()
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	res := resultsOf([]anarchon.ClaimInput{{Job: "a", Slot: slot, Token: "t"}, {Job: "b", Slot: slot, Token: "t"}}, anarchon.StatusSuccess)
	beats := []anarchon.HeartbeatInput{{Job: "a", Slot: slot, Token: "t", Lease: time.Minute}}
	check := func(what string, b *redisbackend.Backend, want error) {
		t.Helper()
		hb, rb, fb := runBatchers(t, b)
		if out, err := hb.Heartbeats(ctx, beats); err == nil || out != nil || (want != nil && !errors.Is(err, want)) {
			t.Errorf("%s: Heartbeats = %v, %v; want no answers and an error (%v)", what, out, err, want)
		}
		if out, err := rb.SaveResults(ctx, res); err == nil || out != nil || (want != nil && !errors.Is(err, want)) {
			t.Errorf("%s: SaveResults = %v, %v; want no answers and an error (%v)", what, out, err, want)
		}
		if out, err := fb.FinishResults(ctx, res); err == nil || out != nil || (want != nil && !errors.Is(err, want)) {
			t.Errorf("%s: FinishResults = %v, %v; want no answers and an error (%v)", what, out, err, want)
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
