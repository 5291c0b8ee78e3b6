package redisbackend_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/redis/go-redis/v9"
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

// burst is the number of claims of BenchmarkClaimBatch: 1,000 jobs due
// at one slot.
const burst = 1000

// BenchmarkClaimBatch measures a burst of 1,000 claims (1,000 jobs, one
// new slot each) made four ways in the same run, on the same client and
// server: one ClaimBatch (batch-ms), 1,000 single Claims one after the
// other (singles-ms), and the raw operation of a claim, SET key value NX
// PX, 1,000 in one pipeline (rawpipe-ms, the floor of a batch) and 1,000
// one after the other (rawseq-ms, the floor of single claims). Each
// iteration times the four in a rotating order, each on keys of its own.
// Times are medians over iterations (ms per burst); the ratios are
// medians of each iteration's ratios: batch/rawpipe, singles/rawseq and
// singles/batch. batch-server-us/claim and rawpipe-server-us/op are the
// server's own time (INFO commandstats usec of EVALSHA and EVAL, of SET)
// per claim of the batch and per SET of the raw pipeline, medians over
// iterations: the time of the server's one thread that a burst's claims
// queue for. lost-server-us/claim is the same for a batch that loses
// every claim, to a batch of another token just before it on the same
// slots (the later waves of a burst on several instances, whose claims
// find the slot taken; neither batch is timed). The lease sub-benchmark
// makes the claims with RunStore.ClaimRuns and RunStore.Claim (lease 1
// min, overlap allowed). ns/op is the whole iteration, the losing
// batches included.
func BenchmarkClaimBatch(b *testing.B) {
	for _, lease := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "lease"}[lease], func(b *testing.B) {
			addr := redisAddr(b)
			prefix := freshPrefix(b, addr)
			be := newBackend(b, addr, prefix, nil)
			client := be.Client()
			ctx := b.Context()
			runs := be.Runs()
			batcher := runs.(anarchon.RunBatchClaimer)
			tok := randToken()
			slot0 := time.Now().Truncate(time.Minute).Add(-48 * time.Hour).UnixMilli() // every slot due: never early
			inputs := func(path string, it int) []anarchon.ClaimInput {
				in := make([]anarchon.ClaimInput, burst)
				for k := range in {
					in[k] = anarchon.ClaimInput{Job: path + strconv.Itoa(k), Slot: slot0 + int64(it)*1000, Token: tok, InstanceID: "a"}
				}
				return in
			}
			leases := func(in []anarchon.ClaimInput) []anarchon.RunClaim {
				rc := make([]anarchon.RunClaim, len(in))
				for k := range rc {
					rc[k] = anarchon.RunClaim{ClaimInput: in[k], Lease: time.Minute, AllowOverlap: true}
				}
				return rc
			}
			wins := func(o anarchon.ClaimOutcome, ok bool, err error) {
				if err != nil || (!lease && !ok) || (lease && o.Kind != anarchon.OutcomeWon) {
					b.Fatalf("claim: %v %+v %v", ok, o, err)
				}
			}
			var srvBatch, srvLose, srvRaw []float64 // the server's µs per claim, per raw SET
			batch := func(in []anarchon.ClaimInput) {
				if !lease {
					out, err := be.ClaimBatch(ctx, in)
					if err != nil {
						b.Fatal(err)
					}
					for _, a := range out {
						if a.Err != nil {
							b.Fatal(a.Err)
						}
					}
					return
				}
				out, err := batcher.ClaimRuns(ctx, leases(in))
				if err != nil {
					b.Fatal(err)
				}
				for _, a := range out {
					if a.Err != nil {
						b.Fatal(a.Err)
					}
				}
			}
			paths := []func(it int){
				func(it int) { // batch
					defer serverTime(b, client, &srvBatch, "evalsha", "eval")()
					in := inputs("b", it)
					if !lease {
						out, err := be.ClaimBatch(ctx, in)
						if err != nil {
							b.Fatal(err)
						}
						for _, a := range out {
							wins(anarchon.ClaimOutcome{}, a.Won, a.Err)
						}
						return
					}
					out, err := batcher.ClaimRuns(ctx, leases(in))
					if err != nil {
						b.Fatal(err)
					}
					for _, a := range out {
						wins(a.Outcome, false, a.Err)
					}
				},
				func(it int) { // singles
					in := inputs("s", it)
					if !lease {
						for _, c := range in {
							ok, err := be.Claim(ctx, c)
							wins(anarchon.ClaimOutcome{}, ok, err)
						}
						return
					}
					for _, c := range leases(in) {
						o, err := runs.Claim(ctx, c)
						wins(o, false, err)
					}
				},
				func(it int) { // raw, one pipeline
					defer serverTime(b, client, &srvRaw, "set")()
					cmds, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
						for k := range burst {
							p.SetNX(ctx, "{"+prefix+":rawp}:"+strconv.Itoa(it)+":"+strconv.Itoa(k), tok, time.Minute)
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
					for _, c := range cmds {
						if !c.(*redis.BoolCmd).Val() {
							b.Fatal("set nx lost")
						}
					}
				},
				func(it int) { // raw, one by one
					for k := range burst {
						ok, err := client.SetNX(ctx, "{"+prefix+":raws}:"+strconv.Itoa(it)+":"+strconv.Itoa(k), tok, time.Minute).Result()
						if err != nil || !ok {
							b.Fatalf("set nx: %v %v", ok, err)
						}
					}
				},
				func(it int) { // a batch that loses every slot to an earlier one (untimed: not reported)
					in := inputs("l", it)
					batch(in)
					for k := range in {
						in[k].Token = tok + "-lost"
					}
					defer serverTime(b, client, &srvLose, "evalsha", "eval")()
					batch(in)
				},
			}
			paths[0](-1) // warm up: connections, script cache
			srvBatch = nil
			times := burstLoop(b, paths)
			reportBurst(b, times)
			b.ReportMetric(medianOf(srvBatch), "batch-server-us/claim")
			b.ReportMetric(medianOf(srvLose), "lost-server-us/claim")
			b.ReportMetric(medianOf(srvRaw), "rawpipe-server-us/op")
		})
	}
}

// burstLoop runs the paths once per iteration, in a rotating order, and
// returns each path's times.
func burstLoop(b *testing.B, paths []func(it int)) [][]time.Duration {
	times := make([][]time.Duration, len(paths))
	for it := 0; b.Loop(); it++ {
		for r := range paths {
			p := (it + r) % len(paths)
			t0 := time.Now()
			paths[p](it)
			times[p] = append(times[p], time.Since(t0))
		}
	}
	return times
}

// reportBurst reports the medians of the times of batch, singles, raw
// pipeline and raw one-by-one, and the medians of their per-iteration
// ratios.
func reportBurst(b *testing.B, times [][]time.Duration) {
	ratio := func(x, y []time.Duration) float64 {
		r := make([]float64, len(x))
		for i := range x {
			r[i] = float64(x[i]) / float64(y[i])
		}
		slices.Sort(r)
		return r[len(r)/2]
	}
	median := func(d []time.Duration) float64 {
		d = slices.Clone(d)
		slices.Sort(d)
		return float64(d[len(d)/2]) / float64(time.Millisecond)
	}
	for p, name := range []string{"batch-ms", "singles-ms", "rawpipe-ms", "rawseq-ms"} {
		b.ReportMetric(median(times[p]), name)
	}
	b.ReportMetric(ratio(times[0], times[2]), "batch/rawpipe")
	b.ReportMetric(ratio(times[1], times[3]), "singles/rawseq")
	b.ReportMetric(ratio(times[1], times[0]), "singles/batch")
}

// serverTime reads the server's time spent in the given commands (INFO
// commandstats, usec) and returns a func that appends the time spent
// since, per claim of a burst, to into. Scripts count their whole run,
// the commands they call included; nothing else may use the server
// meanwhile.
func serverTime(b *testing.B, client redis.UniversalClient, into *[]float64, cmds ...string) func() {
	usec := func() int64 {
		info, err := client.Info(context.Background(), "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		var sum int64
		for line := range strings.Lines(info) {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok || !slices.Contains(cmds, strings.TrimPrefix(name, "cmdstat_")) {
				continue
			}
			for field := range strings.SplitSeq(rest, ",") {
				if v, ok := strings.CutPrefix(field, "usec="); ok {
					n, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						b.Fatalf("commandstats %q: %v", line, err)
					}
					sum += n
				}
			}
		}
		return sum
	}
	before := usec()
	return func() { *into = append(*into, float64(usec()-before)/burst) }
}

// medianOf returns the median of v.
func medianOf(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}
