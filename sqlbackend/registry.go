package sqlbackend

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
)

var _ anarchon.InstanceRegistry = (*SQLBackend)(nil)

// The instance registry (SPEC §10) is one table, <prefix>instances: a row
// per instance ID with the instance's anarchon.InstanceInfo as JSON text
// (so that fields added later need no migration), the TTL, and the
// server-clock times of its last registration and expiry, Unix ms.
// stopped is 1 once the instance deregistered. Rows that expired more
// than anarchon.InstanceRetention ago are deleted by RegisterInstance and
// never listed.
type registryQueries struct {
	ddl, register, prune, deregister, list string
}

func (b *SQLBackend) registryQueries() registryQueries {
	r := strings.NewReplacer("{instances}", b.Qualify("instances"), "{big}", b.d.BigInt, "{now}", b.d.NowMs)
	rewrite := placeholders(b.d)
	q := func(s string) string { return rewrite(r.Replace(s)) }
	return registryQueries{
		ddl: q(`CREATE TABLE IF NOT EXISTS {instances} (
	id TEXT NOT NULL PRIMARY KEY,
	info TEXT NOT NULL,
	ttl_ms {big} NOT NULL,
	last_seen {big} NOT NULL,
	expires_at {big} NOT NULL,
	stopped {big} NOT NULL
)`),
		// The server's clock is read once, so that expires_at is
		// exactly last_seen + ttl. WHERE true lets SQLite parse ON
		// CONFLICT after a SELECT.
		register: q(`INSERT INTO {instances} (id, info, ttl_ms, last_seen, expires_at, stopped)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS {big}), t.n, t.n + CAST(? AS {big}), 0
FROM (SELECT {now} AS n) AS t WHERE true
ON CONFLICT (id) DO UPDATE SET info = excluded.info, ttl_ms = excluded.ttl_ms,
	last_seen = excluded.last_seen, expires_at = excluded.expires_at, stopped = 0`),
		prune: q(`DELETE FROM {instances} WHERE expires_at < {now} - CAST(? AS {big})`),
		deregister: q(`UPDATE {instances} SET stopped = 1,
	expires_at = CASE WHEN expires_at > {now} THEN {now} ELSE expires_at END
WHERE id = ?`),
		list: q(`SELECT i.id, i.info, i.ttl_ms, i.last_seen, i.expires_at, i.stopped, t.n
FROM {instances} AS i CROSS JOIN (SELECT {now} AS n) AS t
WHERE i.expires_at >= t.n - CAST(? AS {big})`),
	}
}

// registryDDL is the registry's table, created by Init's migration.
func (b *SQLBackend) registryDDL() []string { return []string{b.registryQueries().ddl} }

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
		return b.errorf(op, errors.New("empty instance ID"))
	}
	if ttl < time.Millisecond {
		return b.errorf(op, fmt.Errorf("instance %q: ttl %v is below a millisecond", info.ID, ttl))
	}
	data, err := json.Marshal(info)
	if err != nil {
		return b.errorf(op, err)
	}
	q := b.registryQueries()
	ms := ttl.Milliseconds()
	if _, err := b.all(ctx, b.cfg.Conn, q.register, info.ID, string(data), ms, ms); err != nil {
		return b.errorf(op, err)
	}
	if _, err := b.all(ctx, b.cfg.Conn, q.prune, anarchon.InstanceRetention.Milliseconds()); err != nil {
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
	if _, err := b.all(ctx, b.cfg.Conn, b.registryQueries().deregister, id); err != nil {
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
	rows, err := b.all(ctx, b.cfg.Conn, b.registryQueries().list, anarchon.InstanceRetention.Milliseconds())
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
	id, err := asString(row[0])
	if err != nil {
		return rec, err
	}
	info, err := asString(row[1])
	if err != nil {
		return rec, err
	}
	var n [5]int64
	for i := range n {
		if n[i], err = asInt64(row[2+i]); err != nil {
			return rec, err
		}
	}
	ttl, seen, exp, stopped, now := n[0], n[1], n[2], n[3], n[4]
	if err := json.Unmarshal([]byte(info), &rec.InstanceInfo); err != nil {
		return rec, fmt.Errorf("instance %q: stored info: %w", id, err)
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
