package jitter

import (
	"math"
	"testing"
	"time"
)

func TestDelayIsPureAndInRange(t *testing.T) {
	if d := Delay("job", 1000, 0, 0); d != 0 {
		t.Errorf("max 0: %v", d)
	}
	if d := Delay("job", 1000, -time.Second, 0); d != 0 {
		t.Errorf("negative max: %v", d)
	}
	if d := Delay("job", 1000, 1, 0); d != 0 {
		t.Errorf("max 1ns: %v", d)
	}
	// Fixed vectors, computed independently (Python's hashlib over the same
	// layout): the algorithm is part of the contract between versions of
	// anarchon running in one cluster during an upgrade.
	for _, v := range []struct {
		job  string
		slot int64
		seed uint64
		want time.Duration
	}{
		{"backup", 1764590400000, 0, 59500654},
		{"backup", 1764590401000, 0, 330539235},
		{"report", 1764590400000, 0, 832705530},
		{"backup", 1764590400000, 7, 220602901},
	} {
		got := Delay(v.job, v.slot, time.Second, v.seed)
		if got != v.want {
			t.Errorf("Delay(%q, %d, 1s, %d) = %d, want %d", v.job, v.slot, v.seed, got, v.want)
		}
	}
	differs := false
	for slot := int64(0); slot < 1000; slot++ {
		a := Delay("job", slot*1000, time.Second, 0)
		if a < 0 || a >= time.Second {
			t.Fatalf("slot %d: delay %v outside [0, 1s)", slot, a)
		}
		if b := Delay("job", slot*1000, time.Second, 0); b != a {
			t.Fatalf("slot %d: %v then %v", slot, a, b)
		}
		if Delay("job", slot*1000, time.Second, 1) != a || Delay("job2", slot*1000, time.Second, 0) != a {
			differs = true
		}
	}
	if !differs {
		t.Error("neither the seed nor the name changes any delay")
	}
}

// Over many slots the delays are uniform: a chi-square test on 20 buckets,
// and the mean near max/2.
func TestDelayIsUniform(t *testing.T) {
	const n, buckets = 100000, 20
	max := 900 * time.Millisecond
	var count [buckets]int
	var sum float64
	for i := int64(0); i < n; i++ {
		d := Delay("nightly-report", 1764590400000+i*60000, max, 0)
		count[int(d*buckets/max)]++
		sum += float64(d)
	}
	exp := float64(n) / buckets
	chi := 0.0
	for _, c := range count {
		chi += (float64(c) - exp) * (float64(c) - exp) / exp
	}
	// 19 degrees of freedom: P(chi² > 43.8) = 0.001.
	if chi > 43.8 {
		t.Errorf("chi² = %.1f over %d buckets %v", chi, buckets, count)
	}
	mean := sum / n
	// Standard error of the mean: max/sqrt(12n) ≈ 0.82 ms; allow 5 of them.
	if want := float64(max) / 2; math.Abs(mean-want) > 5*float64(max)/math.Sqrt(12*n) {
		t.Errorf("mean %v, want %v", time.Duration(mean), time.Duration(want))
	}
}
