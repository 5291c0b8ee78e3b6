package natsbackend_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsURL returns the test server's URL from ANARCHON_TEST_NATS_URL. It
// skips the test when the variable is unset, or fails it under CI=true.
func natsURL(t testing.TB) string {
	t.Helper()
	return natsbackend.ServerURL(t)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// freshOptions returns options naming a bucket, a stream and a subject no
// other test uses, and deletes them when t ends.
func freshOptions(t testing.TB, url string) *natsbackend.Options {
	t.Helper()
	id := randHex(6)
	o := &natsbackend.Options{
		Bucket:         "anarchon_t_" + id,
		HistoryStream:  "ANARCHON_T_" + id,
		HistorySubject: "anarchon.t." + id,
	}
	t.Cleanup(func() { dropStore(t, url, o) })
	return o
}

func dropStore(t testing.TB, url string, o *natsbackend.Options) {
	nc, err := nats.Connect(url)
	if err != nil {
		t.Errorf("cleanup: connect: %v", err)
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := js.DeleteKeyValue(ctx, o.Bucket); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("cleanup: delete bucket %s: %v", o.Bucket, err)
	}
	if err := js.DeleteStream(ctx, o.HistoryStream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("cleanup: delete stream %s: %v", o.HistoryStream, err)
	}
}

// openN opens n backends, each on its own connection, sharing one fresh
// store, and closes them when t ends.
func openN(t testing.TB, url string, o *natsbackend.Options, n int) []*natsbackend.Backend {
	t.Helper()
	bs := make([]*natsbackend.Backend, n)
	for i := range bs {
		b, err := natsbackend.Open(url, o)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = b.Close(context.Background()) })
		bs[i] = b
	}
	return bs
}

func in(job string, slot int64, tok, inst string) anarchon.ClaimInput {
	return anarchon.ClaimInput{Job: job, Slot: slot, Token: tok, InstanceID: inst, HistorySize: 10}
}

func TestClaimRepeatAndOddNames(t *testing.T) {
	url := natsURL(t)
	o := freshOptions(t, url)
	bs := openN(t, url, o, 2)
	ctx := t.Context()
	names := []string{
		"plain", "a.b.c", "with space", `"quoted" 'name'`, "*", ">", "ΩμέγαÉé日本", "tab\tand\nnewline",
		strings.Repeat("é", 200), "a", "A", // A and a must stay apart
	}
	for _, name := range names {
		tok := randHex(8)
		ok, err := bs[0].Claim(ctx, in(name, 1000, tok, "a"))
		if err != nil || !ok {
			t.Fatalf("Claim(%q) = %v, %v; want true", name, ok, err)
		}
		if ok, err := bs[1].Claim(ctx, in(name, 1000, tok, "a")); err != nil || !ok {
			t.Errorf("repeat Claim(%q) same token = %v, %v; want true", name, ok, err)
		}
		if ok, err := bs[1].Claim(ctx, in(name, 1000, randHex(8), "b")); err != nil || ok {
			t.Errorf("Claim(%q) other token = %v, %v; want false", name, ok, err)
		}
		if err := bs[0].RecordClaim(ctx, in(name, 1000, tok, "a")); err != nil {
			t.Fatal(err)
		}
		recs, err := bs[1].History(ctx, name, 0)
		if err != nil || len(recs) != 1 || recs[0].Job != name || recs[0].Token != tok || recs[0].Status != anarchon.StatusRunning {
			t.Errorf("History(%q) = %+v, %v; want one running record", name, recs, err)
		}
	}
}

func TestBadInput(t *testing.T) {
	if _, err := natsbackend.New(nil, nil); !errors.Is(err, natsbackend.ErrInvalid) {
		t.Errorf("New(nil) error %v, want ErrInvalid", err)
	}
	for _, o := range []natsbackend.Options{
		{ClaimTTL: time.Millisecond}, {Bucket: "a.b"}, {HistoryStream: "a b"}, {HistorySubject: "a.>"}, {Replicas: 7}, {Replicas: -2},
	} {
		if _, err := natsbackend.Open("nats://127.0.0.1:1", &o); !errors.Is(err, natsbackend.ErrInvalid) {
			t.Errorf("Open with %+v: error %v, want ErrInvalid", o, err)
		}
	}
	url := natsURL(t)
	o := freshOptions(t, url)
	b := openN(t, url, o, 1)[0]
	ctx := t.Context()
	if _, err := b.Claim(ctx, in("", 1, "t", "a")); !errors.Is(err, natsbackend.ErrInvalid) {
		t.Errorf("Claim with an empty job: %v, want ErrInvalid", err)
	}
	if _, err := b.Claim(ctx, in("j", 1, "", "a")); !errors.Is(err, natsbackend.ErrInvalid) {
		t.Errorf("Claim with an empty token: %v, want ErrInvalid", err)
	}
	if _, err := b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: in("j", 1, "t", "a")}); !errors.Is(err, natsbackend.ErrInvalid) {
		t.Errorf("RunStore.Claim without a lease: %v, want ErrInvalid", err)
	}
	if err := b.CheckJob(anarchon.JobLimits{Job: "j", Lease: 8 * 24 * time.Hour}); !errors.Is(err, natsbackend.ErrInvalid) {
		t.Errorf("CheckJob with a lease above the TTL: %v, want ErrInvalid", err)
	}
	_ = b.Close(ctx)
	if _, err := b.Claim(ctx, in("j", 1, "t", "a")); !errors.Is(err, anarchon.ErrClosed) {
		t.Errorf("Claim after Close: %v, want ErrClosed", err)
	}
}

func TestOpenRedactsPassword(t *testing.T) {
	_, err := natsbackend.Open("nats://user:s3cret@127.0.0.1:1", nil, nats.Timeout(200*time.Millisecond))
	if err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error leaks the password: %v", err)
	}
	if !errors.Is(err, nats.ErrNoServers) {
		t.Errorf("error %v does not wrap nats.ErrNoServers", err)
	}
}

func TestBucketTTLMismatch(t *testing.T) {
	url := natsURL(t)
	o := freshOptions(t, url)
	o.ClaimTTL = time.Hour
	if err := openN(t, url, o, 1)[0].Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	longer := *o
	longer.ClaimTTL = 2 * time.Hour
	err := openN(t, url, &longer, 1)[0].Init(t.Context())
	if !errors.Is(err, natsbackend.ErrBucketMismatch) {
		t.Errorf("Init with a longer ClaimTTL than the bucket's: %v, want ErrBucketMismatch", err)
	}
	shorter := *o
	shorter.ClaimTTL = 30 * time.Minute
	if err := openN(t, url, &shorter, 1)[0].Init(t.Context()); err != nil {
		t.Errorf("Init with a shorter ClaimTTL than the bucket's: %v", err)
	}
}

func TestServerClock(t *testing.T) {
	url := natsURL(t)
	b := openN(t, url, freshOptions(t, url), 1)[0]
	before := time.Now()
	st, err := b.ServerTime(t.Context())
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	// Same machine: the server's clock is the test's clock.
	if st.Before(before.Add(-time.Second)) || st.After(after.Add(time.Second)) {
		t.Errorf("ServerTime %v outside [%v, %v]", st, before, after)
	}
}

// The claim path's requests are counted, since each is a round trip on
// the hot path: with a fresh sample of the server's clock (the ServerTime
// call before it), a plain claim of a new slot sends two (the read of the
// job's state and the Create), and a repeat that loses its Create three
// (the state, the Create, the read of the stored token). A claim key
// deleted by hand (a delete marker) is claimed again, as KV Create allows.
func TestClaimRequests(t *testing.T) {
	url := natsURL(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	o := freshOptions(t, url)
	b, err := natsbackend.New(nc, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	in := anarchon.ClaimInput{Job: "j", Slot: slot, Token: "a", InstanceID: "a"}
	for _, c := range []struct {
		what string
		want uint64
	}{{"a new slot", 2}, {"a repeat", 3}} {
		if _, err := b.ServerTime(ctx); err != nil {
			t.Fatal(err)
		}
		before := nc.Stats().OutMsgs
		if ok, err := b.Claim(ctx, in); err != nil || !ok {
			t.Fatalf("%s: Claim = %v, %v", c.what, ok, err)
		}
		if n := nc.Stats().OutMsgs - before; n != c.want {
			t.Errorf("%s: the claim sent %d requests, want %d", c.what, n, c.want)
		}
	}
	kv, err := jetStream(t, url).KeyValue(ctx, o.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "c.ag."+strconv.FormatInt(slot, 10)); err != nil { // "ag": "j" in base64url
		t.Fatal(err)
	}
	in.Token = "b"
	if ok, err := b.Claim(ctx, in); err != nil || !ok {
		t.Fatalf("claim of a deleted key = %v, %v; want a win", ok, err)
	}
}

// The lease claim's requests are counted as the plain claim's are
// (TestClaimRequests), with a fresh sample of the server's clock. The
// first claim of a new slot of a job without a job key sends seven, as
// many as when each waited for the one before: the run's Get with the
// job's state and job key read beside it, the Create, the job key's
// create, the claim record and the read-back of the lease's time stamp;
// a second slot of the job probes the first one listed, one more Get.
// (How many go in a row is what BenchmarkRunStoreClaim's times show.) A
// backup's claim of a run held on a live lease is answered by
// the run's Get, and sends at most the two side reads more, which it does
// not wait for (doc.go, "Round trips of a lease claim").
func TestRunStoreClaimRequests(t *testing.T) {
	url := natsURL(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b, err := natsbackend.New(nc, freshOptions(t, url))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	rs := b.Runs()
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	claim := func(s int64, tok string, overlap bool) (anarchon.ClaimOutcome, uint64) {
		t.Helper()
		if _, err := b.ServerTime(ctx); err != nil {
			t.Fatal(err)
		}
		before := nc.Stats().OutMsgs
		out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "j", Slot: s, Token: tok, InstanceID: tok},
			Lease: time.Hour, AllowOverlap: overlap})
		if err != nil {
			t.Fatalf("claim of slot %d by %s: %v", s, tok, err)
		}
		return out, nc.Stats().OutMsgs - before
	}
	if out, n := claim(slot, "a", true); out.Kind != anarchon.OutcomeWon || n != 7 {
		t.Errorf("first slot: %v, %d requests; want won, 7", out.Kind, n)
	}
	if out, n := claim(slot+1000, "a", true); out.Kind != anarchon.OutcomeWon || n != 8 {
		t.Errorf("second slot: %v, %d requests; want won, 8", out.Kind, n)
	}
	if out, n := claim(slot, "b", true); out.Kind != anarchon.OutcomeRunning || n < 1 || n > 3 {
		t.Errorf("backup's claim: %v, %d requests; want running, 1 to 3", out.Kind, n)
	}
	// Overlap refused: the three reads, the Create, both listed runs read
	// (each holds a live lease), the read-back that starts with the
	// commit, and the Update that settles the new run as skipped.
	if out, n := claim(slot+2000, "a", false); out.Kind != anarchon.OutcomeOverlap || n != 8 {
		t.Errorf("third slot, overlap refused: %v, %d requests; want overlap, 8", out.Kind, n)
	}
}

// A lease claim whose side read (the pause state and job key it reads
// beside the run) fails reads each key on its own, as it did before the
// reads went side by side: a new slot is still won and listed (a second
// slot with overlap refused is refused by it), and a paused job's new
// slot is still settled paused.
func TestRunStoreClaimSideReadFails(t *testing.T) {
	url := natsURL(t)
	b := openN(t, url, freshOptions(t, url), 1)[0]
	rs := b.Runs()
	ctx := t.Context()
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	defer natsbackend.SetSideReadFails(errors.New("side read refused by the test"))()
	claim := func(job string, s int64, tok string) anarchon.ClaimOutcome {
		t.Helper()
		out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: s, Token: tok, InstanceID: tok},
			Lease: time.Hour})
		if err != nil {
			t.Fatalf("claim of %s slot %d: %v", job, s, err)
		}
		return out
	}
	if out := claim("j", slot, "a"); out.Kind != anarchon.OutcomeWon {
		t.Errorf("first slot: %v, want won", out.Kind)
	}
	if out := claim("j", slot+1000, "b"); out.Kind != anarchon.OutcomeOverlap {
		t.Errorf("second slot beside a live run, overlap refused: %v, want overlap", out.Kind)
	}
	if _, err := b.SetPaused(ctx, anarchon.PauseInput{Job: "p", Paused: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	if out := claim("p", slot, "a"); out.Kind != anarchon.OutcomePaused {
		t.Errorf("a paused job's slot: %v, want paused", out.Kind)
	}
}
