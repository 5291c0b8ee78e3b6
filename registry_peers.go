package anarchon

import (
	"context"
	"log/slog"
	"slices"
	"strings"
)

// maxPeersNamed bounds the IDs the first listing's log line names, so
// that a large cluster's line stays readable; the count is always given.
const maxPeersNamed = 10

// notePeers logs how the other live instances changed since the last
// listing (SPEC §10, "Peers in the log"): an operator watching one
// instance sees another join, stop or die when the registry shows it,
// not only when a run is taken over a lease later. The first listing
// logs the live ones once. Only the registry loop calls it.
func (s *Scheduler) notePeers(ctx context.Context, r *registration, recs []InstanceRecord) {
	prev := r.peers
	now := make(map[string]InstanceRecord)
	for _, rec := range recs {
		if rec.Live() && rec.ID != s.opts.InstanceID {
			if old, ok := prev[rec.ID]; ok && rec.StartedAt.Before(old.StartedAt) {
				// An older start than one seen: two processes write under
				// this ID in turns (they warn of it themselves). The
				// newest start is kept, so that their turns are not
				// logged as restarts at every listing.
				rec = old
			}
			now[rec.ID] = rec
		}
	}
	r.peers = now
	if prev == nil {
		ids := make([]string, 0, len(now))
		for id := range now {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if len(ids) == 0 {
			s.log.LogAttrs(ctx, slog.LevelInfo, "no other live instance in the registry")
			return
		}
		named := ids[:min(len(ids), maxPeersNamed)]
		s.log.LogAttrs(ctx, slog.LevelInfo, "other live instances in the registry",
			slog.Int("count", len(ids)), slog.String("peers", strings.Join(named, ",")))
		return
	}
	listed := make(map[string]bool, len(recs))
	for _, rec := range recs {
		listed[rec.ID] = true // sorted by ID (SPEC §10), so the lines are too
		old, was := prev[rec.ID]
		_, is := now[rec.ID]
		switch {
		case is && !was:
			s.log.LogAttrs(ctx, slog.LevelInfo, "instance joined",
				slog.String("peer", rec.ID), slog.String("host", rec.Host), slog.Int("pid", rec.PID),
				slog.Time("started_at", rec.StartedAt))
		case is && now[rec.ID].StartedAt.After(old.StartedAt):
			// Started again before its record showed dead (killed, or
			// stopped and started within a renewal): the runs of the old
			// process are gone.
			s.log.LogAttrs(ctx, slog.LevelInfo, "instance started again",
				slog.String("peer", rec.ID), slog.String("host", rec.Host), slog.Int("pid", rec.PID),
				slog.Time("started_at", rec.StartedAt), slog.Time("previous_started_at", old.StartedAt))
		case was && rec.State == InstanceStopped:
			s.log.LogAttrs(ctx, slog.LevelInfo, "instance stopped",
				slog.String("peer", rec.ID), slog.String("host", rec.Host), slog.Time("at", rec.ExpiresAt))
		case was && !is:
			s.log.LogAttrs(ctx, slog.LevelWarn, "instance stopped renewing its registry record (killed, hung or cut off from the store); backups take over its leased runs when their leases end",
				slog.String("peer", rec.ID), slog.String("host", rec.Host),
				slog.Time("last_seen", rec.LastSeen), slog.Time("expired_at", rec.ExpiresAt))
		}
	}
	var gone []string
	for id := range prev {
		if !listed[id] {
			gone = append(gone, id)
		}
	}
	slices.Sort(gone)
	for _, id := range gone {
		// Live one listing ago and not listed now: its record was
		// removed by hand, or the store was emptied (a dead one is kept
		// InstanceRetention).
		s.log.LogAttrs(ctx, slog.LevelInfo, "instance left the registry", slog.String("peer", id))
	}
}
