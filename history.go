package anarchon

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// BuildHistory merges a job's claim records and stored results into run
// records, newest first, at most limit of them (limit <= 0: all).
//
// A claim and a result belong together when their tokens match. A claim
// with no result is a run still in progress (StatusRunning), unless its
// slot has a record of another token with the same or a higher attempt (a
// takeover, or the abandonment after the last one): then its holder lost
// the lease without storing a result, and the record says StatusLeaseLost,
// as backends that record takeovers themselves store it. Such a record,
// and a lease_lost result stored with no start and no error (a takeover's
// record of its holder), get an Error saying so and what became of the
// slot ("no result stored: the holder's lease ran out before the run
// ended, and attempt 2 on B took the slot over"), the same on every
// store (anarchontest "History/DeadHolderLeaseLost"). A result with no
// claim (a slot settled without running, or a claim the backend already
// trimmed) stands alone. Order is by slot, then attempt, then start time,
// then claim time, all descending. Backends that keep claims and results apart should build
// History with it, so that records gain new fields without backend changes
// (SPEC §4, §9).
func BuildHistory(job string, claims []ClaimRecord, results []StoredResult, limit int) []RunRecord {
	byToken := make(map[string]int, len(results))
	out := make([]RunRecord, 0, len(claims)+len(results))
	for _, r := range results {
		rec := RunRecord{
			Job:        job,
			Slot:       time.UnixMilli(r.Slot).UTC(),
			InstanceID: r.InstanceID,
			Token:      r.Token,
			Attempt:    max(r.Attempt, 1),
			Status:     r.Status,
			StartedAt:  r.StartedAt,
			FinishedAt: r.FinishedAt,
			Error:      r.Error,
			Output:     r.Output,
			Manual:     r.Manual,
		}
		if r.Token != "" {
			if i, dup := byToken[r.Token]; dup {
				out[i] = rec // a later save of the same run wins
				continue
			}
			byToken[r.Token] = len(out)
		}
		out = append(out, rec)
	}
	for _, c := range claims {
		if i, ok := byToken[c.Token]; ok && c.Token != "" {
			rec := &out[i]
			rec.ClaimedAt = c.ClaimedAt
			if rec.InstanceID == "" {
				rec.InstanceID = c.InstanceID
			}
			rec.Manual = rec.Manual || c.Manual
			continue
		}
		out = append(out, RunRecord{
			Job:        job,
			Slot:       time.UnixMilli(c.Slot).UTC(),
			InstanceID: c.InstanceID,
			Token:      c.Token,
			Attempt:    max(c.Attempt, 1),
			Status:     StatusRunning,
			ClaimedAt:  c.ClaimedAt,
			Manual:     c.Manual,
		})
	}
	markSuperseded(out)
	slices.SortStableFunc(out, func(a, b RunRecord) int {
		if c := b.Slot.Compare(a.Slot); c != 0 {
			return c
		}
		// A later attempt of a slot is the later run, whether or not it
		// started: a takeover's attempt 2, still running with no start
		// time stored, comes before the handed-over attempt 1.
		if c := cmp.Compare(b.Attempt, a.Attempt); c != 0 {
			return c
		}
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return b.ClaimedAt.Compare(a.ClaimedAt)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit:limit]
	}
	return out
}

// markSuperseded sets StatusLeaseLost on each record still running whose
// slot has a record of another token with the same or a higher attempt:
// a takeover (a higher attempt) or an abandonment (recorded with the last
// attempt) means its holder lost the lease. Such a record, and a
// lease_lost one stored without a start or an error, says so in its
// Error. Manual runs are left alone.
func markSuperseded(out []RunRecord) {
	bySlot := map[int64][]int{}
	for i, r := range out {
		if !r.Manual {
			bySlot[r.Slot.UnixMilli()] = append(bySlot[r.Slot.UnixMilli()], i)
		}
	}
	for _, idx := range bySlot {
		if len(idx) < 2 {
			continue
		}
		for _, i := range idx {
			r := &out[i]
			// A record a takeover wrote for its holder (SQL stores: a
			// lease_lost result with no start and no error) gets the
			// same words as a claim found superseded here, so that every
			// store tells the same story of one takeover.
			unsaid := r.Status == StatusLeaseLost && r.Error == "" && r.StartedAt.IsZero()
			if r.Status != StatusRunning && !unsaid {
				continue
			}
			for _, j := range idx {
				if o := out[j]; o.Token != r.Token && o.Attempt >= r.Attempt {
					r.Status = StatusLeaseLost
					if r.Error == "" {
						r.Error = supersededText(o)
					}
					break
				}
			}
		}
	}
}

// supersededText is the Error of a run markSuperseded finds lease_lost:
// its holder stored no result, and o, a later record of the slot, says
// what became of the slot.
func supersededText(o RunRecord) string {
	const lost = "no result stored: the holder's lease ran out before the run ended"
	if o.Status == StatusAbandoned {
		return lost + ", and the slot was abandoned (MaxAttempts reached)"
	}
	return fmt.Sprintf("%s, and attempt %d on %s took the slot over", lost, o.Attempt, o.InstanceID)
}
