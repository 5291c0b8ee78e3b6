package anarchon

import (
	"time"

	"github.com/anarchon/anarchon/internal/jitter"
)

// jitter returns the delay of the job's slot: the same on every instance for
// the same (name, slot, JitterSeed), uniform in [0, Jitter) over slots.
func (j *job) jitter(slot time.Time) time.Duration {
	return jitter.Delay(j.name, slot.UnixMilli(), j.opt.Jitter, j.opt.JitterSeed)
}
