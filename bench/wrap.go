package bench

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon"
)

// Op names a counted backend call, as [Counts] reports it.
type Op int

// Counted calls: the Backend's and the RunStore's I/O methods.
const (
	OpClaim Op = iota
	OpRecordClaim
	OpSaveResult
	OpRunClaim
	OpHeartbeat
	OpFinish
	OpFinishResult
	OpRelease
	OpClaimBatch    // one BatchClaimer call, of any size
	OpClaimRuns     // one RunBatchClaimer call
	OpHeartbeats    // one HeartbeatBatcher call
	OpSaveResults   // one ResultBatcher call
	OpFinishResults // one FinishBatcher call
	OpRecordClaims  // one ClaimRecordBatcher call
	OpServerTime
	OpOther
	numOps
)

var opNames = [numOps]string{"Claim", "RecordClaim", "SaveResult", "RunStore.Claim", "Heartbeat", "Finish", "FinishResult", "Release",
	"ClaimBatch", "ClaimRuns", "Heartbeats", "SaveResults", "FinishResults", "RecordClaims", "ServerTime", "other"}

// String returns the method name, e.g. "RunStore.Claim".
func (o Op) String() string {
	if o >= 0 && o < numOps {
		return opNames[o]
	}
	return "unknown"
}

// ErrCrashed is returned by every call through a [Wrapped] backend after
// [Wrapped.Crash]: the instance behaves as if its process had died (no
// heartbeats, no claims, no results).
var ErrCrashed = errors.New("bench: instance crashed")

// Wrapped is a Backend that counts calls by method and can simulate a
// crash. Build it with [Wrap]. It follows the wrapper convention of
// [anarchon.Wrapper]: it implements, and counts, every optional interface
// the wrapped backend has that the scheduler calls (ClaimRecorder,
// JobChecker, LeaseBackend, ServerClock, the RunStore's ResultFinisher)
// and, unless hidden, Watcher: hiding the Watcher makes the scheduler
// poll, as with a store that cannot push events. Unwrap exposes the rest.
//
// It also implements every batch ability (ClaimBatch, ClaimRuns,
// Heartbeats, SaveResults, FinishResults), so that a crash stops batched
// calls too and each batch is counted as one call: to the wrapped store's
// batch where it has one, else as the single calls one after the other
// (counted as singles).
type Wrapped struct {
	inner   anarchon.Backend
	runs    anarchon.RunStore // the wrapped run store, nil without leases
	counts  [numOps]atomic.Int64
	crashed atomic.Bool
	// lastBeat is the send time (Unix ns) of the last heartbeat that
	// succeeded, for failover measurements.
	lastBeat atomic.Int64
	// standing counts lease claims answered OutcomeRunning: the instance
	// stands by as a backup.
	standing atomic.Int64
	watch    bool // the scheduler sees a Watcher
	hide     bool // the inner Watcher is hidden: Unwrap returns nil
	// claims, if set, is told of every batch of first claims (ClaimBatch,
	// ClaimRuns): LogClaims.
	claims *ClaimLog
}

// ClaimCall is one batch of claims through a [Wrapped] backend: its first
// slot, when it was sent and answered, its size and how many it won.
type ClaimCall struct {
	Op         Op
	Slot       int64 // the first claim's slot, Unix ms
	Sent, Done time.Time
	N, Won     int
}

// ClaimLog keeps the [ClaimCall]s of a [Wrapped] backend that LogClaims
// was given. It is safe for concurrent use.
type ClaimLog struct {
	mu    sync.Mutex
	calls []ClaimCall
}

func (l *ClaimLog) add(c ClaimCall) {
	l.mu.Lock()
	l.calls = append(l.calls, c)
	l.mu.Unlock()
}

// Calls returns the batches of slot, in the order they were sent.
func (l *ClaimLog) Calls(slot int64) []ClaimCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ClaimCall
	for _, c := range l.calls {
		if c.Slot == slot {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b ClaimCall) int { return a.Sent.Compare(b.Sent) })
	return out
}

// LogClaims makes w tell l of every batch of claims from now on. Call it
// before the scheduler starts.
func (w *Wrapped) LogClaims(l *ClaimLog) { w.claims = l }

// logClaims tells w's ClaimLog, if any, of a batch sent at sent.
func (w *Wrapped) logClaims(op Op, slot int64, sent time.Time, n, won int) {
	if w.claims != nil {
		w.claims.add(ClaimCall{Op: op, Slot: slot, Sent: sent, Done: time.Now(), N: n, Won: won})
	}
}

// HasWatcher reports whether the Backend returned by Wrap is a Watcher.
func (w *Wrapped) HasWatcher() bool { return w.watch }

// StandingBy reports how many lease claims were answered "running" (the
// instance stood by as a backup).
func (w *Wrapped) StandingBy() int64 { return w.standing.Load() }

// watching is a Wrapped backend that also forwards the inner Watcher.
type watching struct {
	*Wrapped
	w anarchon.Watcher
}

// WatchRuns forwards to the inner store's watch. After a crash it fails.
func (w watching) WatchRuns(ctx context.Context) (<-chan anarchon.RunEvent, error) {
	if w.crashed.Load() {
		return nil, ErrCrashed
	}
	return w.w.WatchRuns(ctx)
}

// Wrap returns b wrapped for counting, and the Backend to give the
// scheduler: with hideWatcher false and a Watcher on b (or on its RunStore)
// the returned Backend is also a Watcher.
func Wrap(b anarchon.Backend, hideWatcher bool) (*Wrapped, anarchon.Backend) {
	w := &Wrapped{inner: b, hide: hideWatcher}
	if lb, ok := anarchon.As[anarchon.LeaseBackend](b); ok && lb.Runs() != nil {
		rs := lb.Runs()
		cr := &countingRuns{w: w, inner: rs}
		w.runs = cr
		if f, ok := anarchon.As[anarchon.ResultFinisher](b); ok {
			w.runs = finishingRuns{cr, f}
		}
	}
	watcher, ok := anarchon.As[anarchon.Watcher](b)
	if hideWatcher || !ok {
		return w, w
	}
	w.watch = true
	return w, watching{Wrapped: w, w: watcher}
}

// Unwrap returns the wrapped backend, so that anarchon.As finds the
// abilities Wrapped does not forward itself; nil when the inner Watcher is
// hidden, since it would be found there.
func (w *Wrapped) Unwrap() anarchon.Backend {
	if w.hide {
		return nil
	}
	return w.inner
}

// Count returns how many calls of op went through the wrapper.
func (w *Wrapped) Count(op Op) int64 { return w.counts[op].Load() }

// Counts returns the call counts of every op, indexed by Op.
func (w *Wrapped) Counts() [numOps]int64 {
	var out [numOps]int64
	for i := range out {
		out[i] = w.counts[i].Load()
	}
	return out
}

// Crash makes every later call fail with ErrCrashed.
func (w *Wrapped) Crash() { w.crashed.Store(true) }

// LastHeartbeat returns the send time of the last successful heartbeat
// (zero if none).
func (w *Wrapped) LastHeartbeat() time.Time {
	ns := w.lastBeat.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func (w *Wrapped) count(op Op) error {
	w.counts[op].Add(1)
	if w.crashed.Load() {
		return ErrCrashed
	}
	return nil
}

// Name returns the inner backend's name.
func (w *Wrapped) Name() string { return w.inner.Name() }

// DedupeWindow returns the inner backend's window.
func (w *Wrapped) DedupeWindow() time.Duration { return w.inner.DedupeWindow() }

// Init forwards to the inner backend.
func (w *Wrapped) Init(ctx context.Context) error {
	if err := w.count(OpOther); err != nil {
		return err
	}
	return w.inner.Init(ctx)
}

// PrepareJob forwards to the inner backend.
func (w *Wrapped) PrepareJob(ctx context.Context, in anarchon.PrepareJobInput) error {
	if err := w.count(OpOther); err != nil {
		return err
	}
	return w.inner.PrepareJob(ctx, in)
}

// Claim forwards to the inner backend and counts OpClaim.
func (w *Wrapped) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	if err := w.count(OpClaim); err != nil {
		return false, err
	}
	return w.inner.Claim(ctx, in)
}

// RecordClaim forwards to the inner ClaimRecorder and counts OpRecordClaim;
// without one it does nothing and counts nothing (the scheduler would not
// have called it).
func (w *Wrapped) RecordClaim(ctx context.Context, in anarchon.ClaimInput) error {
	rec, ok := anarchon.As[anarchon.ClaimRecorder](w.inner)
	if !ok {
		return nil
	}
	if err := w.count(OpRecordClaim); err != nil {
		return err
	}
	return rec.RecordClaim(ctx, in)
}

// RecordClaims forwards to the inner ClaimRecorder's batches and counts
// OpRecordClaims; without them it records each claim with RecordClaim.
func (w *Wrapped) RecordClaims(ctx context.Context, in []anarchon.ClaimInput) ([]error, error) {
	rec, _ := anarchon.As[anarchon.ClaimRecorder](w.inner)
	rb, ok := rec.(anarchon.ClaimRecordBatcher)
	if !ok {
		errs := make([]error, len(in))
		for i := range in {
			errs[i] = w.RecordClaim(ctx, in[i])
		}
		return errs, nil
	}
	if err := w.count(OpRecordClaims); err != nil {
		return nil, err
	}
	return rb.RecordClaims(ctx, in)
}

// CheckJob forwards to the inner JobChecker, if any.
func (w *Wrapped) CheckJob(l anarchon.JobLimits) error {
	if c, ok := anarchon.As[anarchon.JobChecker](w.inner); ok {
		return c.CheckJob(l)
	}
	return nil
}

// RecordManualRun forwards to the inner backend.
func (w *Wrapped) RecordManualRun(ctx context.Context, in anarchon.ClaimInput) (int64, error) {
	if err := w.count(OpOther); err != nil {
		return 0, err
	}
	return w.inner.RecordManualRun(ctx, in)
}

// SaveResult forwards to the inner backend and counts OpSaveResult.
func (w *Wrapped) SaveResult(ctx context.Context, in anarchon.SaveResultInput) error {
	if err := w.count(OpSaveResult); err != nil {
		return err
	}
	return w.inner.SaveResult(ctx, in)
}

// History forwards to the inner backend (never fails after a crash, so a
// harness can read the truth).
func (w *Wrapped) History(ctx context.Context, job string, limit int) ([]anarchon.RunRecord, error) {
	return w.inner.History(ctx, job, limit)
}

// Close forwards to the inner backend.
func (w *Wrapped) Close(ctx context.Context) error { return w.inner.Close(ctx) }

// ServerTime forwards to the inner ServerClock (on the RunStore first, as
// the scheduler looks for it); without one it returns the local time.
func (w *Wrapped) ServerTime(ctx context.Context) (time.Time, error) {
	if err := w.count(OpServerTime); err != nil {
		return time.Time{}, err
	}
	if c, ok := anarchon.As[anarchon.ServerClock](w.inner); ok {
		return c.ServerTime(ctx)
	}
	return time.Now(), nil
}

// Runs returns the counting RunStore, or nil when the inner backend has
// none (the scheduler then uses plain claims).
func (w *Wrapped) Runs() anarchon.RunStore { return w.runs }

// countingRuns counts RunStore calls. It is never a Watcher: the
// Wrapped backend decides whether the scheduler sees one. It is a
// ResultFinisher only as finishingRuns, when the inner store is one.
type countingRuns struct {
	w     *Wrapped
	inner anarchon.RunStore
}

func (r *countingRuns) Claim(ctx context.Context, c anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	if err := r.w.count(OpRunClaim); err != nil {
		return anarchon.ClaimOutcome{}, err
	}
	out, err := r.inner.Claim(ctx, c)
	if err == nil && out.Kind == anarchon.OutcomeRunning {
		r.w.standing.Add(1)
	}
	return out, err
}

func (r *countingRuns) Heartbeat(ctx context.Context, in anarchon.HeartbeatInput) (bool, error) {
	if err := r.w.count(OpHeartbeat); err != nil {
		return false, err
	}
	sent := time.Now()
	ok, err := r.inner.Heartbeat(ctx, in)
	if ok && err == nil {
		r.w.lastBeat.Store(sent.UnixNano())
	}
	return ok, err
}

func (r *countingRuns) Finish(ctx context.Context, in anarchon.FinishInput) (bool, error) {
	if err := r.w.count(OpFinish); err != nil {
		return false, err
	}
	return r.inner.Finish(ctx, in)
}

func (r *countingRuns) Release(ctx context.Context, in anarchon.ReleaseInput) (bool, error) {
	if err := r.w.count(OpRelease); err != nil {
		return false, err
	}
	return r.inner.Release(ctx, in)
}

func (r *countingRuns) Active(ctx context.Context, job string) ([]anarchon.ActiveRun, error) {
	if err := r.w.count(OpOther); err != nil {
		return nil, err
	}
	return r.inner.Active(ctx, job)
}

// finishingRuns is a countingRuns whose inner store folds Finish and
// SaveResult into one call: it counts OpFinishResult.
type finishingRuns struct {
	*countingRuns
	f anarchon.ResultFinisher
}

func (r finishingRuns) FinishResult(ctx context.Context, in anarchon.SaveResultInput) (bool, error) {
	if err := r.w.count(OpFinishResult); err != nil {
		return false, err
	}
	return r.f.FinishResult(ctx, in)
}

// ClaimBatch forwards to the inner BatchClaimer and counts OpClaimBatch;
// without one it claims each slot with Claim.
func (w *Wrapped) ClaimBatch(ctx context.Context, in []anarchon.ClaimInput) ([]anarchon.ClaimAnswer, error) {
	bc, ok := anarchon.As[anarchon.BatchClaimer](w.inner)
	if !ok {
		out := make([]anarchon.ClaimAnswer, len(in))
		for i := range in {
			out[i].Won, out[i].Err = w.Claim(ctx, in[i])
		}
		return out, nil
	}
	if err := w.count(OpClaimBatch); err != nil {
		return nil, err
	}
	sent := time.Now()
	out, err := bc.ClaimBatch(ctx, in)
	if w.claims != nil && len(in) > 0 {
		won := 0
		for _, a := range out {
			if a.Won && a.Err == nil {
				won++
			}
		}
		w.logClaims(OpClaimBatch, in[0].Slot, sent, len(in), won)
	}
	return out, err
}

// SaveResults forwards to the inner ResultBatcher and counts
// OpSaveResults; without one it saves each result with SaveResult.
func (w *Wrapped) SaveResults(ctx context.Context, in []anarchon.SaveResultInput) ([]error, error) {
	rb, ok := anarchon.As[anarchon.ResultBatcher](w.inner)
	if !ok {
		errs := make([]error, len(in))
		for i := range in {
			errs[i] = w.SaveResult(ctx, in[i])
		}
		return errs, nil
	}
	if err := w.count(OpSaveResults); err != nil {
		return nil, err
	}
	return rb.SaveResults(ctx, in)
}

// ClaimRuns forwards to the inner RunBatchClaimer and counts
// OpClaimRuns; without one it claims each slot with Claim.
func (r *countingRuns) ClaimRuns(ctx context.Context, in []anarchon.RunClaim) ([]anarchon.RunClaimAnswer, error) {
	bc, ok := r.inner.(anarchon.RunBatchClaimer)
	if !ok {
		out := make([]anarchon.RunClaimAnswer, len(in))
		for i := range in {
			out[i].Outcome, out[i].Err = r.Claim(ctx, in[i])
		}
		return out, nil
	}
	if err := r.w.count(OpClaimRuns); err != nil {
		return nil, err
	}
	sent := time.Now()
	out, err := bc.ClaimRuns(ctx, in)
	won := 0
	for _, a := range out {
		if a.Err == nil && a.Outcome.Kind == anarchon.OutcomeRunning {
			r.w.standing.Add(1)
		}
		if a.Err == nil && a.Outcome.Kind == anarchon.OutcomeWon {
			won++
		}
	}
	if len(in) > 0 {
		r.w.logClaims(OpClaimRuns, in[0].Slot, sent, len(in), won)
	}
	return out, err
}

// Heartbeats forwards to the inner HeartbeatBatcher and counts
// OpHeartbeats; without one it renews each lease with Heartbeat.
func (r *countingRuns) Heartbeats(ctx context.Context, in []anarchon.HeartbeatInput) ([]anarchon.HeldAnswer, error) {
	hb, ok := r.inner.(anarchon.HeartbeatBatcher)
	if !ok {
		out := make([]anarchon.HeldAnswer, len(in))
		for i := range in {
			out[i].Held, out[i].Err = r.Heartbeat(ctx, in[i])
		}
		return out, nil
	}
	if err := r.w.count(OpHeartbeats); err != nil {
		return nil, err
	}
	sent := time.Now()
	out, err := hb.Heartbeats(ctx, in)
	for _, a := range out {
		if a.Held && a.Err == nil {
			r.w.lastBeat.Store(sent.UnixNano())
			break
		}
	}
	return out, err
}

// FinishResults forwards to the inner FinishBatcher and counts
// OpFinishResults. The scheduler calls it only on a ResultFinisher
// (finishingRuns); without the batch it finishes each run with
// FinishResult.
func (r finishingRuns) FinishResults(ctx context.Context, in []anarchon.SaveResultInput) ([]anarchon.HeldAnswer, error) {
	fb, ok := r.inner.(anarchon.FinishBatcher)
	if !ok {
		out := make([]anarchon.HeldAnswer, len(in))
		for i := range in {
			out[i].Held, out[i].Err = r.FinishResult(ctx, in[i])
		}
		return out, nil
	}
	if err := r.w.count(OpFinishResults); err != nil {
		return nil, err
	}
	return fb.FinishResults(ctx, in)
}
