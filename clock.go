package anarchon

import (
	"context"
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
// is the tightest.
func (s *Scheduler) measureOffset(ctx context.Context) (time.Duration, error) {
	const samples = 3
	best, bestRTT := time.Duration(0), time.Duration(-1)
	for range samples {
		t0 := s.clock.Now()
		st, err := s.sclock.ServerTime(ctx)
		t1 := s.clock.Now()
		if err != nil {
			return 0, err
		}
		rtt := t1.Sub(t0)
		if bestRTT < 0 || rtt < bestRTT {
			bestRTT = rtt
			best = st.Sub(t0.Add(rtt / 2))
		}
	}
	// The reading could come from anywhere in the round trip: take the
	// lowest offset it allows, so that a wait by the store's time never
	// ends before the store's clock reaches the slot.
	return best - bestRTT/2, nil
}

// syncClock measures the offset once and publishes it, warning above the
// threshold. A failure keeps the previous estimate.
func (s *Scheduler) syncClock(ctx context.Context) {
	off, err := s.measureOffset(ctx)
	if err != nil {
		s.storeError(ctx, "ServerTime", "", time.Time{}, err)
		return
	}
	s.offset.Store(int64(off))
	s.emit(Event{Kind: EventClockOffset, Offset: off})
	if abs(off) > s.opts.ClockSkewWarning {
		s.log.LogAttrs(ctx, slog.LevelWarn, "clock differs from the store's",
			slog.Duration("offset", off), slog.Duration("threshold", s.opts.ClockSkewWarning))
	}
}

// clockLoop re-measures the offset every ClockSyncInterval until ctx ends.
func (s *Scheduler) clockLoop(ctx context.Context) {
	t := time.NewTicker(s.opts.ClockSyncInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.syncClock(ctx)
		}
	}
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
