package membackend

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/anarchon/anarchon"
)

// entry is one run in the retained history: its claim record, its stored
// result, or both, joined by token.
type entry struct {
	claim   *anarchon.ClaimRecord
	result  *anarchon.StoredResult
	written time.Time // store clock at the last write; judges HistoryTTL
}

// history is a job's retained history. Entries with a token are unique per
// token; a result without a token stands alone. The entries are kept
// oldest first, in the reverse of the order BuildHistory gives records
// (newestFirst), so that trim drops the oldest from the front instead of
// sorting the history at every claim and result: an entry is put in place
// when it is added or changed, almost always at the end, since runs are
// recorded in slot order.
type history struct {
	entries []*entry
	byToken map[string]*entry
}

func (h *history) has(token string) bool {
	_, ok := h.byToken[token]
	return ok
}

// get returns token's entry and its index, or a new entry, not in entries
// yet, and -1; the caller fills it and calls place.
func (h *history) get(token string) (*entry, int) {
	if token != "" {
		if e := h.byToken[token]; e != nil {
			// From the end: the entry changed is most often a recent run's.
			for i := len(h.entries) - 1; i >= 0; i-- {
				if h.entries[i] == e {
					return e, i
				}
			}
		}
	}
	e := &entry{}
	if token != "" {
		if h.byToken == nil {
			h.byToken = make(map[string]*entry)
		}
		h.byToken[token] = e
	}
	return e, -1
}

// oldestFirst is the order of entries: newestFirst reversed.
func oldestFirst(a, b *entry) int { return newestFirst(b, a) }

// place puts e, at index i of entries (-1: not there yet), where its sort
// key puts it now. An entry equal in key to others goes before them, so
// that trim drops it first, as a stable sort newest first kept the earlier
// one.
func (h *history) place(e *entry, i int) {
	n := len(h.entries)
	if i >= 0 {
		if (i == 0 || oldestFirst(h.entries[i-1], e) <= 0) && (i == n-1 || oldestFirst(e, h.entries[i+1]) <= 0) {
			return
		}
		h.entries = slices.Delete(h.entries, i, i+1)
		n--
	}
	if n == 0 || oldestFirst(h.entries[n-1], e) < 0 {
		h.entries = append(h.entries, e)
		return
	}
	at, _ := slices.BinarySearchFunc(h.entries, e, oldestFirst)
	h.entries = slices.Insert(h.entries, at, e)
}

// addClaim records a claim. A second claim record for the same token keeps
// the first one's time but takes a higher attempt.
func (h *history) addClaim(c anarchon.ClaimRecord, now time.Time) {
	e, i := h.get(c.Token)
	if e.claim == nil {
		e.claim = &c
	} else {
		e.claim.Attempt = max(e.claim.Attempt, c.Attempt)
		e.claim.Manual = e.claim.Manual || c.Manual
	}
	e.written = now
	h.place(e, i)
}

// addResult stores a result; a later result of the same token replaces an
// earlier one (as in BuildHistory).
func (h *history) addResult(r anarchon.StoredResult, now time.Time) {
	e, i := h.get(r.Token)
	e.result = &r
	e.written = now
	h.place(e, i)
}

// addResultIfNone stores r only if the token has no result yet, so a
// result the scheduler saved is never overwritten by the store's own
// bookkeeping.
func (h *history) addResultIfNone(r anarchon.StoredResult, now time.Time) {
	if e := h.byToken[r.Token]; e != nil && e.result != nil {
		return
	}
	h.addResult(r, now)
}

func (h *history) split() ([]anarchon.ClaimRecord, []anarchon.StoredResult) {
	var claims []anarchon.ClaimRecord
	var results []anarchon.StoredResult
	for _, e := range h.entries {
		if e.claim != nil {
			claims = append(claims, *e.claim)
		}
		if e.result != nil {
			results = append(results, *e.result)
		}
	}
	return claims, results
}

// sortKey returns what BuildHistory orders records by.
func (e *entry) sortKey() (slot int64, started, claimed time.Time, attempt int) {
	if e.result != nil {
		slot, started, attempt = e.result.Slot, e.result.StartedAt, e.result.Attempt
	}
	if e.claim != nil {
		if e.result == nil {
			slot, attempt = e.claim.Slot, e.claim.Attempt
		}
		claimed = e.claim.ClaimedAt
	}
	return slot, started, claimed, max(attempt, 1)
}

// newestFirst orders entries as BuildHistory orders records.
func newestFirst(a, b *entry) int {
	as, ast, ac, aa := a.sortKey()
	bs, bst, bc, ba := b.sortKey()
	if c := cmp.Compare(bs, as); c != 0 {
		return c
	}
	if c := cmp.Compare(ba, aa); c != 0 {
		return c
	}
	if c := bst.Compare(ast); c != 0 {
		return c
	}
	return bc.Compare(ac)
}

// trim drops entries written more than ttl ago (ttl > 0), then all but the
// size newest (size > 0), which are the last size entries.
func (h *history) trim(size int, ttl time.Duration, now time.Time) {
	if ttl > 0 {
		keep := h.entries[:0]
		for _, e := range h.entries {
			if now.Sub(e.written) > ttl {
				h.drop(e)
				continue
			}
			keep = append(keep, e)
		}
		clear(h.entries[len(keep):])
		h.entries = keep
	}
	if size <= 0 || len(h.entries) <= size {
		return
	}
	old := len(h.entries) - size
	for _, e := range h.entries[:old] {
		h.drop(e)
	}
	// Cleared, so that the array behind the slice, which append reuses
	// until it is full, holds no dropped entry.
	clear(h.entries[:old])
	h.entries = h.entries[old:]
}

func (h *history) drop(e *entry) {
	if tok := tokenOf(e); tok != "" && h.byToken[tok] == e {
		delete(h.byToken, tok)
	}
}

func tokenOf(e *entry) string {
	if e.claim != nil {
		return e.claim.Token
	}
	if e.result != nil {
		return e.result.Token
	}
	return ""
}

// SaveResult stores how a run ended, merged with its claim record by token
// (a second save of the same token replaces the first), then trims the
// job's history to the historySize newest records (historySize <= 0:
// anarchon.DefaultHistorySize) and, if historyTTL > 0, drops records the
// store last wrote more than historyTTL ago (by Options.Now). Trimming
// history never reopens a slot: claims are kept apart (see the package
// doc). It fails on an empty job name or a negative historyTTL, and after
// Close.
func (b *Backend) SaveResult(ctx context.Context, in anarchon.SaveResultInput) error {
	if err := b.op(ctx, "SaveResult"); err != nil {
		return err
	}
	defer b.mu.Unlock()
	return b.saveResult(in)
}

// saveResult stores one result. Caller holds b.mu.
func (b *Backend) saveResult(in anarchon.SaveResultInput) error {
	job, r, historySize, historyTTL := in.Job, in.Result, in.HistorySize, in.HistoryTTL
	if job == "" {
		return permanentf("%w (SaveResult)", errEmptyJob)
	}
	if historyTTL < 0 {
		return permanentf("membackend: SaveResult: job %q: negative history TTL %v", job, historyTTL)
	}
	if historySize <= 0 {
		historySize = anarchon.DefaultHistorySize
	}
	now := b.now()
	j := b.job(job)
	j.setLimits(historySize, historyTTL)
	j.hist.addResult(r, now)
	j.hist.trim(historySize, historyTTL, now)
	return nil
}

// History returns at most limit records of job, newest first, built with
// [anarchon.BuildHistory]; limit <= 0 returns the whole retained history.
// An unknown job has an empty history. It fails after Close.
func (b *Backend) History(ctx context.Context, job string, limit int) ([]anarchon.RunRecord, error) {
	if err := b.op(ctx, "History"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	j := b.jobs[job]
	if j == nil {
		return []anarchon.RunRecord{}, nil
	}
	claims, results := j.hist.split()
	return anarchon.BuildHistory(job, claims, results, limit), nil
}
