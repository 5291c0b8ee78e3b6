package membackend

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/anarchon/anarchon"
)

// run is the lease state of one (job, slot), SPEC §6.
type run struct {
	token      string
	holder     string
	attempt    int
	leaseUntil time.Time
	state      anarchon.RunState
	status     anarchon.Status // for RunStateDone
	changed    time.Time       // store clock at the last change
}

func (r *run) settled() bool {
	switch r.state {
	case anarchon.RunStateDone, anarchon.RunStateMissed, anarchon.RunStateSkipped, anarchon.RunStatePaused:
		return true
	}
	return false
}

func (r *run) live(now time.Time) bool {
	return r.state == anarchon.RunStateRunning && r.leaseUntil.After(now)
}

// RunStore is the lease view of a [Backend] (SPEC §6), returned by
// [Backend.Runs]. It shares the backend's state, clock, fault hook and
// closed flag. Its methods fail after the backend's Close with an error
// wrapping anarchon.ErrClosed.
type RunStore struct {
	b *Backend
}

// Runs implements [anarchon.LeaseBackend]. The result is a *RunStore, which
// also implements [anarchon.Watcher] and [anarchon.ServerClock].
func (b *Backend) Runs() anarchon.RunStore { return &RunStore{b: b} }

// Claim decides a lease claim by the table of SPEC §6, first match wins,
// judged by Options.Now:
//
//   - running with c.Token: won, lease renewed to now+c.Lease;
//   - done: done, with the stored status;
//   - missed or skipped: none;
//   - running with another token and a live lease: running, with the
//     holder, its attempt and its lease expiry;
//   - running with an expired lease, or released, attempt < c.MaxAttempts:
//     won with attempt+1, c.Token, c.InstanceID and a new lease;
//   - the same with the attempts used up: done, status abandoned;
//   - absent and c.MaxLate > 0 and now > slot+c.MaxLate: late (state missed);
//   - absent, !c.AllowOverlap, and max(c.Limit, 1) other slots of the job
//     running with live leases: overlap (state skipped);
//   - absent: won, attempt 1.
//
// See the package doc for the history records each row writes. Claim fails
// on an empty job or token, a Lease <= 0 or a negative MaxLate, and after
// Close.
func (s *RunStore) Claim(ctx context.Context, c anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	b := s.b
	if err := b.op(ctx, "RunClaim"); err != nil {
		return anarchon.ClaimOutcome{}, err
	}
	defer b.mu.Unlock()
	return s.claim(c)
}

// claim is Claim under b.mu, which the caller holds: ClaimRuns answers
// each of its slots with it, so both answer alike.
func (s *RunStore) claim(c anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	b := s.b
	if err := checkInput("RunClaim", c.ClaimInput); err != nil {
		return anarchon.ClaimOutcome{}, err
	}
	if c.Lease <= 0 {
		return anarchon.ClaimOutcome{}, permanentf("membackend: RunClaim: job %q: lease must be positive, got %v", c.Job, c.Lease)
	}
	if c.MaxLate < 0 {
		return anarchon.ClaimOutcome{}, permanentf("membackend: RunClaim: job %q: negative MaxLate %v", c.Job, c.MaxLate)
	}
	maxAttempts := max(c.MaxAttempts, 1)
	now := b.now()
	j := b.job(c.Job)
	b.sweep(j, now)
	j.setLimits(c.HistorySize, c.HistoryTTL)
	defer j.hist.trim(j.historySize, j.historyTTL, now)

	r := j.runs[c.Slot]
	if r == nil {
		if anarchon.TooEarly(c.Slot, now.UnixMilli()) {
			return anarchon.ClaimOutcome{}, &anarchon.EarlyError{Job: c.Job, Slot: c.Slot, StoreNow: now.UnixMilli()}
		}
		return b.claimAbsent(j, c, now), nil
	}
	switch {
	case r.state == anarchon.RunStateRunning && r.token == c.Token:
		r.leaseUntil = now.Add(c.Lease)
		r.changed = now
		return j.won(r), nil
	case r.state == anarchon.RunStateDone:
		return anarchon.ClaimOutcome{Kind: anarchon.OutcomeDone, Attempt: r.attempt, Status: r.status}, nil
	case r.state == anarchon.RunStateMissed || r.state == anarchon.RunStateSkipped || r.state == anarchon.RunStatePaused:
		return anarchon.ClaimOutcome{Kind: anarchon.OutcomeNone}, nil
	case r.live(now):
		return anarchon.ClaimOutcome{Kind: anarchon.OutcomeRunning, Attempt: r.attempt, Holder: r.holder, LeaseUntil: r.leaseUntil}, nil
	}
	// Expired or released: a takeover, or the end of the slot.
	prev := anarchon.StatusLeaseLost
	if r.state == anarchon.RunStateReleased {
		prev = anarchon.StatusHandedOver
	}
	if r.attempt >= maxAttempts {
		j.hist.addResultIfNone(anarchon.StoredResult{
			Slot: c.Slot, Token: r.token, InstanceID: r.holder, Attempt: r.attempt, Status: prev,
		}, now)
		j.hist.addResultIfNone(anarchon.StoredResult{
			Slot: c.Slot, Token: anarchon.AbandonedToken(c.Slot), InstanceID: c.InstanceID, Attempt: r.attempt, Status: anarchon.StatusAbandoned,
		}, now)
		r.state, r.status, r.token, r.changed = anarchon.RunStateDone, anarchon.StatusAbandoned, "", now
		delete(j.active, c.Slot)
		b.emit(anarchon.RunEvent{Job: c.Job, Slot: c.Slot, Kind: anarchon.RunFinished})
		return anarchon.ClaimOutcome{Kind: anarchon.OutcomeDone, Attempt: r.attempt, Status: anarchon.StatusAbandoned}, nil
	}
	j.hist.addResultIfNone(anarchon.StoredResult{
		Slot: c.Slot, Token: r.token, InstanceID: r.holder, Attempt: r.attempt, Status: prev,
	}, now)
	r.token, r.holder, r.attempt = c.Token, c.InstanceID, r.attempt+1
	r.leaseUntil, r.state, r.changed = now.Add(c.Lease), anarchon.RunStateRunning, now
	j.hist.addClaim(anarchon.ClaimRecord{
		Slot: c.Slot, Token: c.Token, InstanceID: c.InstanceID, ClaimedAt: now, Attempt: r.attempt,
	}, now)
	return j.won(r), nil
}

// won is the answer to a won claim of r: it takes the job's next fence.
// Caller holds b.mu.
func (j *jobState) won(r *run) anarchon.ClaimOutcome {
	j.fence++
	return anarchon.ClaimOutcome{Kind: anarchon.OutcomeWon, Attempt: r.attempt, Holder: r.holder, LeaseUntil: r.leaseUntil, Fence: j.fence}
}

// claimAbsent handles the last three rows of the table. Caller holds b.mu.
func (b *Backend) claimAbsent(j *jobState, c anarchon.RunClaim, now time.Time) anarchon.ClaimOutcome {
	settle := func(state anarchon.RunState, status anarchon.Status) {
		j.runs[c.Slot] = &run{token: c.Token, holder: c.InstanceID, attempt: 1, state: state, changed: now}
		j.addSettled(c.ClaimInput, anarchon.StoredResult{
			Slot: c.Slot, Token: c.Token, InstanceID: c.InstanceID, Attempt: 1, Status: status,
		}, now)
	}
	if st, paused := b.paused(c.Job); paused {
		j.runs[c.Slot] = &run{token: anarchon.PausedToken(c.Slot), holder: c.InstanceID, attempt: 1, state: anarchon.RunStatePaused, changed: now}
		j.addSettled(c.ClaimInput, pausedResult(c.ClaimInput, st), now)
		return anarchon.ClaimOutcome{Kind: anarchon.OutcomePaused}
	}
	if c.MaxLate > 0 && now.After(time.UnixMilli(c.Slot).Add(c.MaxLate)) {
		settle(anarchon.RunStateMissed, anarchon.StatusMissed)
		return anarchon.ClaimOutcome{Kind: anarchon.OutcomeLate}
	}
	if !c.AllowOverlap {
		limit, live := max(c.Limit, 1), 0
		for slot := range j.active {
			if o := j.runs[slot]; slot != c.Slot && o.live(now) {
				if live++; live >= limit {
					settle(anarchon.RunStateSkipped, anarchon.StatusSkipped)
					return anarchon.ClaimOutcome{Kind: anarchon.OutcomeOverlap, Attempt: o.attempt, Holder: o.holder, LeaseUntil: o.leaseUntil}
				}
			}
		}
	}
	r := &run{
		token: c.Token, holder: c.InstanceID, attempt: 1,
		leaseUntil: now.Add(c.Lease), state: anarchon.RunStateRunning, changed: now,
	}
	j.runs[c.Slot] = r
	j.active[c.Slot] = struct{}{}
	j.hist.addClaim(anarchon.ClaimRecord{
		Slot: c.Slot, Token: c.Token, InstanceID: c.InstanceID, ClaimedAt: now, Attempt: 1,
	}, now)
	return j.won(r)
}

// heldRun returns the run of (job, slot) if token holds it. Caller holds
// b.mu.
func (b *Backend) heldRun(job string, slot int64, token string) (*jobState, *run) {
	j := b.jobs[job]
	if j == nil || token == "" {
		return nil, nil
	}
	r := j.runs[slot]
	if r == nil || r.token != token {
		return nil, nil
	}
	return j, r
}

// Heartbeat extends token's lease on (job, slot) to now+lease if token
// holds the run and it is running (even if the lease has just expired and
// no backup has taken over yet). false means the lease is lost. It fails
// on a lease <= 0 and after Close.
func (s *RunStore) Heartbeat(ctx context.Context, in anarchon.HeartbeatInput) (bool, error) {
	b := s.b
	if err := b.op(ctx, "Heartbeat"); err != nil {
		return false, err
	}
	defer b.mu.Unlock()
	return b.heartbeat(in)
}

// heartbeat renews in.Token's lease. Caller holds b.mu.
func (b *Backend) heartbeat(in anarchon.HeartbeatInput) (bool, error) {
	if in.Lease <= 0 {
		return false, permanentf("membackend: Heartbeat: job %q: lease must be positive, got %v", in.Job, in.Lease)
	}
	_, r := b.heldRun(in.Job, in.Slot, in.Token)
	if r == nil || r.state != anarchon.RunStateRunning {
		return false, nil
	}
	now := b.now()
	r.leaseUntil = now.Add(in.Lease)
	r.changed = now
	return true, nil
}

// Finish marks (job, slot) done with status if token holds it (running, or
// released by the same token), and wakes watchers (RunFinished). A repeat
// for a run that token already finished returns true and changes nothing.
// If the history has no result for token yet, a status-only result is
// recorded; a result saved with SaveResult, before or after, wins. It fails
// on an empty status and after Close.
func (s *RunStore) Finish(ctx context.Context, in anarchon.FinishInput) (bool, error) {
	job, slot, token, status := in.Job, in.Slot, in.Token, in.Status
	b := s.b
	if err := b.op(ctx, "Finish"); err != nil {
		return false, err
	}
	defer b.mu.Unlock()
	if status == "" {
		return false, permanentf("membackend: Finish: job %q: empty status", job)
	}
	return b.finishLocked(job, slot, token, status), nil
}

// finishLocked is Finish with b.mu held and the input checked.
func (b *Backend) finishLocked(job string, slot int64, token string, status anarchon.Status) bool {
	j, r := b.heldRun(job, slot, token)
	if r == nil {
		return false
	}
	switch r.state {
	case anarchon.RunStateDone:
		return true
	case anarchon.RunStateRunning, anarchon.RunStateReleased:
	default:
		return false
	}
	now := b.now()
	r.state, r.status, r.changed = anarchon.RunStateDone, status, now
	delete(j.active, slot)
	j.hist.addResultIfNone(anarchon.StoredResult{
		Slot: slot, Token: token, InstanceID: r.holder, Attempt: r.attempt, Status: status,
	}, now)
	j.hist.trim(j.historySize, j.historyTTL, now)
	b.emit(anarchon.RunEvent{Job: job, Slot: slot, Kind: anarchon.RunFinished})
	return true
}

// FinishResult implements [anarchon.ResultFinisher]: Finish and SaveResult
// under one lock, as one store round trip would be. If r.Token no longer
// holds the run, r is stored with StatusLeaseLost and the answer is false.
// It fails on an empty job, token or status, a negative history TTL, and
// after Close.
func (s *RunStore) FinishResult(ctx context.Context, in anarchon.SaveResultInput) (bool, error) {
	b := s.b
	if err := b.op(ctx, "FinishResult"); err != nil {
		return false, err
	}
	defer b.mu.Unlock()
	return b.finishResult(in)
}

// finishResult finishes one run and stores its result. Caller holds b.mu.
func (b *Backend) finishResult(in anarchon.SaveResultInput) (bool, error) {
	job, r, historySize, historyTTL := in.Job, in.Result, in.HistorySize, in.HistoryTTL
	switch {
	case job == "":
		return false, permanentf("%w (FinishResult)", errEmptyJob)
	case r.Token == "":
		return false, permanentf("membackend: FinishResult: job %q: empty token", job)
	case r.Status == "":
		return false, permanentf("membackend: FinishResult: job %q: empty status", job)
	case historyTTL < 0:
		return false, permanentf("membackend: FinishResult: job %q: negative history TTL %v", job, historyTTL)
	}
	if historySize <= 0 {
		historySize = anarchon.DefaultHistorySize
	}
	ok := b.finishLocked(job, r.Slot, r.Token, r.Status)
	if !ok {
		r.Status = anarchon.StatusLeaseLost
	}
	now := b.now()
	j := b.job(job)
	j.setLimits(historySize, historyTTL)
	j.hist.addResult(r, now)
	j.hist.trim(historySize, historyTTL, now)
	return ok, nil
}

// Release ends token's lease on (job, slot) at once (state released) so
// that a backup wins its next claim, and wakes watchers (RunReleased).
// false if token does not hold a running run; a repeat for a run token
// already released returns true. It fails after Close.
func (s *RunStore) Release(ctx context.Context, in anarchon.ReleaseInput) (bool, error) {
	job, slot, token := in.Job, in.Slot, in.Token
	b := s.b
	if err := b.op(ctx, "Release"); err != nil {
		return false, err
	}
	defer b.mu.Unlock()
	_, r := b.heldRun(job, slot, token)
	if r == nil {
		return false, nil
	}
	switch r.state {
	case anarchon.RunStateReleased:
		return true, nil
	case anarchon.RunStateRunning:
	default:
		return false, nil
	}
	now := b.now()
	r.state, r.leaseUntil, r.changed = anarchon.RunStateReleased, now, now
	b.emit(anarchon.RunEvent{Job: job, Slot: slot, Kind: anarchon.RunReleased})
	return true, nil
}

// Active lists the job's running and released runs, oldest slot first;
// Live is true for a running run whose lease ends after now. It fails after
// Close.
func (s *RunStore) Active(ctx context.Context, job string) ([]anarchon.ActiveRun, error) {
	b := s.b
	if err := b.op(ctx, "Active"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	out := []anarchon.ActiveRun{}
	j := b.jobs[job]
	if j == nil {
		return out, nil
	}
	now := b.now()
	for slot := range j.active {
		r := j.runs[slot]
		out = append(out, anarchon.ActiveRun{
			Slot: slot, Token: r.token, InstanceID: r.holder, Attempt: r.attempt,
			State: r.state, LeaseUntil: r.leaseUntil, Live: r.live(now),
		})
	}
	slices.SortFunc(out, func(a, b anarchon.ActiveRun) int { return cmp.Compare(a.Slot, b.Slot) })
	return out, nil
}

// WatchRuns implements [anarchon.Watcher] on the RunStore; it is the
// backend's [Backend.WatchRuns].
func (s *RunStore) WatchRuns(ctx context.Context) (<-chan anarchon.RunEvent, error) {
	return s.b.WatchRuns(ctx)
}

// ServerTime implements [anarchon.ServerClock] on the RunStore; it is the
// backend's [Backend.ServerTime].
func (s *RunStore) ServerTime(ctx context.Context) (time.Time, error) {
	return s.b.ServerTime(ctx)
}

// watcher is one WatchRuns subscriber.
type watcher struct {
	ch   chan anarchon.RunEvent
	done chan struct{}
}

// stop closes the subscriber's channels. Caller holds b.mu and removes w
// from b.watchers.
func (w *watcher) stop() {
	close(w.ch)
	close(w.done)
}

// watchBuffer is how many events a subscriber may have pending before new
// ones are dropped.
const watchBuffer = 64

// WatchRuns implements [anarchon.Watcher]: it returns a channel that
// receives a RunReleased event for every Release and a RunFinished event
// for every Finish and every abandoned slot, of every job, made after
// WatchRuns returns. Sends never block: when the subscriber's buffer (64
// events) is full, events are dropped, as they are only hints. The channel
// is closed when ctx ends or the backend is closed. It fails after Close.
func (b *Backend) WatchRuns(ctx context.Context) (<-chan anarchon.RunEvent, error) {
	if err := b.op(ctx, "WatchRuns"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	w := &watcher{ch: make(chan anarchon.RunEvent, watchBuffer), done: make(chan struct{})}
	b.watchers[w] = struct{}{}
	go func() {
		select {
		case <-ctx.Done():
		case <-w.done:
			return
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.watchers[w]; ok {
			delete(b.watchers, w)
			w.stop()
		}
	}()
	return w.ch, nil
}

// emit sends ev to every subscriber without blocking. Caller holds b.mu.
func (b *Backend) emit(ev anarchon.RunEvent) {
	for w := range b.watchers {
		select {
		case w.ch <- ev:
		default:
		}
	}
}

// Replace implements [anarchon.Replacer]: if in.Token holds the running
// run of (in.Job, in.Slot), every earlier run of the job that is running
// or released is settled done with StatusReplaced (its token kept) and
// recorded in history under its token unless a result is stored for it
// already; watchers get RunFinished for each. It returns the settled runs
// as they were, oldest first, and true; nil and false if in.Token does not
// hold the slot. It fails after Close.
func (s *RunStore) Replace(ctx context.Context, in anarchon.ReplaceInput) ([]anarchon.ActiveRun, bool, error) {
	b := s.b
	if err := b.op(ctx, "Replace"); err != nil {
		return nil, false, err
	}
	defer b.mu.Unlock()
	j, r := b.heldRun(in.Job, in.Slot, in.Token)
	if r == nil || r.state != anarchon.RunStateRunning {
		return nil, false, nil
	}
	now := b.now()
	out := []anarchon.ActiveRun{}
	for slot := range j.active {
		o := j.runs[slot]
		if slot >= in.Slot || (o.state != anarchon.RunStateRunning && o.state != anarchon.RunStateReleased) {
			continue
		}
		out = append(out, anarchon.ActiveRun{
			Slot: slot, Token: o.token, InstanceID: o.holder, Attempt: o.attempt,
			State: o.state, LeaseUntil: o.leaseUntil, Live: o.live(now),
		})
		o.state, o.status, o.changed = anarchon.RunStateDone, anarchon.StatusReplaced, now
		delete(j.active, slot)
		j.hist.addResultIfNone(anarchon.StoredResult{
			Slot: slot, Token: o.token, InstanceID: o.holder, Attempt: o.attempt, Status: anarchon.StatusReplaced,
		}, now)
		b.emit(anarchon.RunEvent{Job: in.Job, Slot: slot, Kind: anarchon.RunFinished})
	}
	slices.SortFunc(out, func(a, b anarchon.ActiveRun) int { return cmp.Compare(a.Slot, b.Slot) })
	return out, true, nil
}
