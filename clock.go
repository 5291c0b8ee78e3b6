package anarchon

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Clock is the scheduler's source of the current time. Only Now is
// injectable: waits are durations and use the runtime's timers, which tick at
// the same rate however far a clock is set off. Simulations run the scheduler
// inside [testing/synctest], where those timers are virtual, and give each
// instance a clock with its own offset ([OffsetClock]) to model skew.
type Clock interface {
	Now() time.Time
}

// SystemClock is the machine's clock, the default.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// OffsetClock is the system clock moved by a fixed offset: a model of a
// machine whose clock is wrong by Offset (positive: fast).
type OffsetClock struct{ Offset time.Duration }

// Now returns time.Now() plus the offset.
func (c OffsetClock) Now() time.Time { return time.Now().Add(c.Offset) }

// measureOffset estimates store clock minus local clock the NTP way: the
// server's reading is taken to be from the middle of the round trip. Of a few
// samples it keeps the one with the shortest round trip, whose midpoint guess
// is the tightest. Round trips are timed with the runtime's monotonic
// clock, and a sample during which the local clock stepped (its reading
// moved more than StepThreshold against the monotonic clock) is dropped:
// a step in the middle of a sample would make its offset wrong by the
// step.
func (s *Scheduler) measureOffset(ctx context.Context) (time.Duration, error) {
	const samples = 3
	best, bestRTT := time.Duration(0), time.Duration(-1)
	for range samples {
		m0 := time.Now()
		t0 := s.clock.Now().Round(0)
		st, err := s.sclock.ServerTime(ctx)
		t1 := s.clock.Now().Round(0)
		rtt := time.Since(m0)
		if err != nil {
			return 0, err
		}
		if abs(t1.Sub(t0)-rtt) > StepThreshold {
			continue // the local clock stepped during the sample
		}
		if bestRTT < 0 || rtt < bestRTT {
			bestRTT = rtt
			best = st.Sub(t0.Add(rtt / 2))
		}
	}
	if bestRTT < 0 {
		return 0, errors.New("anarchon: the local clock stepped during every sample of the store's clock")
	}
	// The reading could come from anywhere in the round trip: take the
	// lowest offset it allows, so that a wait by the store's time never
	// ends before the store's clock reaches the slot.
	return best - bestRTT/2, nil
}

// StepThreshold is how far the local clock may move against the
// runtime's monotonic clock between two looks (one a second) before the
// scheduler takes it for a step (an NTP step, a resumed virtual machine,
// an operator's date command) and re-measures its offset to the store's
// clock at once. NTP's slewing moves a clock by at most 0.5 ms a second.
const StepThreshold = 250 * time.Millisecond

// syncClock measures the offset once and publishes it, warning above the
// threshold; why says what asked for it (see EventClockOffset). A failure
// keeps the previous estimate. A new offset wakes the timer loop, whose
// wait was computed with the old one. A re-measure after a step or an
// early claim also rewinds it (see runner.Queue.Rewind): the slots it took
// while the clock was ahead were not due; so does a periodic one that
// moves the scheduler's now back by more than StepThreshold (a smaller
// correction's early claims, if any, are refused and rewind then). It
// reports whether it rewound the loop.
func (s *Scheduler) syncClock(ctx context.Context, why string) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return s.syncClockLocked(ctx, why)
}

func (s *Scheduler) syncClockLocked(ctx context.Context, why string) bool {
	off, err := s.measureOffset(ctx)
	if err != nil {
		s.storeError(ctx, "ServerTime", "", time.Time{}, err)
		return false
	}
	old := time.Duration(s.offset.Swap(int64(off)))
	s.syncGen.Add(1)
	s.emit(Event{Kind: EventClockOffset, Offset: off, Op: why})
	if abs(off) > s.opts.ClockSkewWarning {
		s.log.LogAttrs(ctx, slog.LevelWarn, "clock differs from the store's",
			slog.Duration("offset", off), slog.Duration("threshold", s.opts.ClockSkewWarning))
	}
	if off == old {
		return false
	}
	if (why != "sync" && why != "late") || old-off > StepThreshold {
		s.queue.Rewind(s.now())
		return true
	}
	s.queue.Wake()
	return false
}

// clockLoop re-measures the offset every ClockSyncInterval until ctx
// ends, and at once when the local clock steps: once a second it compares
// how far the local clock moved with how far the runtime's monotonic
// clock did (Go's time.Now carries both; an injected Clock is compared
// with the runtime's).
func (s *Scheduler) clockLoop(ctx context.Context) {
	look := min(time.Second, s.opts.ClockSyncInterval)
	t := time.NewTicker(look)
	defer t.Stop()
	wall, mono := s.clock.Now().Round(0), time.Now()
	lastSync := mono
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w, m := s.clock.Now().Round(0), time.Now()
		step := w.Sub(wall) - m.Sub(mono)
		wall, mono = w, m
		switch {
		case abs(step) > StepThreshold:
			s.log.LogAttrs(ctx, slog.LevelWarn, "local clock stepped; re-measuring the offset to the store's clock",
				slog.Duration("step", step))
			s.syncClock(ctx, "step")
		case m.Sub(lastSync) >= s.opts.ClockSyncInterval:
			s.syncClock(ctx, "sync")
		default:
			continue
		}
		lastSync = time.Now()
	}
}

// claimedEarly handles a claim the store refused as early (*EarlyError):
// the scheduler's estimate of the store's clock is ahead. It re-measures
// the offset (unless a measure is under way, which will do) and rewinds
// the timer loop, so the slot is claimed again when due: once, by the
// re-measure if it changed the offset, else here (the loop has moved past
// the refused slot either way). A rewind here from a now that a measure
// under way has just corrected is harmless: Rewind only moves slots back.
func (s *Scheduler) claimedEarly(ctx context.Context, jobName string, slot time.Time, err error) {
	s.emit(Event{Kind: EventClaim, Job: jobName, Slot: slot, Outcome: "early", Err: err, Lateness: s.now().Sub(slot)})
	rewound := false
	if s.sclock != nil && s.syncMu.TryLock() {
		s.log.LogAttrs(ctx, slog.LevelWarn, "the store refused a claim as early; re-measuring the offset to its clock",
			slog.String("job", jobName), slog.Time("slot", slot), slog.Any("error", err))
		rewound = s.syncClockLocked(ctx, "early")
		s.syncMu.Unlock()
	}
	if !rewound {
		s.queue.Rewind(s.now())
	}
}

// remeasure re-measures the offset for why, unless a measure finished
// while it waited for syncMu: many answers at once share one measure.
func (s *Scheduler) remeasure(ctx context.Context, why string) {
	gen := s.syncGen.Load()
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.syncGen.Load() == gen {
		s.syncClockLocked(ctx, why)
	}
}

// lateBy is how late slot is by the store's clock, for a claim that was
// won. A won claim that looks later than maxLate may instead mean that the
// local clock stepped forward since the clock loop's last look (up to a
// second ago): the store judged the claim on time. Before such a slot is
// given up as missed, the offset is re-measured once (shared by the
// answers that arrive together) and the lateness taken again.
func (s *Scheduler) lateBy(ctx context.Context, slot time.Time, maxLate time.Duration) time.Duration {
	late := s.now().Sub(slot)
	if late > maxLate && s.sclock != nil {
		s.remeasure(ctx, "late")
		late = s.now().Sub(slot)
	}
	return late
}

// ClockOffset is the scheduler's latest estimate of the store's clock minus
// its own clock (positive: the store is ahead), lowered by the estimate's
// uncertainty (half the round trip of the best sample) so that the
// scheduler never acts early by the store's clock. It is 0 when the backend
// has no ServerClock or before Start.
func (s *Scheduler) ClockOffset() time.Duration { return time.Duration(s.offset.Load()) }

// now is the scheduler's estimate of the store's clock: every wait and every
// lateness check uses it, so instances with skewed clocks agree.
func (s *Scheduler) now() time.Time { return s.clock.Now().Add(s.ClockOffset()) }

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
