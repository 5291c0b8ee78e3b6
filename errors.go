package anarchon

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Test for them with [errors.Is]; anarchon wraps them with
// context but never replaces them.
var (
	// ErrClosed is returned (wrapped) by a backend used after its Close.
	ErrClosed = errors.New("anarchon: closed")
	// ErrNotFound is returned by RunNow and History for a job name that was
	// never registered with the scheduler.
	ErrNotFound = errors.New("anarchon: job not found")
	// ErrLeaseLost is the cause of a handler's context when its lease was
	// lost: the store answered a heartbeat with false, or heartbeats failed
	// until the lease ran out (SPEC §6). The run's result is not stored as the
	// slot's outcome.
	ErrLeaseLost = errors.New("anarchon: lease lost")
	// ErrStopped is the cause of a handler's context when the scheduler's Stop
	// deadline passed before the handler returned; with leases its run is
	// handed over to a backup. Start, Add and RunNow return it after Stop.
	ErrStopped = errors.New("anarchon: scheduler stopped")
	// ErrTimeout is the cause of a handler's context when the job's Timeout
	// elapsed.
	ErrTimeout = errors.New("anarchon: run timed out")
	// ErrStarted is returned when Start is called on a scheduler that has
	// already been started.
	ErrStarted = errors.New("anarchon: scheduler already started")
	// ErrReplaced is the cause of a handler's context when a later slot
	// of its job replaced its run (OverlapReplace, SPEC §6): the store
	// settled the run as replaced, and its holder learns it at its next
	// heartbeat (at once with a store that has a Watcher). The run is
	// recorded with StatusReplaced; it is not retried.
	ErrReplaced = errors.New("anarchon: run replaced by a later slot")
	// ErrRemoved is the cause of a handler's context when Remove cancelled
	// its run (RemoveOptions.Cancel without a Cause).
	ErrRemoved = errors.New("anarchon: job removed")
	// ErrNotStarted is returned by Stop on a scheduler that was never started.
	ErrNotStarted = errors.New("anarchon: scheduler not started")

	// ErrTriggerRunnerGone is returned (wrapped) by Scheduler.Trigger,
	// WaitTrigger and CancelTrigger when the instance running the request is gone by the
	// instance registry: its record is dead or stopped, or says it started
	// again after it took the request (SPEC §12). The request is left as
	// it is, running.
	ErrTriggerRunnerGone = errors.New("anarchon: the instance running the trigger is gone")
	// ErrNoBackend is returned by Start, and wrapped in the ValidationError
	// of every job added, when New was given a nil Backend.
	ErrNoBackend = errors.New("anarchon: no backend")
	// ErrPermanent marks an error that will not go away if the call is
	// repeated: for a store, a dropped table, a refused input, a closed
	// backend; for a handler, whatever it decides is not worth a retry.
	// Both mark such errors with [Permanent]; the scheduler gives a store
	// call that failed with one up at once instead of retrying it, and
	// does not retry a handler that returned one. An error without the
	// mark is taken to be transient (a timeout, a lost connection).
	ErrPermanent = errors.New("anarchon: permanent store error")
)

// Permanent marks err as permanent: errors.Is(result, ErrPermanent) is
// true, and err stays reachable by errors.Is and errors.As. The result's
// message is err's. Permanent(nil) is nil. It has one meaning in two
// places, "repeating this cannot help":
//
//   - A backend calls it at its boundary on store errors that retrying
//     cannot fix (SPEC §4, error classes); the scheduler then gives the
//     store call up at once.
//   - A handler returns it (or panics with it: [PanicError] unwraps to
//     it) to say its error is not worth retrying: the
//     slot ends with that error whatever JobOptions.Retry allows (SPEC §6,
//     retries). The recorded error text is err's.
func Permanent(err error) error {
	if err == nil || errors.Is(err, ErrPermanent) {
		return err
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or an error it wraps, was marked with
// [Permanent] (or wraps ErrPermanent directly).
func IsPermanent(err error) bool { return errors.Is(err, ErrPermanent) }

// permanentError is err marked permanent; it unwraps to both.
type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() []error { return []error{e.err, ErrPermanent} }

// Code is the stable, machine-readable kind of a [ValidationError]. Codes
// never change meaning between versions; new codes may be added.
type Code string

// Validation codes, returned in [ValidationError.Code].
const (
	CodeEmptyName        Code = "empty_name"        // the job name is empty
	CodeBadName          Code = "bad_name"          // the job name is longer than MaxNameLength bytes, is not valid UTF-8, has a control character, is blank or has blanks around it (SPEC §3)
	CodeDuplicateName    Code = "duplicate_name"    // a job with this name is already registered
	CodeBadCron          Code = "bad_cron"          // the cron expression does not parse, or can never fire
	CodeUnknownZone      Code = "unknown_zone"      // the time zone is not in the tz database, or is "Local" (refused on every job, also where the zone is not used)
	CodeNegativeDuration Code = "negative_duration" // a duration option is negative
	CodeBadInterval      Code = "bad_interval"      // an interval is zero or negative, or Offset is outside [0, interval)
	CodeBadOption        Code = "bad_option"        // another option is out of its range (e.g. negative HistorySize)
	CodeNoHandler        Code = "no_handler"        // the handler is nil
	CodeDedupeWindow     Code = "dedupe_window"     // Jitter+MaxLate (or the catch-up window) is not below Backend.DedupeWindow (SPEC §4)
	CodeNeedsRunStore    Code = "needs_run_store"   // the job asks for leases, overlap protection or catch-up and the backend has no RunStore (SPEC §6)
	CodeBackendRefused   Code = "backend_refused"   // the backend's JobChecker refused the job; the backend's error is wrapped
	CodeNeedsJobControl  Code = "needs_job_control" // the job has PauseOnFailure and the backend has no JobControl (SPEC §12)
	CodeBadRange         Code = "bad_range"         // a backfill's from is not before its to, or to is in the future
	CodeTooManySlots     Code = "too_many_slots"    // a backfill's range holds more than BackfillOptions.MaxSlots slots and was not confirmed
	CodeTooLate          Code = "too_late"          // a one-off job's time is further in the past than MaxLate (and CatchUp.Window) allow: no instance would run it
	CodeBadTime          Code = "bad_time"          // a one-off job's time that is not too late (too_late) but can be no slot: zero (never set), after 9999, before 1970 or not a whole number of milliseconds
)

// ValidationError reports a job that cannot be registered. It is returned by
// the Scheduler's Every, Cron and Add methods; registration never panics.
// NextSlots returns one for a count out of its range, and Start one for
// a field of the scheduler's [Options] out of its range, with Job empty
// and Field "Options.<field>" (Add returns the same with Job naming the
// job it was given).
//
// Match it with [errors.As] and switch on Code, which is stable:
//
//	var ve *anarchon.ValidationError
//	if errors.As(err, &ve) && ve.Code == anarchon.CodeBadCron { … }
type ValidationError struct {
	Job    string // the job name as given (may be empty); Error shows at most 64 bytes of one longer than MaxNameLength
	Field  string // the option at fault, e.g. "Schedule", "Zone", "Jitter", "Options.PollInterval"
	Code   Code   // stable kind of the error
	Reason string // human-readable detail
	Err    error  // the underlying error, if any (a cron parse error, a backend's refusal)
}

// Error implements error. An error of the scheduler's Options (Job
// empty, Field "Options.…") names no job.
func (e *ValidationError) Error() string {
	if e.Job == "" && strings.HasPrefix(e.Field, "Options.") {
		return fmt.Sprintf("anarchon: %s: %s (%s)", e.Field, e.Reason, e.Code)
	}
	job := e.Job
	if len(job) > MaxNameLength {
		// Not a name that can be registered: a part of it says which.
		job = shorten(job)
	}
	return fmt.Sprintf("anarchon: job %q: %s: %s (%s)", job, e.Field, e.Reason, e.Code)
}

// Unwrap returns the underlying error, so that errors.Is and errors.As reach
// a backend's own error or the cron parser's.
func (e *ValidationError) Unwrap() error { return e.Err }

// EarlyTolerance is how far ahead of the store's clock a slot may be when
// it is claimed: a store refuses to create the claim of a slot later than
// its own now plus EarlyTolerance, with an [*EarlyError] (SPEC §4, "Never
// early"). It covers the rounding of times to the millisecond and the
// scheduler's estimate of the store's clock, which errs on the late side;
// a claim refused by a few milliseconds is tried again once the store's
// clock has reached the slot.
const EarlyTolerance = 5 * time.Millisecond

// ErrEarly is wrapped by the [*EarlyError] a store returns for a claim of
// a slot that its own clock has not reached (beyond EarlyTolerance).
var ErrEarly = errors.New("anarchon: slot not yet due by the store's clock")

// EarlyError is a store's refusal of a claim whose slot is later than the
// store's now plus [EarlyTolerance]: the claiming instance's clock is
// ahead of the store's (a clock stepped by NTP, a resumed machine). Nothing
// was written. The scheduler re-measures its offset to the store's clock
// at once and claims the slot again when it is due. errors.Is(err,
// ErrEarly) holds; the error is transient (not [Permanent]).
type EarlyError struct {
	Job      string
	Slot     int64 // the slot claimed, Unix ms
	StoreNow int64 // the store's clock when it refused, Unix ms; 0 if the store did not say
}

// Error implements error.
func (e *EarlyError) Error() string {
	if e.StoreNow == 0 {
		return fmt.Sprintf("anarchon: job %q: slot %d is in the future by the store's clock: claim refused", e.Job, e.Slot)
	}
	return fmt.Sprintf("anarchon: job %q: slot %d is %v ahead of the store's clock: claim refused",
		e.Job, e.Slot, time.Duration(e.Slot-e.StoreNow)*time.Millisecond)
}

// Unwrap returns ErrEarly.
func (e *EarlyError) Unwrap() error { return ErrEarly }

// TooEarly reports whether a store whose clock reads nowMs must refuse a
// claim of slot (both Unix ms): slot > nowMs + EarlyTolerance. Backends
// that judge the slot in Go (a memory map, a key-value store read
// before its conditional write) use it; SQL and scripts compare the same
// way on the server.
func TooEarly(slot, nowMs int64) bool {
	return slot > nowMs+EarlyTolerance.Milliseconds()
}
