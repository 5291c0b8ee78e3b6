package natsbackend_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkClaim measures, in the same run and on the same connection and
// bucket, a winning anarchon Claim and a raw KV Create of a fresh key, and
// reports both and their ratio (claim-ns/op, create-ns/op,
// claim/create). A winning Claim is a KV Get of the job's state and a KV
// Create (the clock check is answered from the cached sample, which the
// loop keeps fresh), so the ratio is about two.
func BenchmarkClaim(b *testing.B) {
	ctx := context.Background()
	be, kv := benchBackend(b)
	val := []byte(`{"t":"0123456789abcdef01234567","i":"bench"}`)
	var claimT, createT time.Duration
	i := 0
	for b.Loop() {
		i++
		t0 := time.Now()
		ok, err := be.Claim(ctx, anarchon.ClaimInput{Job: "bench", Slot: int64(i), Token: "0123456789abcdef01234567", InstanceID: "bench"})
		t1 := time.Now()
		if err != nil || !ok {
			b.Fatalf("Claim = %v, %v", ok, err)
		}
		if _, err := kv.Create(ctx, "x.bench."+strconv.Itoa(i), val); err != nil {
			b.Fatal(err)
		}
		claimT += t1.Sub(t0)
		createT += time.Since(t1)
	}
	b.ReportMetric(float64(claimT.Nanoseconds())/float64(i), "claim-ns/op")
	b.ReportMetric(float64(createT.Nanoseconds())/float64(i), "create-ns/op")
	b.ReportMetric(float64(claimT)/float64(createT), "claim/create")
}

// BenchmarkRunStoreClaim measures a winning lease claim (RunStore.Claim of
// a fresh slot, 30 s lease, overlap allowed, as the first claimer of a
// slot makes it) and a backup's claim of the same slot (the outcome
// running), and reports both beside a raw KV Create of a fresh key
// (won-ns/op, running-ns/op, create-ns/op, won/create).
func BenchmarkRunStoreClaim(b *testing.B) {
	ctx := context.Background()
	be, kv := benchBackend(b)
	runs := be.Runs()
	val := []byte(`{"st":"running","t":"0123456789abcdef01234567","i":"bench","a":1,"l":30000}`)
	claim := func(slot int64, token string) anarchon.RunClaim {
		return anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "bench", Slot: slot, Token: token, InstanceID: token},
			Lease: 30 * time.Second, AllowOverlap: true, MaxAttempts: 3}
	}
	var wonT, runT, createT time.Duration
	i := 0
	for b.Loop() {
		i++
		t0 := time.Now()
		out, err := runs.Claim(ctx, claim(int64(i), "a"+strconv.Itoa(i)))
		t1 := time.Now()
		if err != nil || out.Kind != anarchon.OutcomeWon {
			b.Fatalf("first claim = %v, %v", out.Kind, err)
		}
		out, err = runs.Claim(ctx, claim(int64(i), "b"+strconv.Itoa(i)))
		t2 := time.Now()
		if err != nil || out.Kind != anarchon.OutcomeRunning {
			b.Fatalf("backup claim = %v, %v", out.Kind, err)
		}
		if _, err := kv.Create(ctx, "x.bench."+strconv.Itoa(i), val); err != nil {
			b.Fatal(err)
		}
		wonT += t1.Sub(t0)
		runT += t2.Sub(t1)
		createT += time.Since(t2)
	}
	b.ReportMetric(float64(wonT.Nanoseconds())/float64(i), "won-ns/op")
	b.ReportMetric(float64(runT.Nanoseconds())/float64(i), "running-ns/op")
	b.ReportMetric(float64(createT.Nanoseconds())/float64(i), "create-ns/op")
	b.ReportMetric(float64(wonT)/float64(createT), "won/create")
}

// benchBackend connects to the test server, makes an initialized backend
// on a fresh bucket and returns it with that bucket's KV handle, for the
// raw operations a benchmark compares with. The connection closes with b.
func benchBackend(b *testing.B) (*natsbackend.Backend, jetstream.KeyValue) {
	b.Helper()
	url := natsURL(b)
	o := freshOptions(b, url)
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	be, err := natsbackend.New(nc, o)
	if err != nil {
		b.Fatal(err)
	}
	if err := be.Init(context.Background()); err != nil {
		b.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), o.Bucket)
	if err != nil {
		b.Fatal(err)
	}
	return be, kv
}
