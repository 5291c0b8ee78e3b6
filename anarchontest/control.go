package anarchontest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/anarchon/anarchon"
)

// testControl runs the job control tests of SPEC §12; Run calls it when
// the backend implements anarchon.JobControl.
func testControl(t *testing.T, h Harness, hasLeases, hasTriggers bool) {
	t.Run("State", func(t *testing.T) { t.Parallel(); testControlState(t, h) })
	t.Run("PausedPlainClaim", func(t *testing.T) { t.Parallel(); testControlPlain(t, h) })
	if hasLeases {
		t.Run("PausedLeaseClaim", func(t *testing.T) { t.Parallel(); testControlLease(t, h) })
	}
	if h.Reopen != nil {
		t.Run("Reopen", func(t *testing.T) { t.Parallel(); testControlReopen(t, h) })
	}
	if !h.FakeClock && hasTriggers {
		// Schedulers read the real clock; with a fake store clock their
		// slots and the store's lateness would disagree.
		t.Run("Schedulers", func(t *testing.T) { t.Parallel(); testControlSchedulers(t, h, hasLeases) })
	}
}

func (s *store) ctl(i int) anarchon.JobControl {
	s.t.Helper()
	jc, ok := anarchon.As[anarchon.JobControl](s.b(i))
	if !ok {
		s.t.Fatalf("handle %d has no anarchon.JobControl", i%len(s.bs))
	}
	return jc
}

func (s *store) setPaused(i int, in anarchon.PauseInput) anarchon.JobState {
	s.t.Helper()
	st, err := s.ctl(i).SetPaused(s.ctx, in)
	if err != nil {
		s.t.Fatalf("handle %d: SetPaused(%+v): %v", i%len(s.bs), in, err)
	}
	return st
}

func (s *store) jobState(i int, job string) anarchon.JobState {
	s.t.Helper()
	st, err := s.ctl(i).JobState(s.ctx, job)
	if err != nil {
		s.t.Fatalf("handle %d: JobState(%q): %v", i%len(s.bs), job, err)
	}
	return st
}

// The state set on one handle reads back on another, with the store's
// time; a job never paused reads as not paused; JobStates lists it.
func testControlState(t *testing.T, h Harness) {
	s := open(t, h, 2)
	job, other := jobName("ctl-state"), jobName("ctl-never")
	if st := s.jobState(1, other); st.Paused || !st.At.IsZero() {
		t.Errorf("JobState of a job never paused = %+v, want not paused, At zero", st)
	}
	before := s.now()
	set := s.setPaused(0, anarchon.PauseInput{Job: job, Paused: true, By: "ops", Reason: "maintenance ✓"})
	after := s.now()
	if !set.Paused || set.By != "ops" || set.Reason != "maintenance ✓" || set.Job != job {
		t.Errorf("SetPaused returned %+v", set)
	}
	if !h.FakeClock && (set.At.Before(ms(before).Add(-clockSlack)) || set.At.After(after.Add(clockSlack))) {
		t.Errorf("At = %v, want the store's time in [%v, %v]", set.At, before, after)
	}
	got := s.jobState(1, job)
	if !got.Paused || got.By != "ops" || got.Reason != "maintenance ✓" || !sameMs(got.At, set.At) {
		t.Errorf("JobState on another handle = %+v, want %+v", got, set)
	}
	sts, err := s.ctl(1).JobStates(s.ctx)
	if err != nil {
		t.Fatalf("JobStates: %v", err)
	}
	found := false
	for _, st := range sts {
		found = found || (st.Job == job && st.Paused)
	}
	if !found {
		t.Errorf("JobStates = %+v, want %q paused among them", sts, job)
	}
	res := s.setPaused(1, anarchon.PauseInput{Job: job, Paused: false, By: "dev"})
	if got := s.jobState(0, job); got.Paused || got.By != "dev" || !sameMs(got.At, res.At) {
		t.Errorf("after resume JobState = %+v, want not paused, by dev", got)
	}
	if _, err := s.ctl(0).SetPaused(s.ctx, anarchon.PauseInput{Paused: true}); err == nil {
		t.Error("SetPaused with an empty job name succeeded")
	}
}

// A pause stored through one handle settles every later plain claim of a
// new slot, made on any handle: nobody wins it, before or after a resume,
// and history shows it paused once. Slots claimed before the pause keep
// their winner; slots after the resume are claimed as usual.
func testControlPlain(t *testing.T, h Harness) {
	s := open(t, h, 3)
	job := jobName("ctl-plain")
	s.prepare(job, 100)
	base := baseSlot()
	if !s.claim(0, input(job, base, "t-before", "i0")) {
		t.Fatal("claim before the pause lost")
	}
	s.setPaused(1, anarchon.PauseInput{Job: job, Paused: true, By: "ops", Reason: "why"})
	paused := base + 1000
	for i := range 6 {
		if s.claim(i, input(job, paused, fmt.Sprintf("t-%d", i), fmt.Sprintf("i%d", i%3))) {
			t.Errorf("handle %d won a slot claimed after the pause", i%3)
		}
	}
	if !s.claim(2, input(job, base, "t-before", "i0")) {
		t.Error("the repeat of a claim won before the pause lost")
	}
	s.setPaused(2, anarchon.PauseInput{Job: job, Paused: false})
	if s.claim(0, input(job, paused, "t-after", "i0")) {
		t.Error("a slot settled while paused was won after the resume")
	}
	if !s.claim(1, input(job, base+2000, "t-next", "i1")) {
		t.Error("a new slot after the resume lost")
	}
	checkPausedRecord(t, s.history(0, job, 0), paused)
}

// checkPausedRecord fails unless history has exactly one record of slot,
// paused, under anarchon.PausedToken, with the claim's time (SPEC §12: a
// record of a slot not run has the time of the claim that settled it).
func checkPausedRecord(t *testing.T, recs []anarchon.RunRecord, slot int64) {
	t.Helper()
	n := 0
	for _, r := range recs {
		if r.Slot.UnixMilli() != slot {
			continue
		}
		n++
		if r.Status != anarchon.StatusPaused || r.Token != anarchon.PausedToken(slot) || r.ClaimedAt.IsZero() {
			t.Errorf("record of the paused slot = %+v, want status paused under %s, with its claim time", r, anarchon.PausedToken(slot))
		}
	}
	if n != 1 {
		t.Errorf("history has %d records of the paused slot, want 1: %+v", n, recs)
	}
}

// The same for lease claims: the first claim after the pause is answered
// paused, every later one none; a run already going is unaffected.
func testControlLease(t *testing.T, h Harness) {
	s := open(t, h, 3)
	job := jobName("ctl-lease")
	s.prepare(job, 100)
	base := baseSlot()
	rc := func(slot int64, tok, inst string) anarchon.RunClaim {
		return anarchon.RunClaim{ClaimInput: input(job, slot, tok, inst), Lease: longLease, AllowOverlap: true, MaxAttempts: 3}
	}
	if out := s.lclaim(0, rc(base, "t-before", "i0")); out.Kind != anarchon.OutcomeWon {
		t.Fatalf("claim before the pause = %v", out.Kind)
	}
	s.setPaused(1, anarchon.PauseInput{Job: job, Paused: true, By: "ops"})
	paused := base + 1000
	if out := s.lclaim(2, rc(paused, "t-2", "i2")); out.Kind != anarchon.OutcomePaused {
		t.Errorf("first claim after the pause = %v, want paused", out.Kind)
	}
	for i := range 4 {
		if out := s.lclaim(i, rc(paused, fmt.Sprintf("t-x%d", i), "ix")); out.Kind != anarchon.OutcomeNone {
			t.Errorf("handle %d: later claim of the paused slot = %v, want none", i%3, out.Kind)
		}
	}
	if out := s.lclaim(1, rc(base, "t-before", "i0")); out.Kind != anarchon.OutcomeWon {
		t.Errorf("renewal of the run from before the pause = %v, want won", out.Kind)
	}
	s.setPaused(0, anarchon.PauseInput{Job: job, Paused: false})
	if out := s.lclaim(0, rc(paused, "t-after", "i0")); out.Kind != anarchon.OutcomeNone {
		t.Errorf("claim of the paused slot after resume = %v, want none", out.Kind)
	}
	if out := s.lclaim(1, rc(base+2000, "t-next", "i1")); out.Kind != anarchon.OutcomeWon {
		t.Errorf("new slot after resume = %v, want won", out.Kind)
	}
	checkPausedRecord(t, s.history(2, job, 0), paused)
}

// The paused state and trigger requests outlive the handle that wrote
// them: a handle opened after Close reads them back.
func testControlReopen(t *testing.T, h Harness) {
	s := open(t, h, 1)
	job := jobName("ctl-reopen")
	set := s.setPaused(0, anarchon.PauseInput{Job: job, Paused: true, By: "ops", Reason: "kept"})
	var req anarchon.TriggerRecord
	ts, hasTriggers := anarchon.As[anarchon.TriggerStore](s.b(0))
	if hasTriggers {
		var err error
		if req, err = ts.RequestTrigger(s.ctx, anarchon.TriggerInput{Job: job, Key: "k1", By: "cli"}); err != nil {
			t.Fatalf("RequestTrigger: %v", err)
		}
	}
	if err := s.b(0).Close(s.ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	nb := h.Reopen(t, s.b(0))
	s.bs[0] = nb
	if err := nb.Init(s.ctx); err != nil {
		t.Fatalf("Init after reopen: %v", err)
	}
	if got := s.jobState(0, job); !got.Paused || got.Reason != "kept" || !sameMs(got.At, set.At) {
		t.Errorf("JobState after reopen = %+v, want %+v", got, set)
	}
	if hasTriggers {
		ts, _ := anarchon.As[anarchon.TriggerStore](nb)
		got, err := ts.LookupTrigger(s.ctx, job, "k1")
		if err != nil || got.State != anarchon.TriggerPending || got.By != "cli" || !sameMs(got.RequestedAt, req.RequestedAt) {
			t.Errorf("LookupTrigger after reopen = %+v, %v; want %+v", got, err, req)
		}
	}
}

// testTriggers runs the trigger tests of SPEC §12; Run calls it when the
// backend implements anarchon.TriggerStore.
func testTriggers(t *testing.T, h Harness, has abilities) {
	t.Run("Once", func(t *testing.T) { t.Parallel(); testTriggerOnce(t, h) })
	t.Run("Unknown", func(t *testing.T) { t.Parallel(); testTriggerUnknown(t, h) })
	if has.watcher {
		t.Run("Watch", func(t *testing.T) { t.Parallel(); testTriggerWatch(t, h) })
	}
	t.Run("Cancel", func(t *testing.T) {
		if !has.cancel {
			t.Skip("backend has no anarchon.TriggerCanceler")
		}
		t.Parallel()
		testTriggerCancel(t, h)
	})
}

func (s *store) trig(i int) anarchon.TriggerStore {
	s.t.Helper()
	ts, ok := anarchon.As[anarchon.TriggerStore](s.b(i))
	if !ok {
		s.t.Fatalf("handle %d has no anarchon.TriggerStore", i%len(s.bs))
	}
	return ts
}

// Racers on several handles request the same key: one request, the first
// one's; racers claim it: exactly one token wins, and its repeat wins
// again; the finish reads back on another handle, and the request is no
// longer pending.
func testTriggerOnce(t *testing.T, h Harness) {
	s := open(t, h, 3)
	job := jobName("trig-once")
	key := "key-" + randHex(4)
	n := h.Racers
	reqs := make([]anarchon.TriggerRecord, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			reqs[i], errs[i] = s.trig(i).RequestTrigger(s.ctx, anarchon.TriggerInput{Job: job, Key: key, By: fmt.Sprintf("c%d", i)})
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("RequestTrigger %d: %v", i, errs[i])
		}
		if reqs[i].By != reqs[0].By || !sameMs(reqs[i].RequestedAt, reqs[0].RequestedAt) || reqs[i].Key != key || reqs[i].Job != job {
			t.Errorf("requests answered differently: %+v and %+v", reqs[0], reqs[i])
		}
	}
	pending, err := s.trig(1).PendingTriggers(s.ctx)
	if err != nil {
		t.Fatalf("PendingTriggers: %v", err)
	}
	if c := countTrigger(pending, job, key); c != 1 {
		t.Errorf("PendingTriggers lists the request %d times, want 1", c)
	}
	won := make([]bool, n)
	for i := range n {
		wg.Go(func() {
			won[i], errs[i] = s.trig(i).ClaimTrigger(s.ctx, anarchon.ClaimTriggerInput{Job: job, Key: key, Token: fmt.Sprintf("tok-%d", i), InstanceID: fmt.Sprintf("i%d", i%3)})
		})
	}
	wg.Wait()
	winner := -1
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("ClaimTrigger %d: %v", i, errs[i])
		}
		if won[i] {
			if winner >= 0 {
				t.Errorf("tokens %d and %d both won the request", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no token won the request")
	}
	tok := fmt.Sprintf("tok-%d", winner)
	if ok, err := s.trig(winner+1).ClaimTrigger(s.ctx, anarchon.ClaimTriggerInput{Job: job, Key: key, Token: tok, InstanceID: "ix"}); err != nil || !ok {
		t.Errorf("repeat of the winning claim = %v, %v; want true", ok, err)
	}
	if pending, _ := s.trig(2).PendingTriggers(s.ctx); countTrigger(pending, job, key) != 0 {
		t.Error("a claimed request is still pending")
	}
	rec, err := s.trig(0).LookupTrigger(s.ctx, job, key)
	if err != nil || rec.State != anarchon.TriggerRunning || rec.Token != tok {
		t.Errorf("LookupTrigger while running = %+v, %v", rec, err)
	}
	// A finish by another token changes nothing.
	if err := s.trig(1).FinishTrigger(s.ctx, anarchon.FinishTriggerInput{Job: job, Key: key, Token: "not-it", Status: anarchon.StatusSuccess}); err != nil {
		t.Fatalf("FinishTrigger other token: %v", err)
	}
	if err := s.trig(1).FinishTrigger(s.ctx, anarchon.FinishTriggerInput{Job: job, Key: key, Token: tok, Slot: 1234, Status: anarchon.StatusError, Error: "exit 3"}); err != nil {
		t.Fatalf("FinishTrigger: %v", err)
	}
	rec, err = s.trig(2).LookupTrigger(s.ctx, job, key)
	if err != nil || rec.State != anarchon.TriggerDone || rec.Status != anarchon.StatusError || rec.Error != "exit 3" || rec.Slot != 1234 ||
		rec.Token != tok || rec.By != reqs[0].By || rec.FinishedAt.IsZero() {
		t.Errorf("LookupTrigger when done = %+v, %v", rec, err)
	}
	// A request of a done key is the done record, not a new request.
	again, err := s.trig(0).RequestTrigger(s.ctx, anarchon.TriggerInput{Job: job, Key: key, By: "late"})
	if err != nil || again.State != anarchon.TriggerDone {
		t.Errorf("RequestTrigger of a done key = %+v, %v; want the done record", again, err)
	}
}

func countTrigger(recs []anarchon.TriggerRecord, job, key string) int {
	n := 0
	for _, r := range recs {
		if r.Job == job && r.Key == key {
			n++
		}
	}
	return n
}

// An unknown request is ErrNotFound and cannot be claimed; bad input is
// refused.
func testTriggerUnknown(t *testing.T, h Harness) {
	s := open(t, h, 1)
	job := jobName("trig-unknown")
	if _, err := s.trig(0).LookupTrigger(s.ctx, job, "nope"); !errors.Is(err, anarchon.ErrNotFound) {
		t.Errorf("LookupTrigger unknown = %v, want ErrNotFound", err)
	}
	if ok, err := s.trig(0).ClaimTrigger(s.ctx, anarchon.ClaimTriggerInput{Job: job, Key: "nope", Token: "t", InstanceID: "i"}); err != nil || ok {
		t.Errorf("ClaimTrigger unknown = %v, %v; want false", ok, err)
	}
	if _, err := s.trig(0).RequestTrigger(s.ctx, anarchon.TriggerInput{Job: job}); err == nil {
		t.Error("RequestTrigger with an empty key succeeded")
	}
}

// A request made on one handle is delivered to a watch on another as a
// RunTriggered event.
func testTriggerWatch(t *testing.T, h Harness) {
	s := open(t, h, 2)
	job := jobName("trig-watch")
	w, _ := anarchon.As[anarchon.Watcher](s.b(1))
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	ch, err := w.WatchRuns(ctx)
	if err != nil {
		t.Fatalf("WatchRuns: %v", err)
	}
	if _, err := s.trig(0).RequestTrigger(s.ctx, anarchon.TriggerInput{Job: job, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, ch, fmt.Sprintf("RunTriggered event for %q", job), func(ev anarchon.RunEvent) bool {
		return ev.Kind == anarchon.RunTriggered && ev.Job == job
	})
}

func (s *store) cancelTrig(i int) anarchon.TriggerCanceler {
	s.t.Helper()
	tc, ok := anarchon.As[anarchon.TriggerCanceler](s.b(i))
	if !ok {
		s.t.Fatalf("handle %d has no anarchon.TriggerCanceler", i%len(s.bs))
	}
	return tc
}

// Cancel (SPEC §12): a pending request canceled on one handle reads back
// done, StatusCanceled, on another, is no longer pending, cannot be
// claimed, and a second cancel answers the same record; an unknown request
// is ErrNotFound; a running one is answered unchanged and still finishes.
// Racers cancel and claim many pending requests on several handles: each
// ends either canceled with no claim won, or claimed by exactly one token
// with every cancel answered running.
func testTriggerCancel(t *testing.T, h Harness) {
	s := open(t, h, 3)
	job := jobName("trig-cancel")
	if _, err := s.cancelTrig(0).CancelTrigger(s.ctx, anarchon.CancelTriggerInput{Job: job, Key: "nope", By: "op"}); !errors.Is(err, anarchon.ErrNotFound) {
		t.Errorf("CancelTrigger unknown = %v, want ErrNotFound", err)
	}
	if _, err := s.trig(0).RequestTrigger(s.ctx, anarchon.TriggerInput{Job: job, Key: "p", By: "me"}); err != nil {
		t.Fatal(err)
	}
	canceled := func(rec anarchon.TriggerRecord) bool {
		return rec.State == anarchon.TriggerDone && rec.Status == anarchon.StatusCanceled && rec.Error == anarchon.CanceledError("op") &&
			rec.Token == "" && rec.InstanceID == "" && rec.By == "me" && !rec.FinishedAt.IsZero()
	}
	rec, err := s.cancelTrig(1).CancelTrigger(s.ctx, anarchon.CancelTriggerInput{Job: job, Key: "p", By: "op"})
	if err != nil || !canceled(rec) {
		t.Errorf("CancelTrigger pending = %+v, %v; want done, canceled by op", rec, err)
	}
	if got, err := s.trig(2).LookupTrigger(s.ctx, job, "p"); err != nil || !canceled(got) {
		t.Errorf("LookupTrigger after the cancel = %+v, %v", got, err)
	}
	if pending, _ := s.trig(0).PendingTriggers(s.ctx); countTrigger(pending, job, "p") != 0 {
		t.Error("a canceled request is still pending")
	}
	if ok, err := s.trig(0).ClaimTrigger(s.ctx, anarchon.ClaimTriggerInput{Job: job, Key: "p", Token: "t", InstanceID: "i"}); err != nil || ok {
		t.Errorf("ClaimTrigger of a canceled request = %v, %v; want false", ok, err)
	}
	if again, err := s.cancelTrig(2).CancelTrigger(s.ctx, anarchon.CancelTriggerInput{Job: job, Key: "p", By: "other"}); err != nil || !canceled(again) {
		t.Errorf("second CancelTrigger = %+v, %v; want the first cancel's record", again, err)
	}

	// A running request is not canceled, and finishes.
	if _, err := s.trig(0).RequestTrigger(s.ctx, anarchon.TriggerInput{Job: job, Key: "r"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.trig(1).ClaimTrigger(s.ctx, anarchon.ClaimTriggerInput{Job: job, Key: "r", Token: "tr", InstanceID: "i1"}); err != nil || !ok {
		t.Fatalf("ClaimTrigger = %v, %v", ok, err)
	}
	if rec, err := s.cancelTrig(2).CancelTrigger(s.ctx, anarchon.CancelTriggerInput{Job: job, Key: "r", By: "op"}); err != nil || rec.State != anarchon.TriggerRunning || rec.Token != "tr" {
		t.Errorf("CancelTrigger running = %+v, %v; want it running, unchanged", rec, err)
	}
	if err := s.trig(0).FinishTrigger(s.ctx, anarchon.FinishTriggerInput{Job: job, Key: "r", Token: "tr", Slot: 7, Status: anarchon.StatusSuccess}); err != nil {
		t.Fatal(err)
	}
	if rec, err := s.trig(1).LookupTrigger(s.ctx, job, "r"); err != nil || rec.State != anarchon.TriggerDone || rec.Status != anarchon.StatusSuccess {
		t.Errorf("after its finish = %+v, %v; want done, success", rec, err)
	}

	// Cancels race claims: one outcome per request.
	const keys = 8
	n := max(h.Racers/2, 2)
	for k := range keys {
		if _, err := s.trig(k).RequestTrigger(s.ctx, anarchon.TriggerInput{Job: job, Key: fmt.Sprintf("race-%d", k)}); err != nil {
			t.Fatal(err)
		}
	}
	type claimRes struct {
		won bool
		err error
	}
	type cancelRes struct {
		rec anarchon.TriggerRecord
		err error
	}
	claims := make([][]claimRes, keys)
	cancels := make([][]cancelRes, keys)
	var wg sync.WaitGroup
	for k := range keys {
		claims[k], cancels[k] = make([]claimRes, n), make([]cancelRes, n)
		key := fmt.Sprintf("race-%d", k)
		for i := range n {
			wg.Go(func() {
				won, err := s.trig(i).ClaimTrigger(s.ctx, anarchon.ClaimTriggerInput{Job: job, Key: key, Token: fmt.Sprintf("tok-%d", i), InstanceID: "i"})
				claims[k][i] = claimRes{won, err}
			})
			wg.Go(func() {
				rec, err := s.cancelTrig(i+1).CancelTrigger(s.ctx, anarchon.CancelTriggerInput{Job: job, Key: key, By: "op"})
				cancels[k][i] = cancelRes{rec, err}
			})
		}
	}
	wg.Wait()
	for k := range keys {
		won := 0
		for _, c := range claims[k] {
			if c.err != nil {
				t.Fatalf("race-%d: ClaimTrigger: %v", k, c.err)
			}
			if c.won {
				won++
			}
		}
		final, err := s.trig(0).LookupTrigger(s.ctx, job, fmt.Sprintf("race-%d", k))
		if err != nil {
			t.Fatalf("race-%d: LookupTrigger: %v", k, err)
		}
		wasCanceled := final.Status == anarchon.StatusCanceled
		switch {
		case wasCanceled && won != 0:
			t.Errorf("race-%d: canceled, and %d claims won it", k, won)
		case !wasCanceled && (won != 1 || final.State != anarchon.TriggerRunning):
			t.Errorf("race-%d: not canceled, %d claims won, record %+v; want one winner, running", k, won, final)
		}
		for i, c := range cancels[k] {
			if c.err != nil {
				t.Fatalf("race-%d: CancelTrigger %d: %v", k, i, c.err)
			}
			if got := c.rec.Status == anarchon.StatusCanceled; got != wasCanceled {
				t.Errorf("race-%d: cancel %d answered %+v, but the request ended %+v", k, i, c.rec, final)
			}
		}
	}
}
