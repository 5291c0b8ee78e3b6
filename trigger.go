package anarchon

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon/internal/runner"
)

// TriggerStore is an optional Backend interface (SPEC §12): cluster-wide
// manual runs. A client asks for a run of a job under a key
// (RequestTrigger); every started scheduler that has the job looks for
// pending requests (at once when the store's Watcher delivers a
// RunTriggered event, otherwise every Options.PollInterval) and races to
// claim each one (ClaimTrigger); exactly one wins, runs the job and
// reports the end (FinishTrigger), which the client reads back
// (LookupTrigger). A request is made once per (job, key) however many
// clients send it.
//
// Without it, Scheduler.Trigger returns ErrNotSupported; RunNow (local,
// not deduplicated) still works.
type TriggerStore interface {
	// RequestTrigger stores a pending request for (in.Job, in.Key) unless
	// one exists, and returns the stored record: the new one (RequestedAt
	// by the store's clock), or the existing one unchanged whatever its
	// state. It wakes the store's watchers with a RunTriggered event when
	// it has a Watcher. It fails on an empty job or key.
	RequestTrigger(ctx context.Context, in TriggerInput) (TriggerRecord, error)
	// PendingTriggers lists the requests no instance has claimed yet,
	// oldest first, of every job.
	PendingTriggers(ctx context.Context) ([]TriggerRecord, error)
	// ClaimTrigger atomically moves the pending request (in.Job, in.Key)
	// to running for in.Token and in.InstanceID. It returns true for
	// exactly one token per request, and again for a repeat of that
	// token; false for any other token and for an unknown request.
	ClaimTrigger(ctx context.Context, in ClaimTriggerInput) (bool, error)
	// FinishTrigger marks the request done with how the run ended, if
	// in.Token holds it; otherwise it does nothing.
	FinishTrigger(ctx context.Context, in FinishTriggerInput) error
	// LookupTrigger returns the record of (job, key), or an error wrapping
	// ErrNotFound.
	LookupTrigger(ctx context.Context, job, key string) (TriggerRecord, error)
}

// RunTriggered is the RunEvent kind a store with a Watcher sends when a
// trigger is requested (Job set, Slot 0): schedulers look for pending
// requests at once.
const RunTriggered RunEventKind = RunFinished + 1

// TriggerInput is what [TriggerStore.RequestTrigger] is given. New fields
// may be added.
type TriggerInput struct {
	Job string // job name
	Key string // the request's identity with Job: one run per (Job, Key)
	By  string // who asked; may be empty
}

// ClaimTriggerInput is what [TriggerStore.ClaimTrigger] is given. New
// fields may be added.
type ClaimTriggerInput struct {
	Job, Key   string
	Token      string // the run's token, unique to this claim attempt
	InstanceID string // the claiming instance
}

// FinishTriggerInput is what [TriggerStore.FinishTrigger] is given. New
// fields may be added.
type FinishTriggerInput struct {
	Job, Key string
	Token    string // the claim's token
	Slot     int64  // the run's slot in history (Unix ms), as RecordManualRun returned it
	Status   Status // how the run ended
	Error    string // the run's error text, "" on success
}

// TriggerCanceler is an optional [TriggerStore] ability: withdrawing a
// request that no instance has taken yet (SPEC §12, "Cancel").
type TriggerCanceler interface {
	// CancelTrigger ends the pending request (in.Job, in.Key) as done,
	// Status StatusCanceled, Error naming in.By, with no instance, token
	// or slot, atomically against ClaimTrigger: of a cancel and a claim
	// of one pending request exactly one takes effect. It returns the
	// record after the call: canceled (by this call or an earlier one),
	// or unchanged when an instance took it first (running or done). An
	// unknown request is an error wrapping ErrNotFound.
	CancelTrigger(ctx context.Context, in CancelTriggerInput) (TriggerRecord, error)
}

// CancelTriggerInput is what [TriggerCanceler.CancelTrigger] is given.
// New fields may be added.
type CancelTriggerInput struct {
	Job, Key string
	By       string // who cancels; may be empty
}

// StatusCanceled is the Status of a trigger request canceled before any
// instance took it ([TriggerCanceler]): no run, no history record.
const StatusCanceled Status = "canceled"

// CanceledError is the Error a store records for a request in.By
// canceled; stores write this text so that every store reads the same.
func CanceledError(by string) string {
	if by == "" {
		return "canceled before any instance took it"
	}
	return "canceled by " + by + " before any instance took it"
}

// TriggerState is the state of a trigger request.
type TriggerState string

// Trigger request states.
const (
	TriggerPending TriggerState = "pending" // requested, not claimed yet
	TriggerRunning TriggerState = "running" // claimed by InstanceID
	TriggerDone    TriggerState = "done"    // the run ended with Status, or the request was canceled (StatusCanceled)
)

// TriggerRecord is a trigger request as the store keeps it.
type TriggerRecord struct {
	Job         string       `json:"job"`
	Key         string       `json:"key"`
	By          string       `json:"by,omitempty"`
	RequestedAt time.Time    `json:"requested_at"` // store clock
	State       TriggerState `json:"state"`
	InstanceID  string       `json:"instance_id,omitempty"` // the instance that ran it (running, done)
	Token       string       `json:"token,omitempty"`       // the run's token; its history record has it
	Slot        int64        `json:"slot,omitempty"`        // the run's slot in history, Unix ms (done)
	ClaimedAt   time.Time    `json:"claimed_at,omitzero"`
	FinishedAt  time.Time    `json:"finished_at,omitzero"`
	Status      Status       `json:"status,omitempty"` // done: how the run ended
	Error       string       `json:"error,omitempty"`
}

// CancelTrigger withdraws the trigger request (name, key) if no instance
// has taken it yet, recording by as who canceled it (empty: this
// scheduler's InstanceID), and returns its record: done with
// StatusCanceled, or,
// when an instance took it first, as it stands (running or done; the run
// goes on). A running request whose instance is gone by the registry is
// returned with an error wrapping ErrTriggerRunnerGone that says which,
// as a wait for it would end (SPEC §12). ErrNotFound (wrapped) for an
// unknown request; ErrNotSupported when the backend's TriggerStore has no
// TriggerCanceler. The job need not be registered here: a request for a
// job that no longer exists is what one cancels.
func (s *Scheduler) CancelTrigger(ctx context.Context, name, key, by string) (TriggerRecord, error) {
	if _, err := s.triggerStore(); err != nil {
		return TriggerRecord{}, err
	}
	tc, ok := As[TriggerCanceler](s.backend)
	if !ok {
		return TriggerRecord{}, fmt.Errorf("%w: canceling a trigger needs a store with TriggerCanceler; %q has none", ErrNotSupported, s.backend.Name())
	}
	if err := s.ensureInit(ctx); err != nil {
		return TriggerRecord{}, err
	}
	rec, err := tc.CancelTrigger(ctx, CancelTriggerInput{Job: name, Key: key, By: cmp.Or(by, s.opts.InstanceID)})
	if err != nil {
		return rec, err
	}
	if gone := s.runnerGone(ctx, rec); gone != "" {
		return rec, fmt.Errorf("%w: job %q: trigger %q not canceled: %s", ErrTriggerRunnerGone, name, key, gone)
	}
	return rec, nil
}

// triggerStore returns the backend's TriggerStore or ErrNotSupported.
func (s *Scheduler) triggerStore() (TriggerStore, error) {
	if s.tstore == nil {
		return nil, fmt.Errorf("%w: triggers need a store with TriggerStore; %q has none", ErrNotSupported, s.backend.Name())
	}
	return s.tstore, nil
}

// RequestTrigger asks, without waiting, for one run of the named job by a
// live instance (SPEC §12) under key (empty: a random key) and returns
// the request's record; requests with the same job and key are one
// request, whoever sends them. The job must be registered here
// (ErrNotFound); the scheduler need not be started, so a command-line
// tool can use it. ErrNotSupported without a TriggerStore.
func (s *Scheduler) RequestTrigger(ctx context.Context, name, key string) (TriggerRecord, error) {
	return s.requestTrigger(ctx, name, key, s.opts.InstanceID)
}

// requestTrigger is RequestTrigger with the request's By.
func (s *Scheduler) requestTrigger(ctx context.Context, name, key, by string) (TriggerRecord, error) {
	ts, err := s.triggerStore()
	if err != nil {
		return TriggerRecord{}, err
	}
	if _, err := s.readyJob(ctx, name); err != nil {
		return TriggerRecord{}, err
	}
	if key == "" {
		key = rand.Text()
	}
	return ts.RequestTrigger(ctx, TriggerInput{Job: name, Key: key, By: by})
}

// Trigger runs the named job once across the cluster: it requests the run
// under key (see RequestTrigger) and waits until an instance has run it,
// returning the request's record (who ran it, its slot, status and
// error; the run's record is in History under its Token). However many
// instances or clients call it with the same key, the job runs once. A
// live instance that has the job runs it, not necessarily this one; one
// with a Watcher at once, others within their PollInterval. It runs even
// while the job is paused, and beside a running slot of it: a manual run
// holds no lease on a slot, so the job's Overlap policy does not hold it
// off, and no backup takes it over (SPEC §12). When ctx ends first the error names the job,
// the key and how long it waited, and wraps ctx's error; the request
// stays pending and an instance may still run it. When the backend has an
// InstanceRegistry and the instance running the request is gone by it
// (its record dead or stopped, or started again after it took the
// request), the wait ends with an error wrapping ErrTriggerRunnerGone and
// the record as it stands (SPEC §12); the request and the run's history
// record then stay running, since that instance may only be cut off from
// the store and still finish them: a new key requests a new run. The handler's error is in the
// record, not in the returned error. RunNow is the local variant. A
// scheduler that is not started, or stopped, requests and waits all the
// same (another instance runs the request): give ctx a deadline, as a
// request no live instance takes stays pending.
func (s *Scheduler) Trigger(ctx context.Context, name, key string) (TriggerRecord, error) {
	rec, err := s.RequestTrigger(ctx, name, key)
	if err != nil {
		return TriggerRecord{}, err
	}
	if rec.State == TriggerDone {
		return rec, nil // an earlier request with this key has run
	}
	// The request's record is fresh: the first look at the store comes
	// after PollInterval.
	return s.waitTrigger(ctx, s.tstore, rec, s.opts.PollInterval)
}

// WaitTrigger waits until the trigger request (name, key) is done, asking
// the store at once, then after PollInterval, then at intervals that
// double up to a second (or PollInterval if longer), and returns its
// record. Errors as for Trigger; ErrNotFound (wrapped) for an unknown
// request.
func (s *Scheduler) WaitTrigger(ctx context.Context, name, key string) (TriggerRecord, error) {
	ts, err := s.triggerStore()
	if err != nil {
		return TriggerRecord{}, err
	}
	return s.waitTrigger(ctx, ts, TriggerRecord{Job: name, Key: key}, 0)
}

// waitTrigger polls the request rec names until it is done, the first
// time after first. rec is what is known of it so far.
func (s *Scheduler) waitTrigger(ctx context.Context, ts TriggerStore, rec TriggerRecord, first time.Duration) (TriggerRecord, error) {
	name, key := rec.Job, rec.Key
	start := time.Now()
	// Many callers may wait for one request: the polls back off from
	// PollInterval to a second (or PollInterval if longer), which keeps
	// their load on the store bounded.
	wait, maxWait := s.opts.PollInterval, max(s.opts.PollInterval, time.Second)
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if rec.State == "" {
				// ended before any look at the store answered: one more,
				// briefly, so that the error says where the request stands
				lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lastLook)
				if got, err := ts.LookupTrigger(lctx, name, key); err == nil {
					rec = got
				}
				cancel()
			}
			state := waitState(rec)
			if rec.State == TriggerPending {
				state += s.pendingNote(context.WithoutCancel(ctx), name)
			}
			return rec, &waitEnded{
				msg:   fmt.Sprintf("anarchon: job %q: trigger %q not done after waiting %v (%s)", name, key, time.Since(start).Round(time.Millisecond), state),
				cause: context.Cause(ctx),
			}
		case <-t.C:
		}
		got, err := ts.LookupTrigger(ctx, name, key)
		switch {
		case err == nil && got.State == TriggerDone:
			return got, nil
		case err == nil:
			rec = got
			if gone := s.runnerGone(ctx, rec); gone != "" {
				return rec, fmt.Errorf("%w: job %q: trigger %q %s", ErrTriggerRunnerGone, name, key, gone)
			}
		case ctx.Err() == nil:
			return TriggerRecord{}, err
		}
		t.Reset(wait)
		wait = min(2*wait, maxWait)
	}
}

// msLayout is how a trigger's errors write times: UTC, milliseconds, as
// the daemon's history and status do.
const msLayout = "2006-01-02T15:04:05.000Z"

// restartMargin is how much later than a request's claim an instance's
// registry record may say it started and still be the process that
// claimed it: both times are the store's, the start by the instance's
// estimate of it (SPEC §10), and a scheduler may take a request pending
// at its start right after it.
const restartMargin = time.Second

// runnerGone says why the instance running the request rec can no longer
// finish it, by the instance registry (SPEC §10, §12), or "" when it may
// (or the backend has no registry, or the registry cannot be read, or it
// has no record of the instance). An instance whose record is dead or
// stopped died or lost the store; one whose record started after the
// claim is a later process with the same ID, which knows nothing of the
// run.
func (s *Scheduler) runnerGone(ctx context.Context, rec TriggerRecord) string {
	if rec.State != TriggerRunning {
		return ""
	}
	reg, ok := As[InstanceRegistry](s.backend)
	if !ok {
		return ""
	}
	list, err := reg.Instances(ctx)
	if err != nil {
		return ""
	}
	since := rec.ClaimedAt.UTC().Format(msLayout)
	for _, r := range list {
		if r.ID != rec.InstanceID {
			continue
		}
		why, gone := r.Gone(rec.ClaimedAt)
		switch {
		case !gone:
		case r.Live(): // a later process under the ID
			return fmt.Sprintf("running on %s since %s; %s%s: the process that took the request is gone, and no instance will finish it",
				r.ID, since, r.ID, why)
		default:
			return fmt.Sprintf("running on %s since %s; %s%s: it died or lost the store, and the request is finished only if that process is alive and reaches the store again",
				r.ID, since, r.ID, why)
		}
	}
	return ""
}

// pendingNote says, for a trigger request still pending when its wait
// ended, what the instance registry tells of the instances that could take
// it: that none is live, that none of the live ones has the job in its job
// set, or that they run another job set than this scheduler's (whose job
// names they publish only while live sets differ, SPEC §10), which may
// lack it. "" when it cannot tell, or when a live instance has the job:
// without a registry, on a failed read.
func (s *Scheduler) pendingNote(ctx context.Context, name string) string {
	reg, ok := As[InstanceRegistry](s.backend)
	if !ok {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, lastLook)
	defer cancel()
	list, err := reg.Instances(ctx)
	if err != nil {
		return ""
	}
	mine := s.baseInstanceInfo()
	hasJob := func(jobs []JobFingerprint) bool {
		return slices.ContainsFunc(jobs, func(j JobFingerprint) bool { return j.Name == name })
	}
	var live []string
	unlisted := 0
	for _, r := range list {
		if !r.Live() {
			continue
		}
		live = append(live, r.ID)
		switch {
		case r.JobsFingerprint == mine.JobsFingerprint && hasJob(mine.Jobs), hasJob(r.Jobs):
			return "" // it has the job: slow, or cut off from the store
		case !r.JobsListed():
			unlisted++
		}
	}
	switch {
	case len(live) == 0:
		return "; the store's registry lists no live instance"
	case unlisted == 0:
		return fmt.Sprintf("; no live instance (%s) has job %q in its job set", idList(live), name)
	}
	return fmt.Sprintf("; the live instances (%s) run another job set than this scheduler, and list their jobs only while their own sets differ: job %q may not be among them", idList(live), name)
}

// idList writes instance IDs for a message: the first three, and how many
// more.
func idList(ids []string) string {
	if len(ids) <= 3 {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:3], ", "), len(ids)-3)
}

// triggerLoop runs, on a started scheduler whose backend has a
// TriggerStore, the pending trigger requests of this instance's jobs it
// wins: every PollInterval, and at once when the watch reports a request.
func (s *Scheduler) triggerLoop(ctx context.Context, ts TriggerStore) {
	t := time.NewTicker(s.opts.PollInterval)
	defer t.Stop()
	for {
		s.takeTriggers(ctx, ts)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.triggerWake:
		}
	}
}

// takeTriggers claims the pending requests of this instance's jobs and
// runs each one it wins.
func (s *Scheduler) takeTriggers(ctx context.Context, ts TriggerStore) {
	pending, err := ts.PendingTriggers(ctx)
	if err != nil {
		s.storeError(ctx, "PendingTriggers", "", time.Time{}, err)
		return
	}
	for _, p := range pending {
		s.mu.Lock()
		j := s.jobs[p.Job]
		s.mu.Unlock()
		if j == nil || ctx.Err() != nil {
			continue
		}
		token := s.newToken()
		won, err := ts.ClaimTrigger(ctx, ClaimTriggerInput{Job: p.Job, Key: p.Key, Token: token, InstanceID: s.opts.InstanceID})
		if err != nil {
			s.storeError(ctx, "ClaimTrigger", p.Job, time.Time{}, err)
			continue
		}
		if !won {
			continue
		}
		s.inflight.Add(1)
		go func() {
			defer s.inflight.Done()
			s.runTrigger(j, p, token, ts)
		}()
	}
}

// runTrigger runs a won trigger request: recorded as a manual run, with
// who asked in the run's Run.TriggeredBy, then reported to the store.
func (s *Scheduler) runTrigger(j *job, p TriggerRecord, token string, ts TriggerStore) {
	ctx, cancel := storeCallCtx(s.runCtx)
	defer cancel()
	run := &Run{Job: j.name, InstanceID: s.opts.InstanceID, Token: token, Attempt: 1,
		Manual: true, TriggerKey: p.Key, TriggeredBy: p.By}
	s.log.LogAttrs(ctx, slog.LevelInfo, "triggered run", slog.String("job", j.name), slog.String("key", p.Key), slog.String("by", p.By))
	lt := &liveTrigger{j: j, run: run, req: p, ts: ts, settled: make(chan struct{})}
	defer s.dropTrigger(lt) // known to Stop until its outcome is stored
	res, err := s.runManual(ctx, s.runCtx, j, run, lt)
	if errors.Is(err, errSettledByStop) {
		return // Stop stored the result and finished the request
	}
	defer close(lt.settled) // after the finish below: a Stop waits for it
	if res.Status == "" {
		res.Status, res.Error = StatusError, "the store did not record the run: "+err.Error()
	}
	s.finishTrigger(lt, res)
}

// finishTrigger reports lt's request done with res's status and error,
// within a call time of its own (the run before it may have taken longer
// than ctx's).
func (s *Scheduler) finishTrigger(lt *liveTrigger, res StoredResult) {
	ctx, cancel := storeCallCtx(s.runCtx)
	defer cancel()
	in := FinishTriggerInput{Job: lt.req.Job, Key: lt.req.Key, Token: lt.run.Token, Slot: lt.run.Slot.UnixMilli(), Status: res.Status, Error: res.Error}
	if err := lt.ts.FinishTrigger(ctx, in); err != nil {
		s.storeError(ctx, "FinishTrigger", in.Job, time.UnixMilli(in.Slot), err)
	}
}

// waitEnded is the error of a trigger's wait that its context ended: msg
// says how long it waited and where the request stands, and it wraps the
// context's cause (errors.Is(err, context.DeadlineExceeded) holds), whose
// text it adds unless it is the deadline, which "not done after waiting"
// says already.
type waitEnded struct {
	msg   string
	cause error
}

func (e *waitEnded) Error() string {
	if e.cause == context.DeadlineExceeded {
		return e.msg
	}
	return e.msg + ": " + e.cause.Error()
}

func (e *waitEnded) Unwrap() error { return e.cause }

// lastLook bounds the look at the store of a wait that ended before it
// knew the request's state.
const lastLook = 2 * time.Second

// waitState says where a request that a wait gave up on stands.
func waitState(rec TriggerRecord) string {
	switch rec.State {
	case TriggerPending:
		return "pending: no instance that has the job took it yet; started ones look for requests at every poll, or at once when the store has a Watcher"
	case TriggerRunning:
		return fmt.Sprintf("running on %s since %s: it is done when that run ends, never if %s died running it",
			rec.InstanceID, rec.ClaimedAt.UTC().Format(msLayout), rec.InstanceID)
	case "":
		return "state unknown"
	}
	return "state " + string(rec.State)
}

// liveTrigger is a triggered run from its record (RecordManualRun) to its
// outcome (its result and its request's finish), known to Stop all that
// time. Whichever of the run and Stop's deadline takes it first (taken)
// stores the outcome; the other stores nothing, and Stop waits for an
// outcome the run took. So a run that Stop cuts short is settled before
// Stop returns, as HandOver settles a plain run (SPEC §3, §12), instead of
// by its goroutine after the process may have exited with its record and
// its request left running.
type liveTrigger struct {
	j       *job
	run     *Run
	req     TriggerRecord
	ts      TriggerStore
	start   time.Time     // when the handler started (set before addTrigger)
	taken   atomic.Bool   // the outcome is the run's (runManual) or Stop's
	settled chan struct{} // closed once the outcome is stored (or given up)
	res     StoredResult  // what Stop stored; read after settled
}

// errSettledByStop is runManual's error for a triggered run whose outcome
// Stop stored.
var errSettledByStop = errors.New("anarchon: the run's outcome was stored by Stop")

func (s *Scheduler) addTrigger(lt *liveTrigger) {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	if s.triggers == nil {
		s.triggers = make(map[*liveTrigger]struct{})
	}
	s.triggers[lt] = struct{}{}
}

func (s *Scheduler) dropTrigger(lt *liveTrigger) {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	delete(s.triggers, lt)
}

// stopTriggers is Stop's, at its deadline: it takes every triggered run
// still going that has not taken its own outcome, and returns those, and
// those whose own outcome is being stored, which settleTriggers waits for.
func (s *Scheduler) stopTriggers() (taken, storing []*liveTrigger) {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	for lt := range s.triggers {
		if lt.taken.CompareAndSwap(false, true) {
			taken = append(taken, lt)
		} else {
			storing = append(storing, lt)
		}
	}
	return taken, storing
}

// settleTriggers stores the outcome of each run Stop took (an error: the
// handler had not returned; the request finished with it), each store
// call within controlTimeout, and waits for the runs storing their own.
func (s *Scheduler) settleTriggers(taken, storing []*liveTrigger) {
	var wg sync.WaitGroup
	for _, lt := range taken {
		wg.Go(func() {
			defer close(lt.settled)
			j, run := lt.j, lt.run
			lt.res = StoredResult{
				Slot: run.Slot.UnixMilli(), Token: run.Token, InstanceID: run.InstanceID, Attempt: run.Attempt,
				Status: StatusError, StartedAt: lt.start, FinishedAt: s.now().Round(0), Manual: true,
				Error: runner.InterruptedError,
			}
			ctx, cancel := storeCallCtx(s.runCtx)
			defer cancel()
			if err := s.backend.SaveResult(ctx, SaveResultInput{Job: j.name, Result: lt.res, HistorySize: j.opt.HistorySize, HistoryTTL: j.opt.HistoryTTL}); err != nil {
				s.storeError(ctx, "SaveResult", j.name, run.Slot, err)
			}
			s.finishTrigger(lt, lt.res)
		})
	}
	for _, lt := range storing {
		wg.Go(func() { <-lt.settled })
	}
	wg.Wait()
}
