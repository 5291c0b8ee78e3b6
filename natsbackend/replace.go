package natsbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var _ anarchon.Replacer = (*RunStore)(nil)

// Replace implements [anarchon.Replacer]: if in.Token holds the running
// run of (in.Job, in.Slot), each earlier run listed in the job key
// "j.<job>" that is running or released is settled done with status
// replaced (token, holder and attempt kept) by a compare-and-set of its
// key, so that a run is replaced once however many callers race, and
// its holder's next heartbeat, which writes the same key, fails. For each
// run it settled it appends a store record (status replaced) to the
// history, which History shows only while no result of that token is
// stored; the KV watch announces each change as RunFinished. It returns
// those runs as they were, oldest first, and true; nil and false if
// in.Token does not hold the slot. The holder check and the runs are
// separate steps (a run not listed, from a claim that crashed before
// listing it, is left alone: nobody runs it).
func (r *RunStore) Replace(ctx context.Context, in anarchon.ReplaceInput) ([]anarchon.ActiveRun, bool, error) {
	b := r.b
	h, job, ctx, cancel, err := b.runArgs(ctx, in.Job, in.Token)
	if err != nil {
		return nil, false, err
	}
	defer cancel()
	e, v, err := b.readRun(ctx, h, runKey(job, in.Slot))
	if err != nil {
		return nil, false, err
	}
	if e == nil || v.State != anarchon.RunStateRunning || v.Token != in.Token {
		return nil, false, nil
	}
	jv, _, err := b.readJob(ctx, h, job)
	if err != nil {
		return nil, false, err
	}
	out := []anarchon.ActiveRun{}
	for _, slot := range jv.Slots {
		if slot >= in.Slot {
			continue
		}
		run, ok, err := b.replaceRun(ctx, h, runKey(job, slot))
		if err != nil {
			return out, true, err
		}
		if !ok {
			continue
		}
		run.Slot = slot
		out = append(out, run)
		rec, _ := json.Marshal(histRec{
			Kind: "s", Slot: slot, Token: run.Token, Instance: run.InstanceID, Attempt: run.Attempt,
			Status: string(anarchon.StatusReplaced), TTLms: in.HistoryTTL.Milliseconds(),
		})
		if _, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: b.subject(job), Data: rec},
			jetstream.WithExpectStream(b.opts.HistoryStream)); err != nil {
			return out, true, b.wrap("record replaced run", err)
		}
	}
	return out, true, nil
}

// replaceRun settles the run of key as replaced if it is running or
// released, and returns it as it was (Slot not set).
func (b *Backend) replaceRun(ctx context.Context, h handles, key string) (anarchon.ActiveRun, bool, error) {
	for turn := range casRetries {
		if err := casPause(ctx, turn, "replace run"); err != nil {
			return anarchon.ActiveRun{}, false, err
		}
		e, v, err := b.readRun(ctx, h, key)
		if err != nil || e == nil {
			return anarchon.ActiveRun{}, false, err
		}
		if v.State != anarchon.RunStateRunning && v.State != anarchon.RunStateReleased {
			return anarchon.ActiveRun{}, false, nil
		}
		until := v.until(e.Created())
		live := false
		if v.State == anarchon.RunStateRunning {
			expired, err := b.serverAfter(ctx, h, until.Add(-time.Nanosecond))
			if err != nil {
				return anarchon.ActiveRun{}, false, err
			}
			live = !expired
		}
		nv := runValue{State: anarchon.RunStateDone, Token: v.Token, Holder: v.Holder, Attempt: v.Attempt, Status: anarchon.StatusReplaced}
		if _, err := h.kv.Update(ctx, key, encodeRun(nv), e.Revision()); err != nil {
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue
			}
			return anarchon.ActiveRun{}, false, b.wrap("replace run", err)
		}
		return anarchon.ActiveRun{
			Token: v.Token, InstanceID: v.Holder, Attempt: v.Attempt, State: v.State,
			LeaseUntil: until.UTC(), Live: live,
		}, true, nil
	}
	return anarchon.ActiveRun{}, false, fmt.Errorf("natsbackend: run %s: %w", key, ErrContention)
}
