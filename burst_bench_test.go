package anarchon_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// burstScheduler is a started scheduler on a fresh membackend store with
// k jobs, plain or leased, claiming in batches of batchSize; it returns
// the jobs' names.
func burstScheduler(b *testing.B, k, batchSize int, leased bool) (*anarchon.Scheduler, []string) {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: quiet, BatchSize: batchSize, InstanceID: "bench"})
	nop := func(context.Context, *anarchon.Run) error { return nil }
	names := make([]string, k)
	for i := range names {
		names[i] = fmt.Sprintf("job-%05d", i)
		if err := s.Every(names[i], time.Hour, nop, &anarchon.JobOptions{NoLease: !leased, MaxLate: 24 * time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s, names
}

// BenchmarkBurst fires K = 1,000 slots due at one instant through the run
// path (claims, no-op handlers, results) on membackend, once with every
// slot claimed alone (BatchSize 1) and once in batches (the default
// BatchSize), alternating the two in each iteration on two schedulers of
// their own, and reports ns per slot of each and their ratio
// (batch/single; below 1 means batches are faster). Each burst is a new
// slot an hour ago, so every claim is won and every handler runs.
func BenchmarkBurst(b *testing.B) {
	const k = 1000
	for _, leased := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "leased"}[leased], func(b *testing.B) {
			single, singleJobs := burstScheduler(b, k, 1, leased)
			batch, batchJobs := burstScheduler(b, k, anarchon.DefaultBatchSize, leased)
			base := time.Now().Add(-time.Hour).Truncate(time.Second)
			var tSingle, tBatch time.Duration
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				slot := base.Add(time.Duration(n) * time.Millisecond)
				n++
				start := time.Now()
				anarchon.FireBurst(single, singleJobs, slot)
				tSingle += time.Since(start)
				start = time.Now()
				anarchon.FireBurst(batch, batchJobs, slot)
				tBatch += time.Since(start)
			}
			b.ReportMetric(float64(tSingle.Nanoseconds())/float64(n*k), "ns/slot-single")
			b.ReportMetric(float64(tBatch.Nanoseconds())/float64(n*k), "ns/slot-batch")
			b.ReportMetric(float64(tBatch)/float64(tSingle), "batch/single")
		})
	}
}
