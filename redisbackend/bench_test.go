package redisbackend_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// BenchmarkClaim measures anarchon's plain claim (one EVALSHA) and a raw
// SET key value NX PX on the same client and server in the same run, and
// reports their ratio (the goal is ≤ 1.2: one round trip, a cheap script).
//
// Each iteration times one claim of a new slot and one SET NX of a new key,
// in alternating order so that neither always runs on the connection the
// other has just warmed. After the timed part, the claimed slot gets its
// result saved with a history of 100, as a scheduled job's slots do, so
// the job's keys stay at the size they have in production instead of
// growing by one record per iteration. The saves are not in the ratio.
//
// Metrics: claim-p50-us and setnx-p50-us (medians, µs);
// claim/setnx-pair, the median over iterations of each claim's time over
// the SET NX's beside it (the steadiest figure on a shared machine, since
// a slow moment slows both); claim/setnx-mean, the ratio of the means,
// which carries every scheduling hiccup of the run. There is no ratio of
// the medians: the call right after a save is slower, whichever it is, so
// each distribution has two modes and its median jumps between them from
// run to run. ns/op is the whole iteration, the save included.
func BenchmarkClaim(b *testing.B) {
	addr := redisAddr(b)
	prefix := freshPrefix(b, addr)
	be := newBackend(b, addr, prefix, nil)
	client := be.Client()
	ctx := b.Context()
	const history = 100
	slot0 := time.Now().Truncate(time.Minute).Add(-48 * time.Hour).UnixMilli() // every slot due: never early
	tok := randToken()
	claim := func(slot int64) {
		ok, err := be.Claim(ctx, anarchon.ClaimInput{Job: "bench", Slot: slot, Token: tok, InstanceID: "a", HistorySize: history})
		if err != nil || !ok {
			b.Fatalf("claim: %v %v", ok, err)
		}
	}
	save := func(slot int64) {
		r := anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}
		if err := be.SaveResult(ctx, anarchon.SaveResultInput{Job: "bench", Result: r, HistorySize: history}); err != nil {
			b.Fatal(err)
		}
	}
	setNX := func(key string) {
		ok, err := client.SetNX(ctx, "{"+prefix+":raw}:"+key, tok, time.Minute).Result()
		if err != nil || !ok {
			b.Fatalf("set nx: %v %v", ok, err)
		}
	}
	// Warm up both paths (connection, script cache) and fill the job's
	// history to its steady size.
	for i := range 2 * history {
		slot := slot0 - int64(2*history-i)*1000
		claim(slot)
		save(slot)
		setNX("w" + strconv.Itoa(i))
	}
	var claims, sets []time.Duration
	var pairs []float64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		slot := slot0 + int64(i)*1000
		key := strconv.Itoa(i)
		t0 := time.Now()
		if i%2 == 0 {
			claim(slot)
			t1 := time.Now()
			setNX(key)
			t2 := time.Now()
			claims, sets = append(claims, t1.Sub(t0)), append(sets, t2.Sub(t1))
		} else {
			setNX(key)
			t1 := time.Now()
			claim(slot)
			t2 := time.Now()
			sets, claims = append(sets, t1.Sub(t0)), append(claims, t2.Sub(t1))
		}
		pairs = append(pairs, float64(claims[i])/float64(sets[i]))
		save(slot)
	}
	b.StopTimer()
	var sumClaim, sumSet time.Duration
	for i := range claims {
		sumClaim += claims[i]
		sumSet += sets[i]
	}
	slices.Sort(pairs)
	slices.Sort(claims)
	slices.Sort(sets)
	p50Claim, p50Set := claims[len(claims)/2], sets[len(sets)/2]
	b.ReportMetric(float64(p50Claim)/float64(time.Microsecond), "claim-p50-us")
	b.ReportMetric(float64(p50Set)/float64(time.Microsecond), "setnx-p50-us")
	b.ReportMetric(pairs[len(pairs)/2], "claim/setnx-pair")
	b.ReportMetric(float64(sumClaim)/float64(sumSet), "claim/setnx-mean")
}
