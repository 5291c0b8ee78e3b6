package natsbackend

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/nats-io/nats.go/jetstream"
)

var _ anarchon.InstanceRegistry = (*Backend)(nil)

// The instance registry (SPEC §10) is one key per instance in the
// backend's KV bucket, "i.<id>" (the ID in unpadded base64url). Its value
// is an instanceValue; the time of a registration is the server timestamp
// of the entry's revision (KeyValueEntry.Created), as for leases, so
// LastSeen and ExpiresAt are by the server's clock, to the nanosecond.
// Records are judged live or dead against the server's clock read at the
// time of the list. A record expired more than anarchon.InstanceRetention
// ago is deleted by the next list; the bucket's TTL (Options.ClaimTTL)
// drops any key not written for that long, so with a ClaimTTL below the
// retention dead records are forgotten sooner.

// instanceValue is the value of an instance key.
type instanceValue struct {
	Info    json.RawMessage `json:"info"`           // the anarchon.InstanceInfo
	TTLMs   int64           `json:"ttl"`            // the registration's TTL, ms
	Stopped bool            `json:"stop,omitempty"` // deregistered
	// A stopped record is written again by DeregisterInstance: it keeps
	// the last registration's time and expiry, Unix ns, since Created is
	// then the time of the deregistration.
	SeenNs int64 `json:"seen,omitempty"`
	ExpNs  int64 `json:"exp,omitempty"`
}

func instanceKey(id string) string { return "i." + base64.RawURLEncoding.EncodeToString([]byte(id)) }

// decode judges the entry at the server time now.
func (v instanceValue) decode(e jetstream.KeyValueEntry, now time.Time) (anarchon.InstanceRecord, error) {
	var rec anarchon.InstanceRecord
	if err := json.Unmarshal(v.Info, &rec.InstanceInfo); err != nil {
		return rec, anarchon.Permanent(fmt.Errorf("natsbackend: instance key %s holds an unreadable value: %w", e.Key(), err))
	}
	rec.TTL = time.Duration(v.TTLMs) * time.Millisecond
	created := e.Created().UTC()
	if !v.Stopped {
		rec.LastSeen = created
		rec.ExpiresAt = created.Add(rec.TTL)
		rec.State = anarchon.InstanceDead
		if rec.ExpiresAt.After(now) {
			rec.State = anarchon.InstanceLive
		}
		return rec, nil
	}
	rec.LastSeen = time.Unix(0, v.SeenNs).UTC()
	rec.ExpiresAt = time.Unix(0, v.ExpNs).UTC()
	if rec.ExpiresAt.After(created) {
		rec.ExpiresAt = created
	}
	rec.State = anarchon.InstanceStopped
	return rec, nil
}

// RegisterInstance implements [anarchon.InstanceRegistry]: one Put of the
// instance's key; the server's timestamp of that revision is LastSeen and
// LastSeen + ttl (kept to the millisecond) is ExpiresAt. A stopped record
// becomes live again. It returns an error wrapping ErrInvalid for an
// empty ID or a ttl below a millisecond, and anarchon.ErrClosed after
// Close.
func (b *Backend) RegisterInstance(ctx context.Context, info anarchon.InstanceInfo, ttl time.Duration) error {
	if info.ID == "" {
		return fmt.Errorf("%w: empty instance ID", ErrInvalid)
	}
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: instance %q: ttl %v is below a millisecond", ErrInvalid, info.ID, ttl)
	}
	h, err := b.ready(ctx)
	if err != nil {
		return err
	}
	data, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("natsbackend: register instance %q: %w", info.ID, err)
	}
	val, _ := json.Marshal(instanceValue{Info: data, TTLMs: ttl.Milliseconds()})
	ctx, cancel := b.bound(ctx)
	defer cancel()
	if _, err := h.kv.Put(ctx, instanceKey(info.ID), val); err != nil {
		return b.wrap(fmt.Sprintf("register instance %q", info.ID), err)
	}
	return nil
}

// DeregisterInstance implements [anarchon.InstanceRegistry]: it rewrites
// the instance's key as stopped (compare-and-set on its revision, retried
// after a concurrent write), keeping the last registration's times; the
// server timestamp of the rewrite caps ExpiresAt. An unknown id is not an
// error. anarchon.ErrClosed after Close.
func (b *Backend) DeregisterInstance(ctx context.Context, id string) error {
	h, err := b.ready(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	key := instanceKey(id)
	for turn := range casRetries {
		if err := casPause(ctx, turn, "deregister instance"); err != nil {
			return err
		}
		e, err := h.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return nil
		}
		if err != nil {
			return b.wrap(fmt.Sprintf("deregister instance %q", id), err)
		}
		var v instanceValue
		if err := json.Unmarshal(e.Value(), &v); err != nil {
			return anarchon.Permanent(fmt.Errorf("natsbackend: instance key %s holds an unreadable value: %w", key, err))
		}
		if v.Stopped {
			return nil
		}
		v.Stopped = true
		v.SeenNs = e.Created().UnixNano()
		v.ExpNs = e.Created().Add(time.Duration(v.TTLMs) * time.Millisecond).UnixNano()
		val, _ := json.Marshal(v)
		_, err = h.kv.Update(ctx, key, val, e.Revision())
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return b.wrap(fmt.Sprintf("deregister instance %q", id), err)
		}
	}
	return fmt.Errorf("%w: deregister instance %q", ErrContention, id)
}

// Instances implements [anarchon.InstanceRegistry]: it reads every
// instance key (one watch of "i.*" that ends after the current values)
// and the server's clock, and judges each record by that clock. Records
// expired more than anarchon.InstanceRetention ago are left out and
// deleted (unless written again meanwhile). Sorted by ID.
// anarchon.ErrClosed after Close.
func (b *Backend) Instances(ctx context.Context) ([]anarchon.InstanceRecord, error) {
	h, err := b.ready(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	w, err := h.kv.Watch(ctx, "i.*", jetstream.IgnoreDeletes())
	if err != nil {
		return nil, b.wrap("list instances", err)
	}
	defer func() { _ = w.Stop() }()
	var entries []jetstream.KeyValueEntry
	for done := false; !done; {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("natsbackend: list instances: the watch ended early")
			}
			if e == nil {
				done = true // the current values are all delivered
				break
			}
			entries = append(entries, e)
		case <-ctx.Done():
			return nil, ctxErr(ctx, "list instances")
		}
	}
	now, err := b.readClock(ctx, h)
	if err != nil {
		return nil, err
	}
	cut := now.Add(-anarchon.InstanceRetention)
	out := make([]anarchon.InstanceRecord, 0, len(entries))
	for _, e := range entries {
		var v instanceValue
		if err := json.Unmarshal(e.Value(), &v); err != nil {
			return nil, anarchon.Permanent(fmt.Errorf("natsbackend: instance key %s holds an unreadable value: %w", e.Key(), err))
		}
		rec, err := v.decode(e, now)
		if err != nil {
			return nil, err
		}
		if rec.ExpiresAt.Before(cut) {
			_ = h.kv.Delete(ctx, e.Key(), jetstream.LastRevision(e.Revision()))
			continue
		}
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b anarchon.InstanceRecord) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}
