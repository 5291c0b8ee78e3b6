package anarchon

import (
	"context"
	"math"
	"time"
)

// Forever is the DedupeWindow of a backend that remembers every claimed run
// for good (SPEC §4). It is the largest time.Duration.
const Forever time.Duration = math.MaxInt64

// Backend is the store that instances share. Its one rule (SPEC §2): for one
// job and one slot, Claim returns true for exactly one instance.
//
// Every method that does I/O takes a context first. Errors a backend returns
// reach the caller unchanged (wrapped with %w at most); a backend translates
// native errors at its boundary and keeps the native one reachable with
// errors.Unwrap. Losing a claim race is a result (false), not an error.
//
// More abilities are separate, optional interfaces found by type assertion
// (the database/sql/driver way): [JobChecker], [ClaimRecorder],
// [LeaseBackend], [Watcher], [ServerClock], [JobControl], [TriggerStore],
// [InstanceRegistry]. A backend written against this
// interface keeps compiling when members are added (SPEC §9).
type Backend interface {
	// Name is a short name for logs and metrics, e.g. "memory", "postgres".
	Name() string
	// DedupeWindow is how long a claimed run is remembered. Forever if always.
	// The scheduler refuses jobs whose Jitter+MaxLate (and catch-up window)
	// is not below it (SPEC §4).
	DedupeWindow() time.Duration
	// Init connects and checks the server. The scheduler calls it in Start,
	// and before reads (History) on a scheduler that was not started. It must
	// be safe to call more than once and from several goroutines.
	Init(ctx context.Context) error
	// PrepareJob does one-time per-job setup (a table, stream or keys) for
	// in.Job. It is called once per job by Start (and by RunNow on a
	// scheduler that was not started) and must be idempotent across
	// instances starting at once.
	PrepareJob(ctx context.Context, in PrepareJobInput) error
	// Claim atomically records that in.InstanceID runs (in.Job, in.Slot).
	// It returns true for exactly one instance per (job, slot); a repeat of
	// the winning call with the same in.Token returns true again, any other
	// token false (SPEC §4, repeat safety).
	Claim(ctx context.Context, in ClaimInput) (bool, error)
	// RecordManualRun records a RunNow run, without deduplication. It returns
	// the slot it used (Unix ms), which may differ from in.Slot if the store
	// needs a unique one; returning in.Slot is always correct.
	RecordManualRun(ctx context.Context, in ClaimInput) (slot int64, err error)
	// SaveResult stores in.Result, how a run of in.Job ended, and trims the
	// job's history to in.HistorySize records (<= 0: DefaultHistorySize)
	// and, if in.HistoryTTL > 0, to records younger than in.HistoryTTL,
	// measured from when each record was last written (store clock). One
	// record is what History returns as one RunRecord: everything stored
	// under one token — its claim, its result, or both. Trimming keeps the
	// newest records in History's order and must never reopen a slot
	// inside DedupeWindow.
	SaveResult(ctx context.Context, in SaveResultInput) error
	// History returns at most limit recent runs of job from all instances,
	// newest first (by slot, then by start). limit <= 0 means the backend's
	// whole retained history. Use [BuildHistory] to build it, passing
	// results in the order they were saved (a later save of a token wins).
	History(ctx context.Context, job string, limit int) ([]RunRecord, error)
	// Close releases what the backend opened itself (never a client the
	// caller passed in). After Close, methods return an error wrapping
	// ErrClosed; a second Close returns nil.
	Close(ctx context.Context) error
}

// ClaimInput is what an instance sends to claim a run.
// New fields may be added; a backend may ignore fields it does not know.
type ClaimInput struct {
	Job         string        // job name, the job's identity across instances
	Slot        int64         // scheduled time, Unix milliseconds; (Job, Slot) is the run's identity
	Token       string        // random value unique to this claim attempt (repeat safety)
	InstanceID  string        // the claiming instance
	HistorySize int           // records of history to keep for the job (one record per token, see Backend.SaveResult)
	HistoryTTL  time.Duration // how long to keep history records; 0 = no limit
}

// PrepareJobInput is what [Backend.PrepareJob] is given.
// New fields may be added; a backend may ignore fields it does not know.
type PrepareJobInput struct {
	Job         string // job name
	HistorySize int    // records of history the job keeps; <= 0 means DefaultHistorySize
}

// SaveResultInput is what [Backend.SaveResult] and
// [ResultFinisher.FinishResult] are given.
// New fields may be added; a backend may ignore fields it does not know.
type SaveResultInput struct {
	Job         string        // job name
	Result      StoredResult  // how the run ended
	HistorySize int           // records of history to keep for the job (one record per token); <= 0 means DefaultHistorySize
	HistoryTTL  time.Duration // how long to keep history records, from each one's last write; 0 = no limit
}

// Status is how a run ended, or why a slot did not run. Stored as its string
// value.
type Status string

// Run statuses. Backends store these strings verbatim; readers must accept
// values they do not know (SPEC §9).
const (
	StatusRunning     Status = "running"     // claimed, no result yet
	StatusSuccess     Status = "success"     // the handler returned nil
	StatusError       Status = "error"       // the handler returned an error, panicked or timed out
	StatusLeaseLost   Status = "lease_lost"  // the run lost its lease; a backup owns the slot
	StatusHandedOver  Status = "handed_over" // the instance stopped and released the run to a backup
	StatusUnconfirmed Status = "unconfirmed" // the handler ended but the store never confirmed the finish; the slot may run again
	StatusAbandoned   Status = "abandoned"   // takeovers used up MaxAttempts
	StatusMissed      Status = "missed"      // the slot was more than MaxLate past due (or outside catch-up)
	StatusSkipped     Status = "skipped"     // another run of the job was still running (overlap policy skip)
	StatusReplaced    Status = "replaced"    // a later slot of the job replaced the run (overlap policy replace)
)

// Final reports whether s settles a slot: no further attempt will run it.
func (s Status) Final() bool {
	switch s {
	case StatusSuccess, StatusError, StatusAbandoned, StatusMissed, StatusSkipped, StatusPaused, StatusReplaced:
		return true
	}
	return false
}

// NotRun reports whether s records a slot that was settled without its
// handler running: missed, skipped or paused. Such a record's Error says
// why (SPEC §12).
func (s Status) NotRun() bool {
	switch s {
	case StatusMissed, StatusSkipped, StatusPaused:
		return true
	}
	return false
}

// StoredResult is what SaveResult stores for a run.
type StoredResult struct {
	Slot       int64     // Unix ms
	Token      string    // the claim's token; matches the ClaimRecord
	InstanceID string    // who ran it
	Attempt    int       // 1 for the first holder, +1 per takeover; 1 without leases
	Status     Status    // how it ended; never empty
	StartedAt  time.Time // handler start (zero for slots that did not run)
	FinishedAt time.Time // handler end
	Error      string    // error text, "" on success
	Output     string    // optional tail of the run's output (the daemon keeps a few KiB)
	Manual     bool      // a RunNow run
}

// ClaimRecord is a claim as a backend keeps it, one of the inputs of
// [BuildHistory].
type ClaimRecord struct {
	Slot       int64     // Unix ms
	Token      string    // the claim's token
	InstanceID string    // the claimer
	ClaimedAt  time.Time // by the store's clock where it has one
	Attempt    int       // 0 is read as 1
	Manual     bool      // recorded by RecordManualRun
}

// RunRecord is one run in a job's history, as History returns it.
// New fields may be added (SPEC §9).
type RunRecord struct {
	Job        string
	Slot       time.Time // the scheduled time (UTC)
	InstanceID string
	Token      string
	Attempt    int
	Status     Status // StatusRunning while no result is stored
	ClaimedAt  time.Time
	StartedAt  time.Time // zero until the run's result is stored, and for a slot not run
	FinishedAt time.Time
	Error      string
	Output     string
	Manual     bool
}
