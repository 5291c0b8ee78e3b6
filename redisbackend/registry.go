package redisbackend

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/anarchon/anarchon"
)

var _ anarchon.InstanceRegistry = (*Backend)(nil)

// The instance registry (SPEC §10) is two keys with the hash tag
// "{<prefix>:}", which no job's tag can equal (a job name is never
// empty), so both live on one cluster slot:
//
//   - "{<prefix>:}:inst", a hash from instance ID to its record, JSON
//     {info, ttl, seen, exp, st}: the anarchon.InstanceInfo as JSON text,
//     the TTL, the server-clock times of the last registration and of
//     expiry (Unix ms, as decimal strings), and "up" or "stopped";
//   - "{<prefix>:}:inst:exp", a sorted set of instance IDs by expiry, so
//     that records expired more than anarchon.InstanceRetention ago are
//     found and deleted without reading every record.
//
// Every change is one script that reads the server's TIME.

func (b *Backend) registryKeys() []string {
	tag := "{" + b.prefix + ":}"
	return []string{tag + ":inst", tag + ":inst:exp"}
}

// scriptRegister upserts a record, then deletes up to 100 records expired
// more than the retention ago.
// KEYS: inst, exp. ARGV: id, info, ttl ms, retention ms.
var scriptRegister = newScript(lua("registry_register"))

// scriptDeregister marks a record stopped and moves a future expiry to
// now. KEYS: inst, exp. ARGV: id. Returns 1, or 0 for an unknown id.
var scriptDeregister = newScript(lua("registry_deregister"))

// scriptInstances returns the server's now and every record, as one
// snapshot. KEYS: inst. Returns {now ms, {id, record, id, record, …}}.
var scriptInstances = newScript(lua("registry_instances"))

// wireInstance is a registry record as the scripts store it.
type wireInstance struct {
	Info  string `json:"info"`
	TTL   string `json:"ttl"`
	Seen  string `json:"seen"`
	Exp   string `json:"exp"`
	State string `json:"st"`
}

// RegisterInstance implements [anarchon.InstanceRegistry]: one script
// stores the record with LastSeen = the server's TIME and ExpiresAt =
// LastSeen + ttl (kept to the millisecond), clearing a stopped mark, and
// deletes records expired more than anarchon.InstanceRetention ago. It
// returns an error wrapping ErrInvalidInput for an empty ID or a ttl below
// a millisecond, and ErrClosed after Close.
func (b *Backend) RegisterInstance(ctx context.Context, info anarchon.InstanceInfo, ttl time.Duration) error {
	if err := b.check(); err != nil {
		return err
	}
	if info.ID == "" {
		return fmt.Errorf("%w: empty instance ID", ErrInvalidInput)
	}
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: instance %q: ttl %v is below a millisecond", ErrInvalidInput, info.ID, ttl)
	}
	data, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("redisbackend: register instance %q: %w", info.ID, err)
	}
	_, err = scriptRegister.Run(ctx, b.client, b.registryKeys(),
		info.ID, string(data), ttl.Milliseconds(), anarchon.InstanceRetention.Milliseconds()).Result()
	if err != nil {
		return b.wrap(fmt.Sprintf("register instance %q", info.ID), err)
	}
	return nil
}

// DeregisterInstance implements [anarchon.InstanceRegistry]: one script
// marks the record stopped and moves a future ExpiresAt to the server's
// now. An unknown id is not an error. ErrClosed after Close.
func (b *Backend) DeregisterInstance(ctx context.Context, id string) error {
	if err := b.check(); err != nil {
		return err
	}
	if _, err := scriptDeregister.Run(ctx, b.client, b.registryKeys(), id).Result(); err != nil {
		return b.wrap(fmt.Sprintf("deregister instance %q", id), err)
	}
	return nil
}

// Instances implements [anarchon.InstanceRegistry]: one script reads the
// server's TIME and every record; each is judged by that time. Records
// expired more than anarchon.InstanceRetention ago are left out. Sorted by
// ID. ErrClosed after Close.
func (b *Backend) Instances(ctx context.Context) ([]anarchon.InstanceRecord, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	res, err := scriptInstances.Run(ctx, b.client, b.registryKeys()[:1]).Result()
	if err != nil {
		return nil, b.wrap("list instances", err)
	}
	arr, ok := res.([]any)
	if !ok || len(arr) != 2 {
		return nil, b.unexpected("list instances", res)
	}
	nowS, _ := arr[0].(string)
	now, err := strconv.ParseInt(nowS, 10, 64)
	if err != nil {
		return nil, b.unexpected("list instances", arr[0])
	}
	kv, ok := arr[1].([]any)
	if !ok || len(kv)%2 != 0 {
		return nil, b.unexpected("list instances", arr[1])
	}
	cut := now - anarchon.InstanceRetention.Milliseconds()
	out := make([]anarchon.InstanceRecord, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		id, _ := kv[i].(string)
		raw, _ := kv[i+1].(string)
		rec, exp, err := decodeInstance(id, raw, now)
		if err != nil {
			return nil, err
		}
		if exp >= cut {
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b anarchon.InstanceRecord) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// decodeInstance decodes a stored record and judges it at the server time
// now (Unix ms). It also returns the expiry, Unix ms.
func decodeInstance(id, raw string, now int64) (anarchon.InstanceRecord, int64, error) {
	var rec anarchon.InstanceRecord
	bad := func(err error) (anarchon.InstanceRecord, int64, error) {
		return rec, 0, fmt.Errorf("%w: instance %q: %w", ErrUnexpectedReply, id, err)
	}
	var w wireInstance
	if err := json.Unmarshal([]byte(raw), &w); err != nil {
		return bad(err)
	}
	if err := json.Unmarshal([]byte(w.Info), &rec.InstanceInfo); err != nil {
		return bad(err)
	}
	var n [3]int64
	for i, s := range []string{w.TTL, w.Seen, w.Exp} {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return bad(err)
		}
		n[i] = v
	}
	rec.ID = id
	rec.TTL = time.Duration(n[0]) * time.Millisecond
	rec.LastSeen = time.UnixMilli(n[1]).UTC()
	rec.ExpiresAt = time.UnixMilli(n[2]).UTC()
	switch {
	case w.State == "stopped":
		rec.State = anarchon.InstanceStopped
	case n[2] > now:
		rec.State = anarchon.InstanceLive
	default:
		rec.State = anarchon.InstanceDead
	}
	return rec, n[2], nil
}
