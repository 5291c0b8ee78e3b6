package sqlbackend

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/anarchon/anarchon"
)

var _ anarchon.InstanceRegistry = (*SQLBackend)(nil)

// The instance registry (SPEC §10) is one table, <prefix>instances
// (sql/registry.sql): a row per instance ID with the instance's
// anarchon.InstanceInfo as JSON text (so that fields added later need no
// migration), the TTL, and the server-clock times of its last
// registration and expiry, Unix ms. stopped is 1 once the instance
// deregistered. Rows that expired more than anarchon.InstanceRetention
// ago are deleted by RegisterInstance and never listed.

// RegisterInstance implements [anarchon.InstanceRegistry]: one upsert of
// the instance's row with last_seen = the server's now and expires_at =
// now + ttl (ttl kept to the millisecond), which also clears a stopped
// mark; then rows expired more than anarchon.InstanceRetention ago are
// deleted. It fails on an empty ID or a ttl below a millisecond, and
// after Close.
func (b *SQLBackend) RegisterInstance(ctx context.Context, info anarchon.InstanceInfo, ttl time.Duration) error {
	const op = "register instance"
	if err := b.ready(ctx, op); err != nil {
		return err
	}
	if info.ID == "" {
		return b.errorf(op, invalid("empty instance ID"))
	}
	if ttl < time.Millisecond {
		return b.errorf(op, invalid("instance %q: ttl %v is below a millisecond", info.ID, ttl))
	}
	data, err := json.Marshal(info)
	if err != nil {
		return b.errorf(op, err)
	}
	ms := ttl.Milliseconds()
	if _, err := b.all(ctx, b.cfg.Conn, b.q.registerInstance, info.ID, string(data), ms, ms); err != nil {
		return b.errorf(op, err)
	}
	if _, err := b.all(ctx, b.cfg.Conn, b.q.pruneInstances, anarchon.InstanceRetention.Milliseconds()); err != nil {
		return b.errorf(op, err)
	}
	return nil
}

// DeregisterInstance implements [anarchon.InstanceRegistry]: it marks the
// row stopped and moves a future expires_at to the server's now. An
// unknown id changes nothing and is not an error. It fails after Close.
func (b *SQLBackend) DeregisterInstance(ctx context.Context, id string) error {
	const op = "deregister instance"
	if err := b.ready(ctx, op); err != nil {
		return err
	}
	if _, err := b.all(ctx, b.cfg.Conn, b.q.deregisterInstance, id); err != nil {
		return b.errorf(op, err)
	}
	return nil
}

// Instances implements [anarchon.InstanceRegistry]: one SELECT that also
// reads the server's clock, by which each row is judged live (expires_at
// after now), dead or stopped. Rows expired more than
// anarchon.InstanceRetention ago are left out. Sorted by ID. It fails
// after Close.
func (b *SQLBackend) Instances(ctx context.Context) ([]anarchon.InstanceRecord, error) {
	const op = "list instances"
	if err := b.ready(ctx, op); err != nil {
		return nil, err
	}
	rows, err := b.all(ctx, b.cfg.Conn, b.q.listInstances, anarchon.InstanceRetention.Milliseconds())
	if err != nil {
		return nil, b.errorf(op, err)
	}
	out := make([]anarchon.InstanceRecord, 0, len(rows))
	for _, row := range rows {
		rec, err := instanceRow(row)
		if err != nil {
			return nil, b.errorf(op, err)
		}
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b anarchon.InstanceRecord) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// instanceRow decodes a row of the list query.
func instanceRow(row []any) (anarchon.InstanceRecord, error) {
	var rec anarchon.InstanceRecord
	if len(row) != 7 {
		return rec, fmt.Errorf("instances row has %d columns, want 7", len(row))
	}
	rd := reader(row)
	id, info := rd.string(), rd.string()
	ttl, seen, exp, stopped, now := rd.int64(), rd.int64(), rd.int64(), rd.int64(), rd.int64()
	if err := rd.Err(); err != nil {
		return rec, err
	}
	if err := json.Unmarshal([]byte(info), &rec.InstanceInfo); err != nil {
		return rec, anarchon.Permanent(fmt.Errorf("instance %q: stored info: %w", id, err))
	}
	rec.ID = id
	rec.TTL = time.Duration(ttl) * time.Millisecond
	rec.LastSeen = time.UnixMilli(seen).UTC()
	rec.ExpiresAt = time.UnixMilli(exp).UTC()
	switch {
	case stopped != 0:
		rec.State = anarchon.InstanceStopped
	case exp > now:
		rec.State = anarchon.InstanceLive
	default:
		rec.State = anarchon.InstanceDead
	}
	return rec, nil
}
