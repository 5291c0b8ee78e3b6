package anarchon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"
)

// ErrNotSupported is returned (wrapped) by a Scheduler method that needs an
// optional store ability the backend lacks: Pause, Resume and JobState
// without a [JobControl], Trigger without a [TriggerStore].
var ErrNotSupported = errors.New("anarchon: not supported by the backend")

// StatusPaused is the status of a slot that was not run because its job
// was paused (SPEC §12) when the slot was claimed. The store records it
// under [PausedToken], so history shows each paused slot once.
const StatusPaused Status = "paused"

// OutcomePaused is the lease claim outcome for an absent slot of a paused
// job: the store settles the slot as paused (no instance runs it, later
// claims get OutcomeNone) and records it in history. A scheduler that does
// not know the kind handles it like OutcomeDone, which is also right.
const OutcomePaused OutcomeKind = OutcomeLate + 1

// RunStatePaused is the stored state of a slot settled because its job was
// paused.
const RunStatePaused RunState = "paused"

// PausedToken is the token under which a paused slot (Unix ms) is
// recorded in history and, for plain claims, claimed: "paused-<slot>".
// Every claim of the slot then loses, whoever makes it, and the slot stays
// settled after a resume.
func PausedToken(slot int64) string { return "paused-" + strconv.FormatInt(slot, 10) }

// JobControl is an optional Backend interface (SPEC §12): a per-job paused
// state kept in the store, so that one call stops the job on every
// instance. A backend that implements it consults the state in its claim
// path: Claim and RunStore.Claim of a slot the store does not have yet,
// made after SetPaused(Paused: true) returned, settle the slot as paused
// instead of letting anyone run it — inside the claim's atomic step where
// the store allows, otherwise with a window its documentation states. A
// plain Claim then returns false for every token (the slot is claimed
// under PausedToken), a lease claim returns OutcomePaused once and
// OutcomeNone after. Either way the store records a history result with
// StatusPaused under PausedToken(slot). Slots already claimed (runs in
// progress) are not affected.
//
// Without it, Scheduler.Pause, Resume and JobState return ErrNotSupported,
// and a job with PauseOnFailure is refused with CodeNeedsJobControl.
type JobControl interface {
	// SetPaused stores in.Paused for in.Job with who set it and why, and
	// returns the stored state, At set by the store's clock. Setting the
	// state a job already has rewrites By, Reason and At. The job need not
	// have been prepared. It fails on an empty job name.
	SetPaused(ctx context.Context, in PauseInput) (JobState, error)
	// JobState returns the stored state of job: the zero state (Paused
	// false, At zero) for a job never paused.
	JobState(ctx context.Context, job string) (JobState, error)
	// JobStates lists every stored state (paused and resumed jobs), sorted
	// by job name.
	JobStates(ctx context.Context) ([]JobState, error)
}

// PauseInput is what [JobControl.SetPaused] is given. New fields may be
// added; a backend may ignore fields it does not know.
type PauseInput struct {
	Job    string // job name
	Paused bool   // true pauses, false resumes
	By     string // who asked: an instance ID, a user; may be empty
	Reason string // why; may be empty
}

// JobState is a job's control state in the store. Its last two fields,
// CatchUpKey and Resumed, are not stored: only Resume sets them, on the
// state it returns.
type JobState struct {
	Job    string    `json:"job"`
	Paused bool      `json:"paused"`
	By     string    `json:"by,omitempty"`     // who last set the state
	Reason string    `json:"reason,omitempty"` // why
	At     time.Time `json:"at"`               // when it was set, by the store's clock; zero if never set
	// CatchUpKey is set by Scheduler.Resume with ResumeOptions.CatchUp
	// alone, when it resumed a paused job: the trigger key of the
	// catch-up run it requested ([CatchUpKey] of the pause it read), so
	// that its caller need not read the pause itself, a read that a
	// resume racing a new pause would answer with another pause than the
	// one resumed (SPEC §12). It is set also when the resume was stored
	// and the request then failed (Resume returns the request's error):
	// the job is no longer paused, so a second Resume would request
	// nothing, and the run is requested under this key
	// (Scheduler.RequestTrigger). Empty in every other state; stores
	// neither keep nor set it.
	CatchUpKey string `json:"catch_up_key,omitempty"`
	// Resumed is set by Scheduler.Resume with ResumeOptions.CatchUp
	// alone: true when it found the job paused and stored its resume,
	// false when the job was not paused and was left as it was. A resume
	// whose pause covered no slot of the job requests no catch-up run
	// (CatchUpKey empty), so CatchUpKey alone cannot tell the two apart.
	// Stores neither keep nor set it.
	Resumed bool `json:"-"`
}

// PauseOptions are the options of [Scheduler.Pause].
type PauseOptions struct {
	Reason string // why, shown by status and kept in the store; may be empty
	By     string // who; defaults to this instance's ID
}

// ResumeOptions are the options of [Scheduler.Resume].
type ResumeOptions struct {
	By string // who; defaults to this instance's ID
	// CatchUp runs the job once at resume, in place of the slots it missed
	// while paused, if it missed any (a slot of its schedule came due
	// after the pause's time and at or before the resume's, both by the
	// store's clock): a Trigger whose key is derived from the pause (so
	// replicas or clients that resume the same pause with CatchUp run it
	// once), requested by By, and named by the returned state's
	// CatchUpKey. A job that is not paused is then left as it is.
	// Defaults to false: paused slots are not replayed.
	CatchUp bool
}

// jobControl returns the backend's JobControl or ErrNotSupported.
func (s *Scheduler) jobControl() (JobControl, error) {
	if s.control == nil {
		return nil, fmt.Errorf("%w: pause and resume need a store with JobControl; %q has none", ErrNotSupported, s.backend.Name())
	}
	return s.control, nil
}

// knownJob returns the registered job called name, or ErrNotFound.
func (s *Scheduler) knownJob(name string) (*job, error) {
	s.mu.Lock()
	j := s.jobs[name]
	s.mu.Unlock()
	if j == nil {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return j, nil
}

// controlJob makes the checks every job-control call on a named job makes:
// the backend has a JobControl, which it returns; the job is registered
// here; the backend is initialised.
func (s *Scheduler) controlJob(ctx context.Context, name string) (JobControl, error) {
	jc, err := s.jobControl()
	if err != nil {
		return nil, err
	}
	if _, err := s.readyJob(ctx, name); err != nil {
		return nil, err
	}
	return jc, nil
}

// readyJob returns the registered job called name (ErrNotFound) with the
// backend initialised, for a call about the job on a scheduler that need
// not be started.
func (s *Scheduler) readyJob(ctx context.Context, name string) (*job, error) {
	j, err := s.knownJob(name)
	if err != nil {
		return nil, err
	}
	return j, s.ensureInit(ctx)
}

// Pause pauses the named job on every instance that shares the store:
// no slot whose claim reaches the store after Pause returns is run; each
// is recorded in history as StatusPaused (SPEC §12). Runs in progress
// finish. The job must be registered with this scheduler (ErrNotFound
// otherwise); the scheduler need not be started. It returns the stored
// state, ErrNotSupported when the backend has no JobControl, and the
// backend's errors unchanged.
func (s *Scheduler) Pause(ctx context.Context, name string, opts PauseOptions) (JobState, error) {
	jc, err := s.controlJob(ctx, name)
	if err != nil {
		return JobState{}, err
	}
	return s.setPaused(ctx, jc, PauseInput{Job: name, Paused: true, By: opts.By, Reason: opts.Reason})
}

// Resume lets the named job run again from its next slot, on every
// instance, and returns the stored state. Slots missed while it was paused
// stay paused in history unless opts.CatchUp asks for one run in their
// place (SPEC §12): Resume then reads the job's state first; a job that
// is not paused is left as it is (the state returned is the stored one,
// naming who last resumed it and when, or zero for a job never paused)
// and nothing is requested; a paused one is resumed
// (the returned state's Resumed is true) and, when a slot of the job came
// due while it was paused, its catch-up run is requested under the key
// the returned state's CatchUpKey names. Errors as for Pause; with CatchUp, also those of
// Trigger's request (the run itself is not waited for), returned with the
// resumed state and its CatchUpKey: the resume is stored, the run is not
// requested.
func (s *Scheduler) Resume(ctx context.Context, name string, opts ResumeOptions) (JobState, error) {
	jc, err := s.jobControl()
	if err != nil {
		return JobState{}, err
	}
	j, err := s.readyJob(ctx, name) // controlJob's checks, keeping the job for its schedule
	if err != nil {
		return JobState{}, err
	}
	if !opts.CatchUp {
		return s.setPaused(ctx, jc, PauseInput{Job: name, Paused: false, By: opts.By})
	}
	prev, err := jc.JobState(ctx, name)
	if err != nil {
		return JobState{}, err
	}
	if !prev.Paused {
		// Nothing was missed, so nothing is requested; and a write would
		// only replace who resumed the job, and when, by a resume that
		// changed nothing.
		return prev, nil
	}
	st, err := s.setPaused(ctx, jc, PauseInput{Job: name, Paused: false, By: opts.By})
	if err != nil {
		return st, err
	}
	st.Resumed = true
	// Missed slots are the schedule's between the pause and the resume,
	// both stamped by the store's clock. Without one there is nothing to
	// run in their place.
	if j.nextSlot(prev.At).After(st.At) {
		return st, nil
	}
	// The key is the pause's that this call read and resumed, whatever
	// pause comes after it.
	st.CatchUpKey = CatchUpKey(prev)
	// The catch-up request is the resume's: its By, as the state's.
	_, err = s.requestTrigger(ctx, name, st.CatchUpKey, cmp.Or(opts.By, s.opts.InstanceID))
	return st, err
}

// CatchUpKey is the trigger key of the catch-up run that Resume with
// ResumeOptions.CatchUp requests for the pause paused (the job's state
// before the resume), when a slot came due during it: "resume-" and the
// pause's time in Unix ms. The
// pause's time names it, so every resume of this pause that asks for a
// catch-up requests the same trigger, which runs once; WaitTrigger with
// the key waits for it.
func CatchUpKey(paused JobState) string {
	return "resume-" + strconv.FormatInt(paused.At.UnixMilli(), 10)
}

// setPaused stores in, By defaulting to this instance's ID.
func (s *Scheduler) setPaused(ctx context.Context, jc JobControl, in PauseInput) (JobState, error) {
	if in.By == "" {
		in.By = s.opts.InstanceID
	}
	return jc.SetPaused(ctx, in)
}

// JobState returns the named job's control state in the store (paused or
// not, by whom, when, why). Errors as for Pause.
func (s *Scheduler) JobState(ctx context.Context, name string) (JobState, error) {
	jc, err := s.controlJob(ctx, name)
	if err != nil {
		return JobState{}, err
	}
	return jc.JobState(ctx, name)
}

// JobStates lists the control state of every job the store has one for
// (including jobs this scheduler does not have), sorted by name.
// ErrNotSupported without a JobControl.
func (s *Scheduler) JobStates(ctx context.Context) ([]JobState, error) {
	jc, err := s.jobControl()
	if err != nil {
		return nil, err
	}
	if err := s.ensureInit(ctx); err != nil {
		return nil, err
	}
	return jc.JobStates(ctx)
}

// afterFailure pauses j cluster-wide once its last PauseOnFailure runs in
// the store's history all failed (a slot counts once, by its last attempt). It runs after a failed run's result was
// stored, so the history it reads includes that run; runs on other
// instances count too. Slots that did not run (paused, missed, skipped)
// and runs still going neither count nor break the row.
func (s *Scheduler) afterFailure(ctx context.Context, j *job, lastErr string) {
	n := j.opt.PauseOnFailure
	if n <= 0 {
		return
	}
	jc := s.control
	if jc == nil {
		return
	}
	hist, err := s.backend.History(ctx, j.name, 4*n+16)
	if err != nil {
		s.storeError(ctx, "History", j.name, time.Time{}, err)
		return
	}
	row := 0
	seen := make(map[time.Time]bool, len(hist))
count:
	for _, r := range hist {
		// A slot counts once, by its newest record: the earlier failed
		// attempts of a retried slot (JobOptions.Retry) are not runs of
		// their own.
		if seen[r.Slot] {
			continue
		}
		seen[r.Slot] = true
		switch r.Status {
		case StatusError, StatusAbandoned:
			if row++; row >= n {
				break count
			}
		case StatusSuccess:
			break count
		}
	}
	if row < n {
		return
	}
	reason := "paused after " + strconv.Itoa(n) + " failed runs in a row; last error: " + lastErr
	st, err := s.setPaused(ctx, jc, PauseInput{Job: j.name, Paused: true, Reason: reason})
	if err != nil {
		s.storeError(ctx, "SetPaused", j.name, time.Time{}, err)
		return
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "job paused after failures", slog.String("job", j.name), slog.String("reason", st.Reason))
}
