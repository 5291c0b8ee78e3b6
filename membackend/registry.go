package membackend

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/anarchon/anarchon"
)

var _ anarchon.InstanceRegistry = (*Backend)(nil)

// The registry's methods call Options.Fault with the operation names
// "RegisterInstance", "DeregisterInstance" and "Instances".

// instance is one record of the instance registry.
type instance struct {
	info      anarchon.InstanceInfo
	ttl       time.Duration
	lastSeen  time.Time
	expiresAt time.Time
	stopped   bool
}

var errEmptyInstance = anarchon.Permanent(errors.New("membackend: empty instance ID"))

// RegisterInstance implements [anarchon.InstanceRegistry]: it stores info
// under info.ID with LastSeen = Options.Now() and ExpiresAt = LastSeen+ttl,
// replacing any earlier record, stopped or dead. It fails on an empty ID
// or a ttl below a millisecond, and after Close.
func (b *Backend) RegisterInstance(ctx context.Context, info anarchon.InstanceInfo, ttl time.Duration) error {
	if err := b.op(ctx, "RegisterInstance"); err != nil {
		return err
	}
	defer b.mu.Unlock()
	if info.ID == "" {
		return errEmptyInstance
	}
	if ttl < time.Millisecond {
		return permanentf("membackend: RegisterInstance %q: ttl %v is below a millisecond", info.ID, ttl)
	}
	if b.insts == nil {
		b.insts = make(map[string]*instance)
	}
	now := b.now()
	info.Jobs = slices.Clone(info.Jobs)
	b.insts[info.ID] = &instance{info: info, ttl: ttl, lastSeen: now, expiresAt: now.Add(ttl)}
	return nil
}

// DeregisterInstance implements [anarchon.InstanceRegistry]: it marks the
// record of id stopped and, if it has not expired yet, moves its
// ExpiresAt to now. An unknown id is not an error. It fails after Close.
func (b *Backend) DeregisterInstance(ctx context.Context, id string) error {
	if err := b.op(ctx, "DeregisterInstance"); err != nil {
		return err
	}
	defer b.mu.Unlock()
	in := b.insts[id]
	if in == nil {
		return nil
	}
	now := b.now()
	in.stopped = true
	if in.expiresAt.After(now) {
		in.expiresAt = now
	}
	return nil
}

// Instances implements [anarchon.InstanceRegistry]: every record, sorted
// by ID, judged by Options.Now(). Records that expired more than
// anarchon.InstanceRetention ago are dropped. It fails after Close.
func (b *Backend) Instances(ctx context.Context) ([]anarchon.InstanceRecord, error) {
	if err := b.op(ctx, "Instances"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	now := b.now()
	out := make([]anarchon.InstanceRecord, 0, len(b.insts))
	for id, in := range b.insts {
		if now.Sub(in.expiresAt) > anarchon.InstanceRetention {
			delete(b.insts, id)
			continue
		}
		rec := anarchon.InstanceRecord{
			InstanceInfo: in.info,
			TTL:          in.ttl,
			LastSeen:     in.lastSeen,
			ExpiresAt:    in.expiresAt,
			State:        anarchon.InstanceLive,
		}
		rec.Jobs = slices.Clone(in.info.Jobs)
		switch {
		case in.stopped:
			rec.State = anarchon.InstanceStopped
		case !in.expiresAt.After(now):
			rec.State = anarchon.InstanceDead
		}
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b anarchon.InstanceRecord) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}
