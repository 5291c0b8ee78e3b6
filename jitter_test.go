package anarchon_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// jitterMeanDelay runs n schedulers on one store with a 2 s job and 1 s of
// jitter for 200 slots in simulated time, checks that each slot ran once,
// and returns the mean delay from slot to handler start.
func jitterMeanDelay(t *testing.T, n int, opts anarchon.JobOptions) time.Duration {
	const slots = 200
	var mean time.Duration
	synctest.Test(t, func(t *testing.T) {
		b := membackend.New(nil)
		var mu sync.Mutex
		delays := map[int64][]time.Duration{}
		h := func(_ context.Context, run *anarchon.Run) error {
			mu.Lock()
			delays[run.Slot.UnixMilli()] = append(delays[run.Slot.UnixMilli()], time.Since(run.Slot))
			mu.Unlock()
			return nil
		}
		var ss []*anarchon.Scheduler
		for i := range n {
			s := newSched(t, b, fmt.Sprintf("inst-%d", i), nil)
			o := opts
			if err := s.Every("tick", 2*time.Second, h, &o); err != nil {
				t.Fatal(err)
			}
			ss = append(ss, s)
		}
		for _, s := range ss {
			mustStart(t, s)
		}
		first := time.Now().Truncate(2 * time.Second).Add(2 * time.Second)
		time.Sleep(time.Until(first.Add(slots * 2 * time.Second)))
		synctest.Wait()
		stopAll(t, ss...)
		mu.Lock()
		defer mu.Unlock()
		var sum time.Duration
		for k := range slots {
			slot := first.Add(time.Duration(k) * 2 * time.Second).UnixMilli()
			ds := delays[slot]
			if len(ds) != 1 {
				t.Fatalf("%d instances: slot %d ran %d times, want 1", n, k, len(ds))
			}
			if ds[0] < 0 || ds[0] >= opts.Jitter {
				t.Errorf("%d instances: slot %d started %v after its time, outside [0, %v)", n, k, ds[0], opts.Jitter)
			}
			sum += ds[0]
		}
		mean = sum / slots
	})
	return mean
}

// The start delay of a slot does not depend on how many instances race for
// it: with 1, 3 and 9 instances and 1 s of jitter, the mean delay over 200
// slots differs by less than 10% (it was about Jitter/(n+1) when each
// instance drew its own delay and the first claim won).
func TestJitterDoesNotShrinkWithInstances(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts anarchon.JobOptions
	}{
		{"leased", anarchon.JobOptions{Jitter: time.Second}},
		{"plain", anarchon.JobOptions{Jitter: time.Second, NoLease: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			means := map[int]time.Duration{}
			for _, n := range []int{1, 3, 9} {
				means[n] = jitterMeanDelay(t, n, tc.opts)
				t.Logf("%d instances: mean start delay %v over 200 slots", n, means[n])
			}
			for _, a := range []int{1, 3, 9} {
				for _, b := range []int{1, 3, 9} {
					if d := math.Abs(float64(means[a] - means[b])); d >= 0.1*float64(means[b]) {
						t.Errorf("mean delay with %d instances %v, with %d %v: differ by %.0f%%", a, means[a], b, means[b], 100*d/float64(means[b]))
					}
				}
			}
			// Uniform in [0, 1 s): the mean of 200 delays is 0.5 s within
			// about 5 standard errors (20 ms each).
			if m := means[1]; m < 400*time.Millisecond || m > 600*time.Millisecond {
				t.Errorf("mean delay %v, want about 500ms", m)
			}
		})
	}
}

// JitterSeed chooses another set of delays, the same on every instance.
func TestJitterSeedChangesDelays(t *testing.T) {
	a := jitterMeanDelay(t, 3, anarchon.JobOptions{Jitter: time.Second})
	b := jitterMeanDelay(t, 3, anarchon.JobOptions{Jitter: time.Second, JitterSeed: 42})
	if a == b {
		t.Errorf("mean delay %v with and without a seed", a)
	}
}
