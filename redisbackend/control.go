package redisbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/anarchon/anarchon"
	"github.com/redis/go-redis/v9"
)

var (
	_ anarchon.JobControl      = (*Backend)(nil)
	_ anarchon.TriggerStore    = (*Backend)(nil)
	_ anarchon.TriggerCanceler = (*Backend)(nil)
)

// Job control (SPEC §12): a job's state is the string key "{job}:ctl"
// (JSON), in the job's hash slot, so both claim scripts read it inside
// their atomic step: a claim that reaches the server after SetPaused
// settles the slot as paused (state "paused" under anarchon.PausedToken).
// The script that settles it saves the slot's history record in the same
// step (the plain claim runs a second script for it, which decides again:
// the claim of an unpaused job carries no history keys). "{<prefix>:}:ctl" is a
// hash from job name to the same JSON, written after the job's key, for
// JobStates.
//
// Triggers: "{job}:trig" is a hash from key to the request (JSON), where
// requests are made and claimed by scripts; "{<prefix>:}:trigq" is a
// sorted set of pending requests by request time (members are JSON
// [job, key]), from which PendingTriggers reads and drops requests no
// longer pending. A new request is published on the watch channel as a
// "triggered" event.

var (
	scriptControlSet     = newScript(lua("control_set"))
	scriptTriggerRequest = newScript(lua("trigger_request"))
	scriptTriggerClaim   = newScript(lua("trigger_claim"))
	scriptTriggerFinish  = newScript(lua("trigger_finish"))
	// scriptTriggerCancel: KEYS trig; ARGV key, error text. Returns the
	// request's JSON after it (done, canceled, if it was pending), or nil.
	scriptTriggerCancel = newScript(lua("trigger_cancel"))
)

type wireState struct {
	Job    string `json:"job"`
	Paused bool   `json:"paused"`
	By     string `json:"by"`
	Reason string `json:"reason"`
	At     string `json:"at"`
}

func (w wireState) state() anarchon.JobState {
	return anarchon.JobState{Job: w.Job, Paused: w.Paused, By: w.By, Reason: w.Reason, At: msTime(w.At)}
}

type wireTrigger struct {
	Job      string `json:"job"`
	Key      string `json:"key"`
	By       string `json:"by"`
	At       string `json:"at"`
	State    string `json:"st"`
	Token    string `json:"tok,omitempty"`
	Instance string `json:"inst,omitempty"`
	Claimed  string `json:"cat,omitempty"`
	Slot     string `json:"slot,omitempty"`
	Status   string `json:"stat,omitempty"`
	Error    string `json:"err,omitempty"`
	Finished string `json:"fat,omitempty"`
}

func (w wireTrigger) record() anarchon.TriggerRecord {
	t := anarchon.TriggerRecord{Job: w.Job, Key: w.Key, By: w.By, RequestedAt: msTime(w.At), State: anarchon.TriggerState(w.State),
		InstanceID: w.Instance, Token: w.Token, Status: anarchon.Status(w.Status), Error: w.Error}
	t.Slot, _ = strconv.ParseInt(w.Slot, 10, 64)
	if w.Claimed != "" {
		t.ClaimedAt = msTime(w.Claimed)
	}
	if w.Finished != "" {
		t.FinishedAt = msTime(w.Finished)
	}
	return t
}

func (b *Backend) ctlIndex() string  { return "{" + b.prefix + ":}:ctl" }
func (b *Backend) trigQueue() string { return "{" + b.prefix + ":}:trigq" }

// SetPaused implements [anarchon.JobControl]: a script writes the job's
// state with the server's time, then the state is copied to the index.
func (b *Backend) SetPaused(ctx context.Context, in anarchon.PauseInput) (anarchon.JobState, error) {
	if err := b.check(); err != nil {
		return anarchon.JobState{}, err
	}
	if in.Job == "" {
		return anarchon.JobState{}, fmt.Errorf("%w: empty job name", ErrInvalidInput)
	}
	paused := "0"
	if in.Paused {
		paused = "1"
	}
	// By and Reason are escaped as a result's Error is (the claim scripts
	// copy them into a paused slot's record), so the state holds any bytes.
	res, err := scriptControlSet.Run(ctx, b.client, []string{b.keys(in.Job).ctl}, in.Job, paused,
		anarchon.EscapeText(in.By), anarchon.EscapeText(in.Reason)).Text()
	if err != nil {
		return anarchon.JobState{}, b.wrap(fmt.Sprintf("set paused %q", in.Job), err)
	}
	if err := b.client.HSet(ctx, b.ctlIndex(), in.Job, res).Err(); err != nil {
		return anarchon.JobState{}, b.wrap(fmt.Sprintf("set paused %q", in.Job), err)
	}
	var w wireState
	if err := json.Unmarshal([]byte(res), &w); err != nil {
		return anarchon.JobState{}, b.unexpected("set paused", res)
	}
	return w.state(), nil
}

// JobState implements [anarchon.JobControl].
func (b *Backend) JobState(ctx context.Context, job string) (anarchon.JobState, error) {
	if err := b.check(); err != nil {
		return anarchon.JobState{}, err
	}
	res, err := b.client.Get(ctx, b.keys(job).ctl).Result()
	if errors.Is(err, redis.Nil) {
		return anarchon.JobState{Job: job}, nil
	}
	if err != nil {
		return anarchon.JobState{}, b.wrap(fmt.Sprintf("job state %q", job), err)
	}
	var w wireState
	if err := json.Unmarshal([]byte(res), &w); err != nil {
		return anarchon.JobState{}, b.unexpected("job state", res)
	}
	return w.state(), nil
}

// JobStates implements [anarchon.JobControl]: the index, sorted by job.
func (b *Backend) JobStates(ctx context.Context) ([]anarchon.JobState, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	all, err := b.client.HGetAll(ctx, b.ctlIndex()).Result()
	if err != nil {
		return nil, b.wrap("job states", err)
	}
	out := make([]anarchon.JobState, 0, len(all))
	for _, v := range all {
		var w wireState
		if err := json.Unmarshal([]byte(v), &w); err != nil {
			return nil, b.unexpected("job states", v)
		}
		out = append(out, w.state())
	}
	slices.SortFunc(out, func(a, b anarchon.JobState) int { return strings.Compare(a.Job, b.Job) })
	return out, nil
}

// RequestTrigger implements [anarchon.TriggerStore]: a script stores the
// request unless the key has one; a new one is queued and published.
func (b *Backend) RequestTrigger(ctx context.Context, in anarchon.TriggerInput) (anarchon.TriggerRecord, error) {
	if err := b.check(); err != nil {
		return anarchon.TriggerRecord{}, err
	}
	if in.Job == "" || in.Key == "" {
		return anarchon.TriggerRecord{}, fmt.Errorf("%w: empty job name (%q) or trigger key (%q)", ErrInvalidInput, in.Job, in.Key)
	}
	op := fmt.Sprintf("request trigger %q of %q", in.Key, in.Job)
	res, err := scriptTriggerRequest.Run(ctx, b.client, []string{b.keys(in.Job).trig}, in.Key, in.By, in.Job).Slice()
	if err != nil {
		return anarchon.TriggerRecord{}, b.wrap(op, err)
	}
	if len(res) != 2 {
		return anarchon.TriggerRecord{}, b.unexpected("request trigger", res)
	}
	created, _ := res[0].(int64)
	raw, _ := res[1].(string)
	var w wireTrigger
	if err := json.Unmarshal([]byte(raw), &w); err != nil {
		return anarchon.TriggerRecord{}, b.unexpected("request trigger", raw)
	}
	rec := w.record()
	if created == 1 || rec.State == anarchon.TriggerPending {
		member, _ := json.Marshal([]string{in.Job, in.Key})
		if err := b.client.ZAdd(ctx, b.trigQueue(), redis.Z{Score: float64(rec.RequestedAt.UnixMilli()), Member: string(member)}).Err(); err != nil {
			return anarchon.TriggerRecord{}, b.wrap(op, err)
		}
		if b.channel != "" {
			ev, _ := json.Marshal(wireEvent{Job: in.Job, Slot: "0", Kind: "triggered"})
			if err := b.client.Publish(ctx, b.channel, string(ev)).Err(); err != nil {
				return anarchon.TriggerRecord{}, b.wrap(op, err)
			}
		}
	}
	return rec, nil
}

// PendingTriggers implements [anarchon.TriggerStore]: it reads the queue
// oldest first and each request, dropping from the queue those no longer
// pending.
func (b *Backend) PendingTriggers(ctx context.Context) ([]anarchon.TriggerRecord, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	members, err := b.client.ZRange(ctx, b.trigQueue(), 0, -1).Result()
	if err != nil {
		return nil, b.wrap("pending triggers", err)
	}
	var out []anarchon.TriggerRecord
	for _, m := range members {
		var jk []string
		if json.Unmarshal([]byte(m), &jk) != nil || len(jk) != 2 {
			b.client.ZRem(ctx, b.trigQueue(), m)
			continue
		}
		rec, err := b.LookupTrigger(ctx, jk[0], jk[1])
		if errors.Is(err, anarchon.ErrNotFound) || (err == nil && rec.State != anarchon.TriggerPending) {
			b.client.ZRem(ctx, b.trigQueue(), m)
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// ClaimTrigger implements [anarchon.TriggerStore]: one script on the
// job's request hash.
func (b *Backend) ClaimTrigger(ctx context.Context, in anarchon.ClaimTriggerInput) (bool, error) {
	if err := b.check(); err != nil {
		return false, err
	}
	if in.Token == "" {
		return false, fmt.Errorf("%w: empty token", ErrInvalidInput)
	}
	n, err := scriptTriggerClaim.Run(ctx, b.client, []string{b.keys(in.Job).trig}, in.Key, in.Token, in.InstanceID).Int64()
	if err != nil {
		return false, b.wrap(fmt.Sprintf("claim trigger %q of %q", in.Key, in.Job), err)
	}
	return n == 1, nil
}

// FinishTrigger implements [anarchon.TriggerStore].
func (b *Backend) FinishTrigger(ctx context.Context, in anarchon.FinishTriggerInput) error {
	if err := b.check(); err != nil {
		return err
	}
	err := scriptTriggerFinish.Run(ctx, b.client, []string{b.keys(in.Job).trig}, in.Key, in.Token,
		strconv.FormatInt(in.Slot, 10), string(in.Status), in.Error).Err()
	if err != nil {
		return b.wrap(fmt.Sprintf("finish trigger %q of %q", in.Key, in.Job), err)
	}
	return nil
}

// CancelTrigger implements [anarchon.TriggerCanceler]: one script on the
// job's request hash, which a claim's script excludes. PendingTriggers
// drops the canceled request from the queue.
func (b *Backend) CancelTrigger(ctx context.Context, in anarchon.CancelTriggerInput) (anarchon.TriggerRecord, error) {
	if err := b.check(); err != nil {
		return anarchon.TriggerRecord{}, err
	}
	raw, err := scriptTriggerCancel.Run(ctx, b.client, []string{b.keys(in.Job).trig}, in.Key, anarchon.CanceledError(in.By)).Text()
	if errors.Is(err, redis.Nil) {
		return anarchon.TriggerRecord{}, fmt.Errorf("redisbackend: trigger %q of job %q: %w", in.Key, in.Job, anarchon.ErrNotFound)
	}
	if err != nil {
		return anarchon.TriggerRecord{}, b.wrap(fmt.Sprintf("cancel trigger %q of %q", in.Key, in.Job), err)
	}
	var w wireTrigger
	if err := json.Unmarshal([]byte(raw), &w); err != nil {
		return anarchon.TriggerRecord{}, b.unexpected("cancel trigger", raw)
	}
	return w.record(), nil
}

// LookupTrigger implements [anarchon.TriggerStore].
func (b *Backend) LookupTrigger(ctx context.Context, job, key string) (anarchon.TriggerRecord, error) {
	if err := b.check(); err != nil {
		return anarchon.TriggerRecord{}, err
	}
	raw, err := b.client.HGet(ctx, b.keys(job).trig, key).Result()
	if errors.Is(err, redis.Nil) {
		return anarchon.TriggerRecord{}, fmt.Errorf("redisbackend: trigger %q of job %q: %w", key, job, anarchon.ErrNotFound)
	}
	if err != nil {
		return anarchon.TriggerRecord{}, b.wrap(fmt.Sprintf("lookup trigger %q of %q", key, job), err)
	}
	var w wireTrigger
	if err := json.Unmarshal([]byte(raw), &w); err != nil {
		return anarchon.TriggerRecord{}, b.unexpected("lookup trigger", raw)
	}
	return w.record(), nil
}
