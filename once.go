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

// latestOnce is the latest time a one-off job may have: the end of year
// 9999, the last a history record can carry (RFC 3339 and JSON write four
// digits of year, and time.Time's MarshalJSON fails beyond it).
var latestOnce = time.Date(9999, time.December, 31, 23, 59, 59, 999_000_000, time.UTC)

// At adds a one-off job: one slot, at t, run once across the instances that
// share the store and recorded in history like any other. An instance that
// starts after t still runs it if it is at most MaxLate late (or inside
// CatchUp.Window, on a backend with a RunStore); the claim makes sure no
// two instances run it. Once the slot has passed the job stays registered
// and does nothing.
//
// Besides the errors of [Scheduler.Add], it returns a *ValidationError
// (Field "Schedule") with [CodeTooLate] when t is already more than
// MaxLate (plus CatchUp.Window) in the past by the store's clock, since
// no instance would run it; that is said first, whatever else is wrong
// with a past t (a time.Now() a second ago has a fraction of a
// millisecond too, but its being past is what matters). It returns
// [CodeBadTime] for a zero t (never set), one after 9999-12-31T23:59:59.999Z
// (the last a history record's RFC 3339 or JSON time carries), one
// before 1970 (slots are Unix ms) that is not too late, and one that is
// not a whole number of milliseconds.
func (s *Scheduler) At(name string, t time.Time, h Handler, opts *JobOptions) error {
	return s.Add(Job{Name: name, Schedule: Once(t), Handler: h, Options: opts})
}

// compileOnce checks what a one-off schedule's time is whatever the time
// now; checkOnceLate checks the rest once the options are known.
func (s *Scheduler) compileOnce(jb *job, at time.Time, o *JobOptions, bad badFunc) error {
	if at.IsZero() {
		return bad("Schedule", CodeBadTime, "the one-off time is zero: it was never set", nil)
	}
	if at.After(latestOnce) {
		return bad("Schedule", CodeBadTime, fmt.Sprintf("one-off time %s is after %s, the latest a history record can carry", at.Format(time.RFC3339Nano), latestOnce.Format(time.DateOnly)), nil)
	}
	if o.Offset != 0 {
		return bad("Offset", CodeBadOption, "Offset moves an interval grid; a one-off job has none", nil)
	}
	jb.at = at
	return nil
}

// checkOnceLate refuses a one-off job whose slot no instance would run any
// more, then one whose time is not a slot. o has its defaults.
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
		return bad("Schedule", CodeTooLate, fmt.Sprintf("one-off time %s is %s in the past, beyond MaxLate (and CatchUp.Window) %v: no instance would run it", jb.at.Format(time.RFC3339Nano), ago(late), window), nil)
	}
	if jb.at.Before(time.UnixMilli(0)) {
		return bad("Schedule", CodeBadTime, fmt.Sprintf("one-off time %s is before 1970-01-01 (slots are Unix ms)", jb.at.Format(time.RFC3339Nano)), nil)
	}
	if jb.at.Truncate(time.Millisecond) != jb.at {
		// Most often time.Now().Add(d): a time each instance computes for
		// itself is another slot on each, and each would run it.
		return bad("Schedule", CodeBadTime, fmt.Sprintf("one-off time %v is not a whole number of milliseconds (slots are Unix ms); every instance must give the same time, so derive it from something they share, not from time.Now() (a time from the config, say)", jb.at.Format(time.RFC3339Nano)), nil)
	}
	return nil
}

// ago words a lateness for a person: in days beyond two, where hours
// would run to six digits (a time of 1960), and a Duration's ceiling
// (time.Time.Sub saturates) as what it is.
func ago(late time.Duration) string {
	switch {
	case late == math.MaxInt64:
		return "more than 292 years"
	case late > 48*time.Hour:
		return fmt.Sprintf("%d days", late/(24*time.Hour))
	}
	return late.Round(time.Millisecond).String()
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
