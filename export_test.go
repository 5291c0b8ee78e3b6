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
	s.fireGroup(s.loopCtx, g)
	s.inflight.Wait()
}
