package natsbackend

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	_ anarchon.JobControl      = (*Backend)(nil)
	_ anarchon.TriggerStore    = (*Backend)(nil)
	_ anarchon.TriggerCanceler = (*Backend)(nil)
)

// Job control (SPEC §12): a job's state is the key "p.<job>" of the
// bucket (JSON; At is the server timestamp of its revision). JetStream KV
// has no write conditioned on another key, so a claim reads the state
// just before its Create: a pause stored between that read and the Create
// is not seen by that one claim, a window of one round trip to the
// server. Every claim that starts after SetPaused returned sees it. A
// paused slot is created settled (plain: the claim key under
// anarchon.PausedToken; lease: the run key in state paused), and the
// claimer whose Create won saves its history record.
//
// Triggers: "t.<job>.<key>" holds each request (JSON, key base64url) and
// "q.<job>.<key>" marks it pending; a claim moves the request from
// pending to running with a revision compare-and-set and deletes the
// mark. WatchRuns also watches "q.>" and sends RunTriggered for a new
// mark.

func pauseKey(job string) string { return "p." + job }
func triggerKey(job, key string) string {
	return "t." + job + "." + base64.RawURLEncoding.EncodeToString([]byte(key))
}
func queueKey(job, key string) string {
	return "q." + job + "." + base64.RawURLEncoding.EncodeToString([]byte(key))
}

type stateValue struct {
	Paused bool   `json:"p"`
	By     string `json:"b,omitempty"`
	Reason string `json:"r,omitempty"`
}

// readState reads job's (encoded) control state; the entry is nil for a
// job without one.
func (b *Backend) readState(ctx context.Context, h handles, job string) (stateValue, jetstream.KeyValueEntry, error) {
	var v stateValue
	e, err := b.getJSON(ctx, h, pauseKey(job), "job state", &v)
	return v, e, err
}

// state is the JobState of name stored in entry e.
func (v stateValue) state(name string, e jetstream.KeyValueEntry) anarchon.JobState {
	return anarchon.JobState{Job: name, Paused: v.Paused, By: v.By, Reason: v.Reason, At: e.Created().UTC().Truncate(time.Millisecond)}
}

// savePaused saves the history record of a slot a claim settled as
// paused.
func (b *Backend) savePaused(ctx context.Context, in anarchon.ClaimInput, st stateValue) error {
	why := "job paused by " + st.By
	if st.Reason != "" {
		why += ": " + st.Reason
	}
	return b.SaveResult(ctx, anarchon.SaveResultInput{Job: in.Job, HistorySize: in.HistorySize, HistoryTTL: in.HistoryTTL,
		Result: anarchon.StoredResult{Slot: in.Slot, Token: anarchon.PausedToken(in.Slot), InstanceID: in.InstanceID, Attempt: 1,
			Status: anarchon.StatusPaused, Error: why}})
}

// SetPaused implements [anarchon.JobControl]: a Put of the job's state.
func (b *Backend) SetPaused(ctx context.Context, in anarchon.PauseInput) (anarchon.JobState, error) {
	h, job, ctx, cancel, err := b.jobArgs(ctx, in.Job)
	if err != nil {
		return anarchon.JobState{}, err
	}
	defer cancel()
	val, _ := json.Marshal(stateValue{Paused: in.Paused, By: in.By, Reason: in.Reason})
	if _, err := h.kv.Put(ctx, pauseKey(job), val); err != nil {
		return anarchon.JobState{}, b.wrap("set paused", err)
	}
	return b.JobState(ctx, in.Job)
}

// JobState implements [anarchon.JobControl].
func (b *Backend) JobState(ctx context.Context, name string) (anarchon.JobState, error) {
	job, err := encodeJob(name)
	if err != nil {
		return anarchon.JobState{}, err
	}
	h, err := b.ready(ctx)
	if err != nil {
		return anarchon.JobState{}, err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	v, e, err := b.readState(ctx, h, job)
	if err != nil {
		return anarchon.JobState{}, err
	}
	if e == nil {
		return anarchon.JobState{Job: name}, nil
	}
	return v.state(name, e), nil
}

// JobStates implements [anarchon.JobControl]: the keys "p.>", by job.
func (b *Backend) JobStates(ctx context.Context) ([]anarchon.JobState, error) {
	h, err := b.ready(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	keys, err := b.listKeys(ctx, h, "p.>")
	if err != nil {
		return nil, b.wrap("job states", err)
	}
	var out []anarchon.JobState
	for _, k := range keys {
		name, ok := decodeJob(strings.TrimPrefix(k, "p."))
		if !ok {
			continue
		}
		var v stateValue
		e, err := b.getJSON(ctx, h, k, "job state", &v)
		if err != nil {
			return nil, err
		}
		if e != nil { // else deleted meanwhile
			out = append(out, v.state(name, e))
		}
	}
	slices.SortFunc(out, func(a, b anarchon.JobState) int { return strings.Compare(a.Job, b.Job) })
	return out, nil
}

func (b *Backend) listKeys(ctx context.Context, h handles, filter string) ([]string, error) {
	l, err := h.kv.ListKeysFiltered(ctx, filter)
	if err != nil {
		return nil, err
	}
	var keys []string
	for k := range l.Keys() {
		keys = append(keys, k)
	}
	return keys, nil
}

type triggerValue struct {
	Job      string                `json:"job"`
	Key      string                `json:"key"`
	By       string                `json:"by,omitempty"`
	At       int64                 `json:"at"`
	State    anarchon.TriggerState `json:"st"`
	Token    string                `json:"tok,omitempty"`
	Instance string                `json:"inst,omitempty"`
	Claimed  int64                 `json:"cat,omitempty"`
	Slot     int64                 `json:"slot,omitempty"`
	Status   anarchon.Status       `json:"stat,omitempty"`
	Error    string                `json:"err,omitempty"`
	Finished int64                 `json:"fat,omitempty"`
}

func (v triggerValue) record() anarchon.TriggerRecord {
	t := anarchon.TriggerRecord{Job: v.Job, Key: v.Key, By: v.By, RequestedAt: time.UnixMilli(v.At).UTC(), State: v.State,
		InstanceID: v.Instance, Token: v.Token, Slot: v.Slot, Status: v.Status, Error: v.Error}
	if v.Claimed != 0 {
		t.ClaimedAt = time.UnixMilli(v.Claimed).UTC()
	}
	if v.Finished != 0 {
		t.FinishedAt = time.UnixMilli(v.Finished).UTC()
	}
	return t
}

func (b *Backend) readTrigger(ctx context.Context, h handles, job, key string) (triggerValue, uint64, error) {
	var v triggerValue
	e, err := b.getJSON(ctx, h, triggerKey(job, key), "trigger", &v)
	if err != nil {
		return triggerValue{}, 0, err
	}
	if e == nil {
		return triggerValue{}, 0, fmt.Errorf("natsbackend: trigger %q: %w", key, anarchon.ErrNotFound)
	}
	return v, e.Revision(), nil
}

// RequestTrigger implements [anarchon.TriggerStore]: a Create of the
// request (RequestedAt by the server's clock), then of its pending mark.
func (b *Backend) RequestTrigger(ctx context.Context, in anarchon.TriggerInput) (anarchon.TriggerRecord, error) {
	job, err := encodeJob(in.Job)
	if err != nil {
		return anarchon.TriggerRecord{}, err
	}
	if in.Key == "" {
		return anarchon.TriggerRecord{}, fmt.Errorf("%w: empty trigger key", ErrInvalid)
	}
	h, err := b.ready(ctx)
	if err != nil {
		return anarchon.TriggerRecord{}, err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	now, err := b.serverNow(ctx, h)
	if err != nil {
		return anarchon.TriggerRecord{}, err
	}
	v := triggerValue{Job: in.Job, Key: in.Key, By: in.By, At: now.UnixMilli(), State: anarchon.TriggerPending}
	val, _ := json.Marshal(v)
	_, err = h.kv.Create(ctx, triggerKey(job, in.Key), val)
	if errors.Is(err, jetstream.ErrKeyExists) {
		cur, _, err := b.readTrigger(ctx, h, job, in.Key)
		if err != nil {
			return anarchon.TriggerRecord{}, err
		}
		return cur.record(), nil
	}
	if err != nil {
		return anarchon.TriggerRecord{}, b.wrap("request trigger", err)
	}
	if _, err := h.kv.Put(ctx, queueKey(job, in.Key), []byte("1")); err != nil {
		return anarchon.TriggerRecord{}, b.wrap("queue trigger", err)
	}
	return v.record(), nil
}

// PendingTriggers implements [anarchon.TriggerStore]: the requests with
// a pending mark, oldest first.
func (b *Backend) PendingTriggers(ctx context.Context) ([]anarchon.TriggerRecord, error) {
	h, err := b.ready(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	keys, err := b.listKeys(ctx, h, "q.>")
	if err != nil {
		return nil, b.wrap("pending triggers", err)
	}
	var out []anarchon.TriggerRecord
	for _, k := range keys {
		parts := strings.Split(k, ".")
		if len(parts) != 3 {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(parts[2])
		if err != nil {
			continue
		}
		v, _, err := b.readTrigger(ctx, h, parts[1], string(raw))
		if errors.Is(err, anarchon.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if v.State != anarchon.TriggerPending {
			_ = h.kv.Delete(ctx, k) // a claimer died before it dropped the mark
			continue
		}
		out = append(out, v.record())
	}
	slices.SortFunc(out, func(a, b anarchon.TriggerRecord) int { return a.RequestedAt.Compare(b.RequestedAt) })
	return out, nil
}

// ClaimTrigger implements [anarchon.TriggerStore]: a revision
// compare-and-set from pending to running, then the mark is dropped.
func (b *Backend) ClaimTrigger(ctx context.Context, in anarchon.ClaimTriggerInput) (bool, error) {
	h, job, ctx, cancel, err := b.runArgs(ctx, in.Job, in.Token)
	if err != nil {
		return false, err
	}
	defer cancel()
	for turn := range casRetries {
		if err := casPause(ctx, turn, "claim trigger"); err != nil {
			return false, err
		}
		v, rev, err := b.readTrigger(ctx, h, job, in.Key)
		if errors.Is(err, anarchon.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if v.State != anarchon.TriggerPending {
			return v.Token == in.Token, nil
		}
		now, err := b.serverNow(ctx, h)
		if err != nil {
			return false, err
		}
		v.State, v.Token, v.Instance, v.Claimed = anarchon.TriggerRunning, in.Token, in.InstanceID, now.UnixMilli()
		val, _ := json.Marshal(v)
		if _, err := h.kv.Update(ctx, triggerKey(job, in.Key), val, rev); err != nil {
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue
			}
			return false, b.wrap("claim trigger", err)
		}
		_ = h.kv.Delete(ctx, queueKey(job, in.Key))
		return true, nil
	}
	return false, fmt.Errorf("natsbackend: claim trigger %q: %w", in.Key, ErrContention)
}

// FinishTrigger implements [anarchon.TriggerStore].
func (b *Backend) FinishTrigger(ctx context.Context, in anarchon.FinishTriggerInput) error {
	h, job, ctx, cancel, err := b.jobArgs(ctx, in.Job)
	if err != nil {
		return err
	}
	defer cancel()
	for turn := range casRetries {
		if err := casPause(ctx, turn, "finish trigger"); err != nil {
			return err
		}
		v, rev, err := b.readTrigger(ctx, h, job, in.Key)
		if errors.Is(err, anarchon.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if v.State != anarchon.TriggerRunning || v.Token != in.Token || in.Token == "" {
			return nil
		}
		now, err := b.serverNow(ctx, h)
		if err != nil {
			return err
		}
		v.State, v.Slot, v.Status, v.Error, v.Finished = anarchon.TriggerDone, in.Slot, in.Status, in.Error, now.UnixMilli()
		val, _ := json.Marshal(v)
		if _, err := h.kv.Update(ctx, triggerKey(job, in.Key), val, rev); err != nil {
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue
			}
			return b.wrap("finish trigger", err)
		}
		return nil
	}
	return fmt.Errorf("natsbackend: finish trigger %q: %w", in.Key, ErrContention)
}

// CancelTrigger implements [anarchon.TriggerCanceler]: an Update of the
// request at the revision read pending, as a claim's is, so one of them
// fails with a revision mismatch and reads again; then the queue entry
// goes, as after a claim.
func (b *Backend) CancelTrigger(ctx context.Context, in anarchon.CancelTriggerInput) (anarchon.TriggerRecord, error) {
	h, job, ctx, cancel, err := b.jobArgs(ctx, in.Job)
	if err != nil {
		return anarchon.TriggerRecord{}, err
	}
	defer cancel()
	for turn := range casRetries {
		if err := casPause(ctx, turn, "cancel trigger"); err != nil {
			return anarchon.TriggerRecord{}, err
		}
		v, rev, err := b.readTrigger(ctx, h, job, in.Key)
		if err != nil {
			return anarchon.TriggerRecord{}, err
		}
		if v.State != anarchon.TriggerPending {
			return v.record(), nil
		}
		now, err := b.serverNow(ctx, h)
		if err != nil {
			return anarchon.TriggerRecord{}, err
		}
		v.State, v.Status, v.Error, v.Finished = anarchon.TriggerDone, anarchon.StatusCanceled, anarchon.CanceledError(in.By), now.UnixMilli()
		val, _ := json.Marshal(v)
		if _, err := h.kv.Update(ctx, triggerKey(job, in.Key), val, rev); err != nil {
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue
			}
			return anarchon.TriggerRecord{}, b.wrap("cancel trigger", err)
		}
		_ = h.kv.Delete(ctx, queueKey(job, in.Key))
		return v.record(), nil
	}
	return anarchon.TriggerRecord{}, fmt.Errorf("natsbackend: cancel trigger %q: %w", in.Key, ErrContention)
}

// LookupTrigger implements [anarchon.TriggerStore].
func (b *Backend) LookupTrigger(ctx context.Context, name, key string) (anarchon.TriggerRecord, error) {
	h, job, ctx, cancel, err := b.jobArgs(ctx, name)
	if err != nil {
		return anarchon.TriggerRecord{}, err
	}
	defer cancel()
	v, _, err := b.readTrigger(ctx, h, job, key)
	if err != nil {
		return anarchon.TriggerRecord{}, err
	}
	return v.record(), nil
}
