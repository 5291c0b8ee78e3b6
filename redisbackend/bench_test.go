package redisbackend_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// BenchmarkClaim measures anarchon's plain claim (one EVALSHA) and a raw
// SET key value NX PX on the same client and server in the same run, and
// reports their ratio as claim/setnx (the goal is ≤ 1.2: one round trip, a
// cheap script). ns/op is the sum of both per iteration.
func BenchmarkClaim(b *testing.B) {
	addr := redisAddr(b)
	prefix := freshPrefix(b, addr)
	be := newBackend(b, addr, prefix, nil)
	client := be.Client()
	ctx := b.Context()
	slot0 := time.Now().Truncate(time.Minute).UnixMilli()
	tok := randToken()
	// Warm up both paths (connection, script cache).
	for i := range 100 {
		if _, err := be.Claim(ctx, anarchon.ClaimInput{Job: "bench", Slot: slot0 - int64(i+1)*1000, Token: tok, InstanceID: "a"}); err != nil {
			b.Fatal(err)
		}
		client.SetNX(ctx, "{"+prefix+":raw}:w"+strconv.Itoa(i), tok, time.Minute)
	}
	var claim, setnx time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		ok, err := be.Claim(ctx, anarchon.ClaimInput{Job: "bench", Slot: slot0 + int64(i)*1000, Token: tok, InstanceID: "a", HistorySize: 100})
		t1 := time.Now()
		if err != nil || !ok {
			b.Fatalf("claim: %v %v", ok, err)
		}
		ok, err = client.SetNX(ctx, "{"+prefix+":raw}:"+strconv.Itoa(i), tok, time.Minute).Result()
		t2 := time.Now()
		if err != nil || !ok {
			b.Fatalf("set nx: %v %v", ok, err)
		}
		claim += t1.Sub(t0)
		setnx += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(claim.Nanoseconds())/n, "ns/claim")
	b.ReportMetric(float64(setnx.Nanoseconds())/n, "ns/setnx")
	b.ReportMetric(float64(claim)/float64(setnx), "claim/setnx")
}
