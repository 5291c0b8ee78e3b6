package anarchontest

import (
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// run claims slot on handle i with a fresh token and saves a result for
// it, as the scheduler does; it returns the token.
func (s *store) run(i int, job string, slot int64, inst string, status anarchon.Status, size int, ttl time.Duration) string {
	s.t.Helper()
	tok := token()
	in := input(job, slot, tok, inst)
	in.HistorySize, in.HistoryTTL = size, ttl
	if !s.claim(i, in) {
		s.t.Fatalf("claim of a fresh slot %d lost", slot)
	}
	start := ms(time.Now())
	s.save(i, job, anarchon.StoredResult{
		Slot: slot, Token: tok, InstanceID: inst, Attempt: 1, Status: status,
		StartedAt: start, FinishedAt: start.Add(time.Millisecond),
	}, size, ttl)
	return tok
}

// checkOrder fails unless recs are newest first by slot.
func checkOrder(t *testing.T, recs []anarchon.RunRecord) {
	t.Helper()
	for i := 1; i < len(recs); i++ {
		if recs[i].Slot.After(recs[i-1].Slot) {
			t.Errorf("History not newest first: record %d has slot %v after record %d's %v", i, recs[i].Slot, i-1, recs[i-1].Slot)
		}
	}
}

// checkTokensUnique fails if a token appears in two records: a claim and
// its result must come back as one record.
func checkTokensUnique(t *testing.T, recs []anarchon.RunRecord) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range recs {
		if r.Token == "" {
			continue
		}
		if seen[r.Token] {
			t.Errorf("History: token %s appears in more than one record (status %q)", r.Token, r.Status)
		}
		seen[r.Token] = true
	}
}

func slotsOf(recs []anarchon.RunRecord) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.Slot.UnixMilli()
	}
	return out
}

func testHistory(t *testing.T, h Harness) {
	t.Run("Record", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		job := jobName("hist-record")
		s.prepare(job, 10)
		slot := baseSlot()
		tok := token()
		if !s.claim(0, input(job, slot, tok, "inst-a")) {
			t.Fatal("claim lost")
		}
		// The claim alone is a run in progress, visible from any handle.
		recs := s.history(1, job, 0)
		if len(recs) != 1 {
			t.Fatalf("History after a claim: %d records, want 1", len(recs))
		}
		r := recs[0]
		if r.Job != job || r.Slot.UnixMilli() != slot || r.Token != tok || r.InstanceID != "inst-a" ||
			r.Status != anarchon.StatusRunning || r.Attempt != 1 || r.Manual {
			t.Errorf("History after a claim: %+v; want job %q slot %d token %s instance inst-a, running, attempt 1, not manual", r, job, slot, tok)
		}
		if r.Slot.Location() != time.UTC {
			t.Errorf("History: Slot in %v, want UTC", r.Slot.Location())
		}
		start := ms(time.Now().Add(-2 * time.Second))
		end := start.Add(1500 * time.Millisecond)
		res := anarchon.StoredResult{
			Slot: slot, Token: tok, InstanceID: "inst-a", Attempt: 1, Status: anarchon.StatusError,
			StartedAt: start, FinishedAt: end, Error: `boom: "quoted" ✓`, Output: "line 1\nline 2",
		}
		s.save(0, job, res, 10, 0)
		recs = s.history(1, job, 0)
		if len(recs) != 1 {
			t.Fatalf("History after claim and result: %d records, want 1 (matched by token)", len(recs))
		}
		r = recs[0]
		if r.Job != job || r.Slot.UnixMilli() != slot || r.Token != tok || r.InstanceID != "inst-a" || r.Attempt != 1 || r.Manual {
			t.Errorf("History: %+v; want job %q slot %d token %s instance inst-a attempt 1", r, job, slot, tok)
		}
		if r.Status != anarchon.StatusError || r.Error != res.Error || r.Output != res.Output {
			t.Errorf("History: status %q error %q output %q; want %q %q %q", r.Status, r.Error, r.Output, res.Status, res.Error, res.Output)
		}
		if !sameMs(r.StartedAt, start) || !sameMs(r.FinishedAt, end) {
			t.Errorf("History: started %v finished %v; want %v %v", r.StartedAt, r.FinishedAt, start, end)
		}
	})
	t.Run("Order", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		job := jobName("hist-order")
		s.prepare(job, 20)
		slot := baseSlot()
		for i, k := range []int64{3, 0, 4, 1, 2} {
			s.run(i, job, slot+k*60000, "inst", anarchon.StatusSuccess, 20, 0)
		}
		recs := s.history(1, job, 0)
		if len(recs) != 5 {
			t.Fatalf("History: %d records, want 5", len(recs))
		}
		checkOrder(t, recs)
		checkTokensUnique(t, recs)
	})
	t.Run("Limit", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		job := jobName("hist-limit")
		s.prepare(job, 100)
		slot := baseSlot()
		for k := range int64(10) {
			s.run(int(k), job, slot+k*1000, "inst", anarchon.StatusSuccess, 100, 0)
		}
		for _, c := range []struct{ limit, want int }{{3, 3}, {1, 1}, {10, 10}, {11, 10}, {100, 10}, {0, 10}, {-1, 10}} {
			recs := s.history(0, job, c.limit)
			if len(recs) != c.want {
				t.Errorf("History(limit %d): %d records, want %d", c.limit, len(recs), c.want)
				continue
			}
			checkOrder(t, recs)
			if len(recs) > 0 && recs[0].Slot.UnixMilli() != slot+9000 {
				t.Errorf("History(limit %d): first record is slot %d, want the newest, %d", c.limit, recs[0].Slot.UnixMilli(), slot+9000)
			}
		}
	})
	t.Run("LimitUnstarted", func(t *testing.T) {
		// Records without a start time (manual runs not yet ended) share
		// the newest slot with a finished one: every limit still gives
		// the first records of the whole history, the finished run with
		// its start time and duration.
		t.Parallel()
		s := open(t, h, 2)
		job := jobName("hist-limit-unstarted")
		s.prepare(job, 100)
		slot := baseSlot()
		s.run(0, job, slot, "inst", anarchon.StatusSuccess, 100, 0)
		newest := slot + 60000
		var last string
		var lastSlot int64
		for i := range 3 {
			last = token()
			got, err := s.b(i).RecordManualRun(s.ctx, input(job, newest, last, "inst"))
			if err != nil {
				t.Fatalf("RecordManualRun #%d: %v", i+1, err)
			}
			lastSlot = got
		}
		start := ms(time.Now().Add(-2 * time.Second))
		s.save(1, job, anarchon.StoredResult{Slot: lastSlot, Token: last, InstanceID: "inst", Attempt: 1, Status: anarchon.StatusSuccess,
			StartedAt: start, FinishedAt: start.Add(1500 * time.Millisecond), Manual: true}, 100, 0)
		recs := s.history(0, job, 0)
		if len(recs) != 4 {
			t.Fatalf("History: %d records, want 4: %+v", len(recs), recs)
		}
		if recs[0].Token != last || !sameMs(recs[0].StartedAt, start) {
			t.Fatalf("History: the newest record is %+v, want the finished manual run %s started at %v", recs[0], last, start)
		}
		s.checkLimits(job)
	})
	t.Run("SizeTrim", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		job := jobName("hist-size")
		s.prepare(job, 4)
		slot := baseSlot()
		for k := range int64(10) {
			s.run(int(k), job, slot+k*1000, "inst", anarchon.StatusSuccess, 4, 0)
		}
		recs := s.history(1, job, 0)
		if len(recs) != 4 {
			t.Fatalf("History with HistorySize 4 after 10 runs: %d records, want 4", len(recs))
		}
		for i, got := range slotsOf(recs) {
			if want := slot + int64(9-i)*1000; got != want {
				t.Errorf("record %d: slot %d, want %d (the 4 newest)", i, got, want)
			}
		}
	})
	t.Run("TTLTrim", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		job := jobName("hist-ttl")
		s.prepare(job, 100)
		ttl := max(4*h.Lease, time.Second)
		if h.FakeClock {
			ttl = 10 * time.Second
		}
		slot := baseSlot()
		old1 := s.run(0, job, slot, "inst", anarchon.StatusSuccess, 100, ttl)
		old2 := s.run(1, job, slot+1000, "inst", anarchon.StatusSuccess, 100, ttl)
		h.Sleep(ttl + ttl/2)
		fresh := s.run(0, job, slot+2000, "inst", anarchon.StatusSuccess, 100, ttl)
		recs := s.history(1, job, 0)
		seen := map[string]bool{}
		for _, r := range recs {
			seen[r.Token] = true
		}
		if seen[old1] || seen[old2] {
			t.Errorf("History keeps records older than HistoryTTL %v: %d records", ttl, len(recs))
		}
		if !seen[fresh] {
			t.Errorf("History lost the record saved just now (HistoryTTL %v)", ttl)
		}
	})
	t.Run("TrimNeverReopens", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		job := jobName("hist-reopen")
		s.prepare(job, 1)
		slot := baseSlot()
		for k := range int64(10) {
			s.run(int(k), job, slot+k*1000, "inst", anarchon.StatusSuccess, 1, 0)
		}
		if recs := s.history(0, job, 0); len(recs) > 1 {
			t.Errorf("History with HistorySize 1: %d records", len(recs))
		}
		for k := range int64(10) {
			if s.claim(int(k)+1, input(job, slot+k*1000, token(), "late")) {
				t.Errorf("slot +%ds: a new token won a slot whose history was trimmed (trimming must never reopen a slot, SPEC §4)", k)
			}
		}
	})
	t.Run("Manual", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		job := jobName("hist-manual")
		s.prepare(job, 10)
		slot := baseSlot()
		toks := []string{token(), token()}
		slots := make([]int64, 2)
		for i, tok := range toks {
			got, err := s.b(i).RecordManualRun(s.ctx, input(job, slot, tok, "inst"))
			if err != nil {
				t.Fatalf("RecordManualRun #%d of the same slot: %v", i+1, err)
			}
			slots[i] = got
		}
		check := func(when string, status anarchon.Status) {
			t.Helper()
			recs := s.history(1, job, 0)
			if len(recs) != 2 {
				t.Fatalf("History %s: %d records, want 2", when, len(recs))
			}
			checkTokensUnique(t, recs)
			for _, r := range recs {
				if !r.Manual {
					t.Errorf("History %s: token %s not Manual", when, r.Token)
				}
				if r.Token != toks[0] && r.Token != toks[1] {
					t.Errorf("History %s: unexpected token %s", when, r.Token)
				}
				if r.Status != status {
					t.Errorf("History %s: token %s status %q, want %q", when, r.Token, r.Status, status)
				}
			}
		}
		check("after two manual runs", anarchon.StatusRunning)
		for i, tok := range toks {
			now := ms(time.Now())
			s.save(i, job, anarchon.StoredResult{
				Slot: slots[i], Token: tok, InstanceID: "inst", Attempt: 1, Status: anarchon.StatusSuccess,
				StartedAt: now, FinishedAt: now, Manual: true,
			}, 10, 0)
		}
		check("after their results", anarchon.StatusSuccess)
	})
	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 1)
		job := jobName("hist-empty")
		s.prepare(job, 10)
		if recs := s.history(0, job, 0); len(recs) != 0 {
			t.Errorf("History of a job without runs: %d records", len(recs))
		}
	})
}

// sortKey is what History orders records by: slot, then start time, then
// claim time, then attempt, all newest first. Records with equal keys may
// come in any order.
type sortKey struct {
	slot               int64
	started, claimedAt time.Time
	attempt            int
}

func keyOf(r anarchon.RunRecord) sortKey {
	return sortKey{r.Slot.UnixMilli(), ms(r.StartedAt), ms(r.ClaimedAt), r.Attempt}
}

// sameRecord reports whether a and b agree in every field, times to the
// millisecond.
func sameRecord(a, b anarchon.RunRecord) bool {
	return a.Job == b.Job && a.Slot.Equal(b.Slot) && a.InstanceID == b.InstanceID && a.Token == b.Token &&
		a.Attempt == b.Attempt && a.Status == b.Status && a.Error == b.Error && a.Output == b.Output &&
		a.Manual == b.Manual && sameMs(a.ClaimedAt, b.ClaimedAt) && sameMs(a.StartedAt, b.StartedAt) &&
		sameMs(a.FinishedAt, b.FinishedAt)
}

// checkLimits fails unless History(limit) is the first limit records of
// History(0), every field alike, for every limit from 1 to one past the
// whole history. Ties of the sort key may come in another order.
func (s *store) checkLimits(job string) {
	t := s.t
	t.Helper()
	all := s.history(0, job, 0)
	byToken := make(map[string]anarchon.RunRecord, len(all))
	for _, r := range all {
		byToken[r.Token] = r
	}
	for limit := 1; limit <= len(all)+1; limit++ {
		got := s.history(limit, job, limit)
		want := all[:min(limit, len(all))]
		if len(got) != len(want) {
			t.Errorf("History(limit %d): %d records, want %d", limit, len(got), len(want))
			continue
		}
		for i, r := range got {
			full, ok := byToken[r.Token]
			switch {
			case !ok:
				t.Errorf("History(limit %d)[%d]: token %s is not in the whole history", limit, i, r.Token)
			case !sameRecord(r, full):
				t.Errorf("History(limit %d)[%d] = %+v\nwhole history has %+v", limit, i, r, full)
			case keyOf(r) != keyOf(want[i]):
				t.Errorf("History(limit %d)[%d] is token %s (slot %d, started %v); the whole history has token %s (slot %d, started %v) there",
					limit, i, r.Token, r.Slot.UnixMilli(), r.StartedAt, want[i].Token, want[i].Slot.UnixMilli(), want[i].StartedAt)
			}
		}
	}
}
