package natsbackend_test

import (
	"context"
	"fmt"
	"slices"
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

// BenchmarkReadKeys measures, in the same run and on the same
// connection, a read of n keys (n = 1, 2, 3, 4, 8; two of them absent when
// n > 2) made the two ways getMany can make it: one direct get request
// for all n subjects (multi-us) and one KV Get per key, side by side
// (each-us), beside one KV Get (one-us). It is what directMin rests on.
func BenchmarkReadKeys(b *testing.B) {
	for _, n := range []int{1, 2, 3, 4, 8} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			ctx := context.Background()
			be, kv := benchBackend(b)
			keys := make([]string, n)
			present := n
			if n > 2 {
				present = n - 2
			}
			for k := range keys {
				keys[k] = "x.read." + strconv.Itoa(k)
				if k < present {
					if _, err := kv.Put(ctx, keys[k], []byte(`{"p":false}`)); err != nil {
						b.Fatal(err)
					}
				}
			}
			var multi, each, one time.Duration
			for b.Loop() {
				t0 := time.Now()
				got, err := be.ReadKeys(ctx, keys, true)
				if err != nil || got != present {
					b.Fatalf("multi: %d of %d keys, %v", got, present, err)
				}
				t1 := time.Now()
				got, err = be.ReadKeys(ctx, keys, false)
				if err != nil || got != present {
					b.Fatalf("each: %d of %d keys, %v", got, present, err)
				}
				t2 := time.Now()
				if _, err := kv.Get(ctx, keys[0]); err != nil {
					b.Fatal(err)
				}
				multi += t1.Sub(t0)
				each += t2.Sub(t1)
				one += time.Since(t2)
			}
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
			b.ReportMetric(per(multi), "multi-us")
			b.ReportMetric(per(each), "each-us")
			b.ReportMetric(per(one), "one-us")
		})
	}
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

// burst is the number of claims of BenchmarkClaimBatch: 1,000 jobs due
// at one slot.
const burst = 1000

// BenchmarkClaimBatch measures a burst of 1,000 claims (1,000 jobs, one
// new slot each) made four ways in the same run, on the same connection
// and bucket: one ClaimBatch (batch-ms), 1,000 single Claims one after
// the other (singles-ms), and the raw operation of a claim, a KV create
// of a fresh key, 1,000 published before any acknowledgement is awaited
// (rawpipe-ms, the floor of a batch) and 1,000 KV Creates one after the
// other (rawseq-ms, the floor of single claims). Each iteration times the
// four in a rotating order, each on keys of its own. Times are medians
// over iterations (ms per burst); the ratios are medians of each
// iteration's ratios: batch/rawpipe, singles/rawseq and singles/batch.
// The lease sub-benchmark makes the claims with RunStore.ClaimRuns and
// RunStore.Claim (lease 1 min, overlap allowed). ns/op is the whole
// iteration.
func BenchmarkClaimBatch(b *testing.B) {
	for _, lease := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "lease"}[lease], func(b *testing.B) {
			ctx := context.Background()
			be, kv := benchBackend(b)
			js, err := jetstream.New(natsConn(b))
			if err != nil {
				b.Fatal(err)
			}
			runs := be.Runs()
			batcher := runs.(anarchon.RunBatchClaimer)
			const tok = "0123456789abcdef01234567"
			val := []byte(`{"t":"0123456789abcdef01234567","i":"bench"}`)
			slot0 := time.Now().Truncate(time.Minute).Add(-48 * time.Hour).UnixMilli() // every slot due: never early
			inputs := func(path string, it int) []anarchon.ClaimInput {
				in := make([]anarchon.ClaimInput, burst)
				for k := range in {
					in[k] = anarchon.ClaimInput{Job: path + strconv.Itoa(k), Slot: slot0 + int64(it)*1000, Token: tok, InstanceID: "bench"}
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
			bucket := kv.Bucket()
			paths := []func(it int){
				func(it int) { // batch
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
				func(it int) { // raw, published before any ack is awaited
					fs := make([]jetstream.PubAckFuture, burst)
					for k := range fs {
						m := &nats.Msg{Subject: "$KV." + bucket + ".x.p" + strconv.Itoa(it) + "." + strconv.Itoa(k), Data: val}
						f, err := js.PublishMsgAsync(m, jetstream.WithExpectLastSequencePerSubject(0))
						if err != nil {
							b.Fatal(err)
						}
						fs[k] = f
					}
					for _, f := range fs {
						select {
						case <-f.Ok():
						case err := <-f.Err():
							b.Fatal(err)
						}
					}
				},
				func(it int) { // raw, one by one
					for k := range burst {
						if _, err := kv.Create(ctx, "x.s"+strconv.Itoa(it)+"."+strconv.Itoa(k), val); err != nil {
							b.Fatal(err)
						}
					}
				},
			}
			paths[0](-1) // warm up
			reportBurst(b, burstLoop(b, paths))
		})
	}
}

// natsConn connects to the test server; the connection closes with b.
func natsConn(b *testing.B) *nats.Conn {
	nc, err := nats.Connect(natsURL(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	return nc
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
