package natsbackend_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
	"github.com/nats-io/nats.go/jetstream"
)

// A batch of 100 claims of 100 jobs sends one create per slot and one
// read of the 100 pause states and the 100 claim keys (the cached clock
// answers the never-early checks); repeating it is that one read alone,
// which finds every slot held (a burst's later waves, SPEC §4). 100 single
// claims send two requests each, three for a repeat. The lease claims of
// a burst (runs not claimed yet) read every run and state in one
// request, then create the runs and list them in their job keys with one
// read and an update each; the history record and the lease end are the
// single path's; the claims of
// runs another instance holds are answered from that one read and one
// read of their job keys.
func TestClaimBatchRequests(t *testing.T) {
	nc, b := openCounted(t)
	ctx := t.Context()
	const n = 100
	slot := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	batch := func(job string) []anarchon.ClaimInput {
		slot += 1000
		in := make([]anarchon.ClaimInput, n)
		for i := range in {
			in[i] = anarchon.ClaimInput{Job: fmt.Sprintf("%s-%d", job, i), Slot: slot, Token: "tok", InstanceID: "a"}
		}
		return in
	}
	sent := func(f func()) uint64 {
		t.Helper()
		if _, err := b.ServerTime(ctx); err != nil { // a fresh clock sample
			t.Fatal(err)
		}
		before := nc.Stats().OutMsgs
		f()
		return nc.Stats().OutMsgs - before
	}
	claims := func(in []anarchon.ClaimInput) {
		t.Helper()
		out, err := b.ClaimBatch(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range out {
			if !a.Won || a.Err != nil {
				t.Fatalf("claim %d: %+v", i, a)
			}
		}
	}
	in := batch("job")
	if got := sent(func() { claims(in) }); got != n+1 {
		t.Errorf("a batch of %d new slots sent %d requests, want %d", n, got, n+1)
	}
	if got := sent(func() { claims(in) }); got != 1 {
		t.Errorf("the batch repeated sent %d requests, want 1", got)
	}
	single := batch("job")
	if got := sent(func() {
		for _, c := range single {
			if ok, err := b.Claim(ctx, c); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
	}); got != 2*n {
		t.Errorf("%d single claims sent %d requests, want %d", n, got, 2*n)
	}

	runs := b.Runs().(anarchon.RunBatchClaimer)
	leases := func(in []anarchon.ClaimInput) []anarchon.RunClaim {
		rc := make([]anarchon.RunClaim, len(in))
		for i := range rc {
			rc[i] = anarchon.RunClaim{ClaimInput: in[i], Lease: time.Minute}
		}
		return rc
	}
	// won claims rc in one batch, which must win every slot.
	won := func(what string, rc []anarchon.RunClaim) {
		t.Helper()
		out, err := runs.ClaimRuns(ctx, rc)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range out {
			if a.Err != nil || a.Outcome.Kind != anarchon.OutcomeWon {
				t.Fatalf("%s %d: %+v", what, i, a)
			}
		}
	}
	held := leases(batch("lease"))
	batched := sent(func() { won("lease claim", held) })
	// Another instance's claims of the held runs are answered from the
	// batch's read, running, once one more read finds them listed in
	// their job keys: no request per slot.
	for i := range held {
		held[i].Token, held[i].InstanceID = "rival", "b"
	}
	if got := sent(func() {
		out, err := runs.ClaimRuns(ctx, held)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range out {
			if a.Err != nil || a.Outcome.Kind != anarchon.OutcomeRunning || a.Outcome.Holder != "a" {
				t.Fatalf("rival lease claim %d: %+v", i, a)
			}
		}
	}); got != 2 {
		t.Errorf("a batch of %d lease claims of runs held by another sent %d requests, want 2", n, got)
	}
	singles := sent(func() {
		for _, c := range leases(batch("other")) {
			if o, err := b.Runs().Claim(ctx, c); err != nil || o.Kind != anarchon.OutcomeWon {
				t.Fatal(o, err)
			}
		}
	})
	t.Logf("%d lease claims: %d requests in a batch, %d as single claims", n, batched, singles)
	// One read of the runs and states, a create per slot, one read of
	// the job keys (their runs: none listed yet), an update of each job
	// key, a claim record per slot and one read of the lease ends.
	if want := uint64(3*n + 3); batched > want {
		t.Errorf("a batch of %d lease claims sent %d requests, want at most %d (single claims: %d)", n, batched, want, singles)
	}
	// Later slots of the same jobs (overlap allowed) while the earlier
	// ones still run: each job key lists them all, but a commit without
	// the overlap check reads at most two of them (pruneProbes), so the
	// requests do not grow with the lists (10 listed runs of 100 jobs
	// would take 4 direct gets).
	var later uint64
	for range 10 {
		rc := leases(batch("lease"))
		for i := range rc {
			rc[i].AllowOverlap = true
		}
		later = sent(func() { won("later lease claim", rc) })
	}
	// The first batch's requests and one read of the probed runs.
	if want := uint64(3*n + 4); later > want {
		t.Errorf("a batch of %d lease claims of jobs listing 10 running slots each sent %d requests, want at most %d", n, later, want)
	}
}

// Each answer of a batch is what a single claim of the same input gives
// in the same state: the script is the same. Both paths meet every case
// on their own key prefix, and their answers are compared item by item.
func TestClaimBatchAnswersAsClaim(t *testing.T) {
	t.Run("fast path", testClaimBatchAnswersAsClaim)
	t.Run("KV API", func(t *testing.T) {
		defer natsbackend.SetNoFastPath(true)()
		testClaimBatchAnswersAsClaim(t)
	})
}

func testClaimBatchAnswersAsClaim(t *testing.T) {
	url := natsURL(t)
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
		{Job: "a", Slot: past, Token: ""},                               // bad input
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
	open := func() *natsbackend.Backend {
		b := openN(t, url, freshOptions(t, url), 1)[0]
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
	for _, b := range []*natsbackend.Backend{single, batched} {
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
	url := natsURL(t)
	o := freshOptions(t, url)
	const handles, racers, slots, jobs = 8, 16, 200, 7
	bs := openN(t, url, o, handles)
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

func claimOne(t *testing.T, ctx context.Context, b *natsbackend.Backend, lease bool, in anarchon.ClaimInput) bool {
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

func claimMany(t *testing.T, ctx context.Context, b *natsbackend.Backend, lease bool, idx []int, input func(int) anarchon.ClaimInput) []bool {
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

// A claim key deleted by hand (or aged out) is free again for a batch,
// as for a single claim: the create meets the delete marker, and the
// single path writes over it.
func TestClaimBatchDeletedKey(t *testing.T) {
	url := natsURL(t)
	o := freshOptions(t, url)
	b := openN(t, url, o, 1)[0]
	ctx := t.Context()
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	in := []anarchon.ClaimInput{{Job: "j", Slot: slot, Token: "a", InstanceID: "a"}}
	if out, err := b.ClaimBatch(ctx, in); err != nil || !out[0].Won {
		t.Fatalf("first claim: %+v, %v", out, err)
	}
	kv, err := jetStream(t, url).KeyValue(ctx, o.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "c.ag."+strconv.FormatInt(slot, 10)); err != nil { // "ag": "j" in base64url
		t.Fatal(err)
	}
	in[0].Token = "b"
	if out, err := b.ClaimBatch(ctx, in); err != nil || !out[0].Won || out[0].Err != nil {
		t.Fatalf("claim of a deleted key: %+v, %v; want a win", out, err)
	}
	in[0].Token = "c"
	if out, err := b.ClaimBatch(ctx, in); err != nil || out[0].Won || out[0].Err != nil {
		t.Fatalf("claim after the rewin: %+v, %v; want a loss", out, err)
	}
}

// On a bucket made beforehand without direct gets (the stream's
// AllowDirect off), a batch's reads fall back to the KV API, key by key,
// and answer as on the fast path.
func TestClaimBatchNoDirectGet(t *testing.T) {
	url := natsURL(t)
	o := freshOptions(t, url)
	_, err := jetStream(t, url).CreateStream(t.Context(), jetstream.StreamConfig{
		Name: "KV_" + o.Bucket, Subjects: []string{"$KV." + o.Bucket + ".>"},
		MaxMsgsPerSubject: 1, Discard: jetstream.DiscardNew, AllowRollup: true, DenyDelete: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	b := openN(t, url, o, 1)[0]
	ctx := t.Context()
	if _, err := b.SetPaused(ctx, anarchon.PauseInput{Job: "paused", Paused: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	in := []anarchon.ClaimInput{
		{Job: "a", Slot: slot, Token: "a"},
		{Job: "paused", Slot: slot, Token: "a"},
	}
	for _, c := range []struct {
		tok  string
		want []bool
	}{{"a", []bool{true, false}}, {"a", []bool{true, false}}, {"b", []bool{false, false}}} {
		for i := range in {
			in[i].Token = c.tok
		}
		out, err := b.ClaimBatch(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range out {
			if a.Err != nil || a.Won != c.want[i] {
				t.Errorf("token %s, claim %d: %+v, want won %v", c.tok, i, a, c.want[i])
			}
		}
	}
	out, err := b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(ctx, []anarchon.RunClaim{
		{ClaimInput: anarchon.ClaimInput{Job: "l", Slot: slot, Token: "a"}, Lease: time.Minute},
		{ClaimInput: anarchon.ClaimInput{Job: "paused", Slot: slot + 1000, Token: "a"}, Lease: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Err != nil || out[0].Outcome.Kind != anarchon.OutcomeWon || out[1].Err != nil || out[1].Outcome.Kind != anarchon.OutcomePaused {
		t.Errorf("lease claims: %+v, want won and paused", out)
	}
}

// After Close a batch has no answer: ClaimBatch and ClaimRuns return
// anarchon.ErrClosed and no answers.
func TestClaimBatchClosed(t *testing.T) {
	url := natsURL(t)
	b := openN(t, url, freshOptions(t, url), 1)[0]
	ctx := t.Context()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	in := []anarchon.ClaimInput{{Job: "a", Slot: slot, Token: "t"}}
	if out, err := b.ClaimBatch(ctx, in); out != nil || !errors.Is(err, anarchon.ErrClosed) {
		t.Errorf("ClaimBatch after Close = %v, %v; want no answers and ErrClosed", out, err)
	}
	out, err := b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(ctx, []anarchon.RunClaim{{ClaimInput: in[0], Lease: time.Minute}})
	if out != nil || !errors.Is(err, anarchon.ErrClosed) {
		t.Errorf("ClaimRuns after Close = %v, %v; want no answers and ErrClosed", out, err)
	}
}
