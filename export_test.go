package anarchon

import (
	"time"

	"github.com/anarchon/anarchon/internal/runner"
)

// FireBurst hands the slot of every named job to the run path as one
// group due at one instant, as the timer loop does, and waits until every
// claim, handler and result of it is done. s must be started. For
// benchmarks of package anarchon_test, which may import backends.
func FireBurst(s *Scheduler, jobs []string, slot time.Time) {
	g := make([]runner.Due[*job], len(jobs))
	s.mu.Lock()
	for i, name := range jobs {
		g[i] = runner.Due[*job]{V: s.jobs[name], Slot: slot}
	}
	s.mu.Unlock()
	s.fireGroup(s.loopCtx, &runner.Group[*job]{Due: g})
	s.inflight.Wait()
}

// SlotOwner is the instance, of the live instances ids (sorted), that
// claims the slot of job in the first wave of a burst (SPEC §4, waves).
func SlotOwner(ids []string, job string, slot time.Time) string {
	return ids[peers{n: len(ids)}.owner(job, slot)]
}

// Peers is the place peersOf gives the instance id in a listing.
func Peers(id string, recs []InstanceRecord) (n, self int) {
	p := peersOf(id, recs)
	return p.n, p.self
}

// Rank is the wave in which instance self of n claims the slot.
func Rank(n, self int, job string, slot time.Time) int {
	return peers{n: n, self: self}.rank(job, slot)
}
