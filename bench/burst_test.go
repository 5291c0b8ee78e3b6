package bench

import (
	"testing"
	"time"
)

func TestNextBurstSlot(t *testing.T) {
	every := 15 * time.Second
	base := time.UnixMilli(15_000 * 66_666_666) // a 15 s boundary
	now := base.Add(2 * time.Second)
	got := NextBurstSlot(now, every, 8*time.Second)
	if want := base.Add(every); !got.Equal(want) {
		t.Fatalf("NextBurstSlot = %v, want %v (the next boundary at least 8 s away)", got, want)
	}
	got = NextBurstSlot(now, every, 14*time.Second)
	if want := base.Add(2 * every); !got.Equal(want) {
		t.Fatalf("NextBurstSlot with lead 14 s = %v, want %v", got, want)
	}
	from, to := BurstWindow(got, 3, every)
	if from != got.Add(-every/2) || to != got.Add(2*every+every/2) {
		t.Fatalf("BurstWindow = %v .. %v", from, to)
	}
}

// The ledger keeps only the measured slots, one start per job and slot,
// and counts a second start as a repeat.
func TestLedger(t *testing.T) {
	every := 5 * time.Second
	first := time.UnixMilli(1_000_000_000_000)
	l := newLedger(2, 2, every)
	l.add(0, first, first.Add(time.Millisecond), 1) // before first is known: ignored
	l.first.Store(first.UnixMilli())
	l.add(0, first.Add(-every), first, 1)                            // before the window
	l.add(0, first, first.Add(3*time.Millisecond), 1)                // burst 0, job 0
	l.add(0, first, first.Add(4*time.Millisecond), 1)                // a repeat
	l.add(0, first, first.Add(5*time.Millisecond), 2)                // a takeover
	l.add(1, first.Add(every), first.Add(every+time.Millisecond), 2) // burst 1, job 1, first as attempt 2
	l.add(1, first.Add(2*every), first.Add(2*every), 1)              // after the last burst
	l.add(1, first.Add(time.Second), first.Add(time.Second), 1)      // off the grid
	r := l.report("x")
	want := [][]int32{{3000, -1}, {-1, 1000}}
	for b := range want {
		for j := range want[b] {
			if r.Starts[b][j] != want[b][j] {
				t.Fatalf("Starts = %v, want %v", r.Starts, want)
			}
		}
	}
	if r.Repeats != 1 || r.Takeovers != 1 {
		t.Fatalf("Repeats = %d, Takeovers = %d; want 1, 1", r.Repeats, r.Takeovers)
	}
	if r.Attempts[0][0] != 1 || r.Attempts[1][1] != 2 || r.Attempts[0][1] != 0 {
		t.Fatalf("Attempts = %v, want [[1 0] [0 2]]", r.Attempts)
	}
}

func TestMergeBursts(t *testing.T) {
	// Two processes, three jobs, two bursts (lateness in µs; -1: not here).
	a := BurstReport{Starts: [][]int32{{1000, -1, 3000}, {-1, -1, 2000}}, CPU: 4 * time.Millisecond, Calls: map[string]int64{"Claim": 6}}
	b := BurstReport{Starts: [][]int32{{-1, 2000, 5000}, {-1, 4000, -1}}, CPU: 2 * time.Millisecond, Calls: map[string]int64{"Claim": 6}, Repeats: 1}
	r := MergeBursts([]BurstReport{a, b}, 3, 2, true)
	// Burst 0: job 2 ran twice (a duplicate); burst 1: job 0 never ran
	// (a miss); plus b's own repeat.
	if r.Duplicates != 2 || r.Misses != 1 {
		t.Fatalf("duplicates %d, misses %d; want 2, 1", r.Duplicates, r.Misses)
	}
	if r.Starts != 6 {
		t.Fatalf("starts %d, want 6", r.Starts)
	}
	// Burst 0: 1, 2, 3, 5 ms → p50 2 ms, p99 5 ms; burst 1: 2, 4 ms → p50 2
	// ms, p99 4 ms. Medians of two: the upper one.
	if r.P50 != 2*time.Millisecond || r.P99 != 5*time.Millisecond || r.Max != 5*time.Millisecond {
		t.Fatalf("p50 %v p99 %v max %v; want 2ms 5ms 5ms", r.P50, r.P99, r.Max)
	}
	if r.CPUPerInst != 3*time.Millisecond || r.CallsPerBurst != 6 {
		t.Fatalf("CPU per instance %v, calls per burst %v; want 3ms, 6", r.CPUPerInst, r.CallsPerBurst)
	}
	// A takeover is not a duplicate: job 0's slot in burst 0 started as
	// attempt 1 on one process and attempt 2 on the other.
	ta := BurstReport{Starts: [][]int32{{1000}}, Attempts: [][]uint8{{1}}}
	tb := BurstReport{Starts: [][]int32{{9000}}, Attempts: [][]uint8{{2}}}
	if m := MergeBursts([]BurstReport{ta, tb}, 1, 1, true); m.Duplicates != 0 || m.Takeovers != 1 {
		t.Fatalf("takeover: duplicates %d, takeovers %d; want 0, 1", m.Duplicates, m.Takeovers)
	}
	// The floor: every process fires every deadline; nothing is a
	// duplicate or a miss.
	if f := MergeBursts([]BurstReport{a, b}, 3, 2, false); f.Duplicates != 0 || f.Misses != 0 {
		t.Fatalf("floor: duplicates %d, misses %d; want 0, 0", f.Duplicates, f.Misses)
	}
}
