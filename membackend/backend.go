package membackend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/anarchon/anarchon"
)

// Options configure a [Backend]. The zero value (and a nil *Options) gives
// the defaults stated on each field.
type Options struct {
	// Now is the store's clock: it judges leases, lateness, history age and
	// the dedupe window (SPEC §6, "one clock: the store's"). Tests pass a
	// fake clock here. Defaults to time.Now.
	Now func() time.Time
	// DedupeWindow is how long a claimed run is remembered. 0 means
	// anarchon.Forever: claims are never forgotten. A positive window lets
	// the store forget claims (and settled lease runs) whose last change is
	// older than the window, measured with Now; it exists so that the
	// scheduler's dedupe-window check (SPEC §4) can be tested. Negative
	// values are treated as 0.
	DedupeWindow time.Duration
	// Fault is a test hook. When set, every I/O method calls it first
	// (after the check of its context, which an ended one fails) with
	// its operation name — "Claim", "RunClaim" (the RunStore's Claim),
	// "Heartbeat", "Finish", "Release", "Active", "SaveResult", "History",
	// "RecordManualRun", "RecordClaim", "PrepareJob", "Init", "ServerTime",
	// "WatchRuns" — and a non-nil error fails that call, unchanged and
	// before any state changes. A batch calls it once per claim with the
	// single call's name ("Claim", "RunClaim", "RecordClaim",
	// "SaveResult", …), whose error fails that entry alone, then once as
	// the batch ("ClaimBatch", "ClaimRuns", "RecordClaims",
	// "SaveResults", …), whose error fails the batch. Defaults to nil (no faults). It must be
	// safe for concurrent use.
	Fault func(op string) error
}

// Backend is the in-memory store. It implements [anarchon.Backend],
// [anarchon.LeaseBackend], [anarchon.ClaimRecorder], [anarchon.Watcher] and
// [anarchon.ServerClock]. Every method is safe for concurrent use; one
// *Backend shared by several schedulers behaves like one store shared by
// several processes. Create it with [New].
type Backend struct {
	now    func() time.Time
	window time.Duration
	fault  func(string) error

	mu       sync.Mutex
	closed   bool
	jobs     map[string]*jobState
	watchers map[*watcher]struct{}
	insts    map[string]*instance                   // the instance registry (registry.go), made on first use
	ctl      map[string]anarchon.JobState           // job control (control.go), made on first use
	triggers map[triggerKey]*anarchon.TriggerRecord // trigger requests (control.go), made on first use
}

var (
	_ anarchon.Backend        = (*Backend)(nil)
	_ anarchon.LeaseBackend   = (*Backend)(nil)
	_ anarchon.ClaimRecorder  = (*Backend)(nil)
	_ anarchon.Watcher        = (*Backend)(nil)
	_ anarchon.ServerClock    = (*Backend)(nil)
	_ anarchon.RunStore       = (*RunStore)(nil)
	_ anarchon.ResultFinisher = (*RunStore)(nil)
	_ anarchon.Watcher        = (*RunStore)(nil)
	_ anarchon.ServerClock    = (*RunStore)(nil)
)

// New returns an empty store. opts may be nil for the defaults.
func New(opts *Options) *Backend {
	b := &Backend{
		now:      time.Now,
		window:   anarchon.Forever,
		jobs:     make(map[string]*jobState),
		watchers: make(map[*watcher]struct{}),
	}
	if opts != nil {
		if opts.Now != nil {
			b.now = opts.Now
		}
		if opts.DedupeWindow > 0 {
			b.window = opts.DedupeWindow
		}
		b.fault = opts.Fault
	}
	return b
}

// Name returns "memory".
func (b *Backend) Name() string { return "memory" }

// DedupeWindow returns Options.DedupeWindow, or anarchon.Forever when none
// was set (SPEC §4).
func (b *Backend) DedupeWindow() time.Duration { return b.window }

// claimKey is one remembered plain claim: enough to answer repeats.
type claimKey struct {
	token string
	at    time.Time // store clock when the claim was won
}

// jobState is everything the store keeps for one job.
type jobState struct {
	// claims are the plain claims (SPEC §4), kept apart from history so that
	// trimming history never reopens a slot.
	claims map[int64]claimKey
	// runs are the lease runs (SPEC §6), settled ones included.
	runs map[int64]*run
	// active holds the slots of runs that are running or released.
	active map[int64]struct{}
	// hist is the retained history, one entry per token.
	hist history
	// historySize and historyTTL are the last trimming rules the job was
	// given, used by operations that do not carry them (Finish).
	historySize int
	historyTTL  time.Duration
	// swept is the store time of the last sweep of forgotten claims.
	swept time.Time
	// fence is the last fencing token given to a won lease claim of the
	// job (ClaimOutcome.Fence); the next win takes fence+1.
	fence uint64
}

// op starts an operation: the context check, the fault hook, then the
// lock and the closed check. On success the caller holds b.mu and must
// unlock it.
func (b *Backend) op(ctx context.Context, name string) error {
	// A call whose context has ended fails as a call to a server would,
	// before it does anything.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("membackend: %s: %w", name, err)
	}
	if b.fault != nil {
		if err := b.fault(name); err != nil {
			return err
		}
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return permanentf("membackend: %s: %w", name, anarchon.ErrClosed)
	}
	return nil
}

// job returns the state of job, creating it. Caller holds b.mu.
func (b *Backend) job(name string) *jobState {
	j := b.jobs[name]
	if j == nil {
		j = &jobState{
			claims:      make(map[int64]claimKey),
			runs:        make(map[int64]*run),
			active:      make(map[int64]struct{}),
			historySize: anarchon.DefaultHistorySize,
		}
		b.jobs[name] = j
	}
	return j
}

// errEmptyJob and friends report bad input.
var (
	errEmptyJob   = anarchon.Permanent(errors.New("membackend: empty job name"))
	errEmptyToken = anarchon.Permanent(errors.New("membackend: empty claim token"))
)

// setLimits remembers the job's trimming rules. A size of 0 keeps the one
// known before.
func (j *jobState) setLimits(size int, ttl time.Duration) {
	if size > 0 {
		j.historySize = size
	}
	j.historyTTL = ttl
}

// Init checks nothing (there is no server) and returns nil, or an error
// wrapping ctx's when it has ended, or anarchon.ErrClosed after Close.
func (b *Backend) Init(ctx context.Context) error {
	if err := b.op(ctx, "Init"); err != nil {
		return err
	}
	b.mu.Unlock()
	return nil
}

// ServerTime implements [anarchon.ServerClock]: it returns Options.Now().
func (b *Backend) ServerTime(ctx context.Context) (time.Time, error) {
	if err := b.op(ctx, "ServerTime"); err != nil {
		return time.Time{}, err
	}
	defer b.mu.Unlock()
	return b.now(), nil
}

// Close marks the store closed and closes every watch channel. Every later
// call of another method returns an error wrapping anarchon.ErrClosed;
// Close itself may be called again and returns nil.
func (b *Backend) Close(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	for w := range b.watchers {
		w.stop()
		delete(b.watchers, w)
	}
	return nil
}

// sweep forgets what a finite dedupe window allows: plain claims, and
// settled lease runs, whose last change is older than the window. It runs
// at most once per tenth of the window. Caller holds b.mu.
func (b *Backend) sweep(j *jobState, now time.Time) {
	if b.window == anarchon.Forever {
		return
	}
	if !j.swept.IsZero() && now.Sub(j.swept) < b.window/10 {
		return
	}
	j.swept = now
	cutoff := now.Add(-b.window)
	for slot, c := range j.claims {
		if c.at.Before(cutoff) {
			delete(j.claims, slot)
		}
	}
	for slot, r := range j.runs {
		if r.settled() && r.changed.Before(cutoff) {
			delete(j.runs, slot)
		}
	}
}

// permanentf makes an error marked anarchon.Permanent: every error of the
// memory store is bad input or a closed store, which a retry cannot fix.
func permanentf(format string, args ...any) error {
	return anarchon.Permanent(fmt.Errorf(format, args...))
}
