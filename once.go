package anarchon

import (
	"fmt"
	"math"
	"time"
)

// neverSlot is the "next slot" of a one-off job whose slot has passed: a
// time no timer reaches and every computation of lateness or look-back
// passes over.
var neverSlot = time.UnixMilli(math.MaxInt64 / 4).UTC()

// Once is a schedule of one slot, at t (a one-off job; SPEC §3). t must be
// a whole number of milliseconds (slots are Unix ms).
func Once(t time.Time) Schedule { return Schedule{at: t.UTC(), once: true} }

// At adds a one-off job: one slot, at t, run once across the instances that
// share the store and recorded in history like any other. An instance that
// starts after t still runs it if it is at most MaxLate late (or inside
// CatchUp.Window, on a backend with a RunStore); the claim makes sure no
// two instances run it. Once the slot has passed the job stays registered
// and does nothing.
//
// Besides the errors of [Scheduler.Add], it returns a *ValidationError
// with [CodeTooLate] when t is already more than MaxLate (plus
// CatchUp.Window) in the past by the store's clock, since no instance
// would run it, and CodeBadInterval for a zero t or one that is not a
// whole number of milliseconds.
func (s *Scheduler) At(name string, t time.Time, h Handler, opts *JobOptions) error {
	return s.Add(Job{Name: name, Schedule: Once(t), Handler: h, Options: opts})
}

// compileOnce checks a one-off schedule.
func (s *Scheduler) compileOnce(jb *job, at time.Time, o *JobOptions, bad badFunc) error {
	if at.IsZero() || at.Before(time.UnixMilli(0)) || !at.Before(neverSlot) {
		return bad("Schedule", CodeBadInterval, fmt.Sprintf("one-off time %v is not between 1970 and %d", at, neverSlot.Year()), nil)
	}
	if at.Truncate(time.Millisecond) != at {
		// Most often time.Now().Add(d): a time each instance computes for
		// itself is another slot on each, and each would run it.
		return bad("Schedule", CodeBadInterval, fmt.Sprintf("one-off time %v is not a whole number of milliseconds (slots are Unix ms); every instance must give the same time, so derive it from something they share, not from time.Now() (a time from the config, say)", at.Format(time.RFC3339Nano)), nil)
	}
	if o.Offset != 0 {
		return bad("Offset", CodeBadOption, "Offset moves an interval grid; a one-off job has none", nil)
	}
	jb.at = at
	return nil
}

// checkOnceLate refuses a one-off job whose slot no instance would run any
// more. o has its defaults.
func (s *Scheduler) checkOnceLate(jb *job, bad badFunc) error {
	if jb.at.IsZero() {
		return nil
	}
	o := jb.opt
	window := o.MaxLate + o.Jitter
	if jb.leased {
		window = max(window, o.CatchUp.Window+o.MaxLate)
	}
	if late := s.now().Sub(jb.at); late > window {
		return bad("Schedule", CodeTooLate, fmt.Sprintf("one-off time %s is %v in the past, beyond MaxLate (and CatchUp.Window) %v: no instance would run it", jb.at.Format(time.RFC3339Nano), late.Round(time.Millisecond), window), nil)
	}
	return nil
}

// startOnce starts a one-off job whose slot is due or past at Start: it is
// claimed at once, as late as MaxLate (or, with a RunStore, the catch-up
// window) allows; the store judges the lateness where it has a clock.
func (s *Scheduler) startOnce(j *job, now time.Time) {
	if j.at.IsZero() || j.at.After(now) {
		return // in the queue, or not one-off
	}
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Done()
		if j.leased {
			s.lease(j, j.at, max(j.opt.MaxLate, j.opt.CatchUp.Window+j.opt.MaxLate)).Run(s.loopCtx)
			return
		}
		s.fire(s.loopCtx, j, j.at)
	}()
}
