package anarchon

import (
	"testing"
	"time"
)

// The backoff grows by Multiplier from InitialBackoff up to MaxBackoff, and
// its jitter is in [0, Jitter), the same for the same (job, slot, attempt)
// and different across attempts.
func TestBackoff(t *testing.T) {
	j := &job{name: "b", opt: JobOptions{Retry: Retry{MaxRetries: 9, InitialBackoff: time.Second, MaxBackoff: 10 * time.Second, Multiplier: 3}}}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 3 * time.Second, 3: 9 * time.Second, 4: 10 * time.Second, 9: 10 * time.Second} {
		if got := j.backoff(0, n); got != want {
			t.Errorf("backoff after attempt %d = %v, want %v", n, got, want)
		}
	}
	j.opt.Retry.Jitter = time.Second
	seen := map[time.Duration]bool{}
	for n := 1; n <= 20; n++ {
		d := j.backoff(60_000, n) - min(time.Second*time.Duration(pow3(n-1)), 10*time.Second)
		if d < 0 || d >= time.Second {
			t.Fatalf("jitter of attempt %d = %v, want [0, 1s)", n, d)
		}
		if again := (&job{name: "b", opt: j.opt}).backoff(60_000, n); again != j.backoff(60_000, n) {
			t.Fatal("the backoff is not a function of its arguments: another job value of the same name gave another")
		}
		seen[d] = true
	}
	if len(seen) < 15 {
		t.Errorf("%d distinct jitters over 20 attempts", len(seen))
	}
}

func pow3(n int) int64 {
	p := int64(1)
	for range n {
		p *= 3
		if p > 100 {
			return 100
		}
	}
	return p
}
