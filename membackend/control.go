package membackend

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/anarchon/anarchon"
)

var (
	_ anarchon.JobControl      = (*Backend)(nil)
	_ anarchon.TriggerStore    = (*Backend)(nil)
	_ anarchon.TriggerCanceler = (*Backend)(nil)
)

// Job control and triggers call Options.Fault with the operation names
// "SetPaused", "JobState", "JobStates", "RequestTrigger",
// "PendingTriggers", "ClaimTrigger", "FinishTrigger", "CancelTrigger" and
// "LookupTrigger".
// Both live in the store's one mutex with the claims, so a claim sees a
// pause stored before it, atomically.

// paused returns the stored state of job and whether it is paused. Caller
// holds b.mu.
func (b *Backend) paused(job string) (anarchon.JobState, bool) {
	st, ok := b.ctl[job]
	return st, ok && st.Paused
}

// pausedResult is the history record of a slot settled by a pause.
// addSettled records in's slot settled without running in j's history:
// the claim's time under r's token, as the claim of a run that ran has it
// (anarchontest's History/Settled), and r unless a result of the token is
// stored. Caller holds b.mu.
func (j *jobState) addSettled(in anarchon.ClaimInput, r anarchon.StoredResult, now time.Time) {
	j.hist.addClaim(anarchon.ClaimRecord{Slot: in.Slot, Token: r.Token, InstanceID: in.InstanceID, ClaimedAt: now, Attempt: 1}, now)
	j.hist.addResultIfNone(r, now)
}

func pausedResult(in anarchon.ClaimInput, st anarchon.JobState) anarchon.StoredResult {
	why := "job paused by " + st.By
	if st.Reason != "" {
		why += ": " + st.Reason
	}
	return anarchon.StoredResult{
		Slot: in.Slot, Token: anarchon.PausedToken(in.Slot), InstanceID: in.InstanceID, Attempt: 1,
		Status: anarchon.StatusPaused, Error: why,
	}
}

// SetPaused implements [anarchon.JobControl]: it stores the state with At
// = Options.Now(). It fails on an empty job name and after Close.
func (b *Backend) SetPaused(ctx context.Context, in anarchon.PauseInput) (anarchon.JobState, error) {
	if err := b.op(ctx, "SetPaused"); err != nil {
		return anarchon.JobState{}, err
	}
	defer b.mu.Unlock()
	if in.Job == "" {
		return anarchon.JobState{}, fmt.Errorf("%w (SetPaused)", errEmptyJob)
	}
	if b.ctl == nil {
		b.ctl = make(map[string]anarchon.JobState)
	}
	st := anarchon.JobState{Job: in.Job, Paused: in.Paused, By: in.By, Reason: in.Reason, At: b.now()}
	b.ctl[in.Job] = st
	return st, nil
}

// JobState implements [anarchon.JobControl]. A job never paused has the
// zero state (with Job set). It fails after Close.
func (b *Backend) JobState(ctx context.Context, job string) (anarchon.JobState, error) {
	if err := b.op(ctx, "JobState"); err != nil {
		return anarchon.JobState{}, err
	}
	defer b.mu.Unlock()
	if st, ok := b.ctl[job]; ok {
		return st, nil
	}
	return anarchon.JobState{Job: job}, nil
}

// JobStates implements [anarchon.JobControl]: every stored state, sorted
// by job name. It fails after Close.
func (b *Backend) JobStates(ctx context.Context) ([]anarchon.JobState, error) {
	if err := b.op(ctx, "JobStates"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	out := make([]anarchon.JobState, 0, len(b.ctl))
	for _, st := range b.ctl {
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b anarchon.JobState) int { return cmp.Compare(a.Job, b.Job) })
	return out, nil
}

type triggerKey struct{ job, key string }

// RequestTrigger implements [anarchon.TriggerStore]: it stores a pending
// request unless (in.Job, in.Key) has one, returns the stored record and
// sends a RunTriggered event to the watchers. It fails on an empty job
// or key, and after Close.
func (b *Backend) RequestTrigger(ctx context.Context, in anarchon.TriggerInput) (anarchon.TriggerRecord, error) {
	if err := b.op(ctx, "RequestTrigger"); err != nil {
		return anarchon.TriggerRecord{}, err
	}
	defer b.mu.Unlock()
	if in.Job == "" || in.Key == "" {
		return anarchon.TriggerRecord{}, fmt.Errorf("membackend: RequestTrigger: empty job (%q) or key (%q)", in.Job, in.Key)
	}
	k := triggerKey{in.Job, in.Key}
	if t := b.triggers[k]; t != nil {
		return *t, nil
	}
	if b.triggers == nil {
		b.triggers = make(map[triggerKey]*anarchon.TriggerRecord)
	}
	t := &anarchon.TriggerRecord{Job: in.Job, Key: in.Key, By: in.By, RequestedAt: b.now(), State: anarchon.TriggerPending}
	b.triggers[k] = t
	b.emit(anarchon.RunEvent{Job: in.Job, Kind: anarchon.RunTriggered})
	return *t, nil
}

// PendingTriggers implements [anarchon.TriggerStore]: the pending
// requests, oldest first. It fails after Close.
func (b *Backend) PendingTriggers(ctx context.Context) ([]anarchon.TriggerRecord, error) {
	if err := b.op(ctx, "PendingTriggers"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	var out []anarchon.TriggerRecord
	for _, t := range b.triggers {
		if t.State == anarchon.TriggerPending {
			out = append(out, *t)
		}
	}
	slices.SortFunc(out, func(a, b anarchon.TriggerRecord) int {
		return cmp.Or(a.RequestedAt.Compare(b.RequestedAt), cmp.Compare(a.Job, b.Job), cmp.Compare(a.Key, b.Key))
	})
	return out, nil
}

// ClaimTrigger implements [anarchon.TriggerStore]. It fails on an empty
// token and after Close.
func (b *Backend) ClaimTrigger(ctx context.Context, in anarchon.ClaimTriggerInput) (bool, error) {
	if err := b.op(ctx, "ClaimTrigger"); err != nil {
		return false, err
	}
	defer b.mu.Unlock()
	if in.Token == "" {
		return false, fmt.Errorf("%w (ClaimTrigger, job %q)", errEmptyToken, in.Job)
	}
	t := b.triggers[triggerKey{in.Job, in.Key}]
	switch {
	case t == nil:
		return false, nil
	case t.State != anarchon.TriggerPending:
		return t.Token == in.Token, nil
	}
	t.State, t.Token, t.InstanceID, t.ClaimedAt = anarchon.TriggerRunning, in.Token, in.InstanceID, b.now()
	return true, nil
}

// FinishTrigger implements [anarchon.TriggerStore]. It fails after Close.
func (b *Backend) FinishTrigger(ctx context.Context, in anarchon.FinishTriggerInput) error {
	if err := b.op(ctx, "FinishTrigger"); err != nil {
		return err
	}
	defer b.mu.Unlock()
	t := b.triggers[triggerKey{in.Job, in.Key}]
	if t == nil || t.Token != in.Token || in.Token == "" {
		return nil
	}
	t.State, t.Slot, t.Status, t.Error, t.FinishedAt = anarchon.TriggerDone, in.Slot, in.Status, in.Error, b.now()
	return nil
}

// CancelTrigger implements [anarchon.TriggerCanceler] under the store's
// lock. It fails after Close.
func (b *Backend) CancelTrigger(ctx context.Context, in anarchon.CancelTriggerInput) (anarchon.TriggerRecord, error) {
	if err := b.op(ctx, "CancelTrigger"); err != nil {
		return anarchon.TriggerRecord{}, err
	}
	defer b.mu.Unlock()
	t := b.triggers[triggerKey{in.Job, in.Key}]
	if t == nil {
		return anarchon.TriggerRecord{}, fmt.Errorf("membackend: trigger %q of job %q: %w", in.Key, in.Job, anarchon.ErrNotFound)
	}
	if t.State == anarchon.TriggerPending {
		t.State, t.Status, t.Error, t.FinishedAt = anarchon.TriggerDone, anarchon.StatusCanceled, anarchon.CanceledError(in.By), b.now()
	}
	return *t, nil
}

// LookupTrigger implements [anarchon.TriggerStore]. It fails after Close.
func (b *Backend) LookupTrigger(ctx context.Context, job, key string) (anarchon.TriggerRecord, error) {
	if err := b.op(ctx, "LookupTrigger"); err != nil {
		return anarchon.TriggerRecord{}, err
	}
	defer b.mu.Unlock()
	t := b.triggers[triggerKey{job, key}]
	if t == nil {
		return anarchon.TriggerRecord{}, fmt.Errorf("membackend: trigger %q of job %q: %w", key, job, anarchon.ErrNotFound)
	}
	return *t, nil
}
