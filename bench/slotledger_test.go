package bench

import (
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// TestSlotLedgerWindow checks the slot columns of RedisLoad: slots of the
// window only, a run beyond one per slot counted in runs, a slot without
// a run missing from the slots run, and each second's p99 in order.
func TestSlotLedgerWindow(t *testing.T) {
	l := &slotLedger{runs: map[slotKey]int{}, late: map[int64][]time.Duration{}}
	base := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	run := func(job int, slot time.Time, late time.Duration) {
		l.add(job, &anarchon.Run{Slot: slot}, slot.Add(late))
	}
	run(0, base.Add(-time.Second), time.Millisecond) // before the window
	run(0, base, 5*time.Millisecond)
	run(1, base, 7*time.Millisecond)
	run(1, base, 9*time.Millisecond) // a second run of one slot
	run(0, base.Add(time.Second), 20*time.Millisecond)
	// job 1's slot at base+1s never ran.
	run(0, base.Add(2*time.Second), time.Millisecond) // after the window
	load := RedisLoad{Jobs: 2}
	l.window(&load, base.UnixMilli(), base.Add(2*time.Second).UnixMilli())
	if load.Slots != 4 || load.SlotsRun != 3 || load.SlotRuns != 4 {
		t.Errorf("slots %d, run %d, runs %d; want 4, 3, 4", load.Slots, load.SlotsRun, load.SlotRuns)
	}
	want := []time.Duration{9 * time.Millisecond, 20 * time.Millisecond}
	if len(load.LateP99) != 2 || load.LateP99[0] != want[0] || load.LateP99[1] != want[1] {
		t.Errorf("p99 by second %v, want %v", load.LateP99, want)
	}
}
