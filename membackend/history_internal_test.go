package membackend

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// refHistory is the history as it was kept before entries were kept in
// order: appended as they come, sorted (stably, newest first) and cut at
// every trim. TestHistoryKeepsWhatSortingKept checks history against it.
type refHistory struct {
	entries []*entry
	byToken map[string]*entry
}

func (h *refHistory) get(token string) *entry {
	if e := h.byToken[token]; token != "" && e != nil {
		return e
	}
	e := &entry{}
	h.entries = append(h.entries, e)
	if token != "" {
		h.byToken[token] = e
	}
	return e
}

func (h *refHistory) trim(size int, ttl time.Duration, now time.Time) {
	keep := h.entries[:0]
	for _, e := range h.entries {
		if ttl > 0 && now.Sub(e.written) > ttl {
			delete(h.byToken, tokenOf(e))
			continue
		}
		keep = append(keep, e)
	}
	h.entries = keep
	if len(h.entries) <= size {
		return
	}
	slices.SortStableFunc(h.entries, newestFirst)
	for _, e := range h.entries[size:] {
		if h.byToken[tokenOf(e)] == e {
			delete(h.byToken, tokenOf(e))
		}
	}
	h.entries = h.entries[:size]
}

// describe lists entries newest first as BuildHistory orders them.
func describe(entries []*entry) []string {
	sorted := slices.Clone(entries)
	slices.SortStableFunc(sorted, newestFirst)
	out := make([]string, len(sorted))
	for i, e := range sorted {
		var c, r string
		if e.claim != nil {
			c = fmt.Sprintf("claim(%s slot %d at %d att %d)", e.claim.Token, e.claim.Slot, e.claim.ClaimedAt.UnixMilli(), e.claim.Attempt)
		}
		if e.result != nil {
			r = fmt.Sprintf("result(%s slot %d started %d att %d)", e.result.Token, e.result.Slot, e.result.StartedAt.UnixMilli(), e.result.Attempt)
		}
		out[i] = c + r
	}
	return out
}

// TestHistoryKeepsWhatSortingKept runs random claims and results, in and
// out of slot order, with trims by size and by age, through history and
// through refHistory, and checks after each step that both keep the same
// records, and that history's entries stay oldest first.
func TestHistoryKeepsWhatSortingKept(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		size := 1 + rng.IntN(12)
		var ttl time.Duration
		if seed%3 == 0 {
			ttl = time.Duration(20+rng.IntN(40)) * time.Millisecond
		}
		h := &history{}
		ref := &refHistory{byToken: map[string]*entry{}}
		base := time.Unix(1_800_000_000, 0)
		now := base
		for step := range 300 {
			// A nanosecond more each step: no two records are equal in
			// key, so that which of two equal ones a trim drops (either)
			// does not fail the comparison.
			now = now.Add(time.Duration(rng.IntN(3))*time.Millisecond + time.Nanosecond)
			// Slots mostly rise with time; some records come late, and
			// some tokens are met again (a result, a takeover's claim).
			slot := now.Add(-time.Duration(rng.IntN(30)) * time.Millisecond).UnixMilli()
			tok := fmt.Sprintf("t%d", rng.IntN(step+1))
			if rng.IntN(6) == 0 {
				tok = "" // a result without a token stands alone
			}
			att := 1 + rng.IntN(3)
			switch rng.IntN(3) {
			case 0:
				if tok == "" {
					continue
				}
				c := anarchon.ClaimRecord{Slot: slot, Token: tok, InstanceID: "i", ClaimedAt: now, Attempt: att}
				h.addClaim(c, now)
				re := ref.get(tok)
				if re.claim == nil {
					cc := c
					re.claim = &cc
				} else {
					re.claim.Attempt = max(re.claim.Attempt, c.Attempt)
				}
				re.written = now
			default:
				if e := ref.byToken[tok]; tok != "" && e != nil && e.claim != nil {
					slot = e.claim.Slot // a run's result is for its claim's slot
				}
				r := anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: "i", StartedAt: now.Add(-time.Duration(rng.IntN(5)) * time.Millisecond), Attempt: att}
				h.addResult(r, now)
				re := ref.get(tok)
				rr := r
				re.result = &rr
				re.written = now
			}
			h.trim(size, ttl, now)
			ref.trim(size, ttl, now)
			// As sets: the order of records equal in key is BuildHistory's
			// to settle, not the store's.
			got, want := describe(h.entries), describe(ref.entries)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d step %d (size %d, ttl %v): kept\n%q\nwant\n%q", seed, step, size, ttl, got, want)
			}
			if !slices.IsSortedFunc(h.entries, oldestFirst) {
				t.Fatalf("seed %d step %d: entries out of order: %q", seed, step, describe(h.entries))
			}
			for tok, e := range h.byToken {
				if !slices.Contains(h.entries, e) {
					t.Fatalf("seed %d step %d: token %s maps to an entry that was dropped", seed, step, tok)
				}
			}
		}
	}
}
