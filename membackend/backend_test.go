package membackend_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

func in(job string, slot int64, tok, inst string) anarchon.ClaimInput {
	return anarchon.ClaimInput{Job: job, Slot: slot, Token: tok, InstanceID: inst, HistorySize: 10}
}

func lease(job string, slot int64, tok, inst string) anarchon.RunClaim {
	return anarchon.RunClaim{ClaimInput: in(job, slot, tok, inst), Lease: time.Minute, AllowOverlap: true, MaxAttempts: 2}
}

// must returns v, and panics (failing the test) on an unexpected error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("unexpected error: %v", err))
	}
	return v
}

// statuses returns the history of job as token → status.
func statuses(t *testing.T, b *membackend.Backend, job string) map[string]anarchon.Status {
	t.Helper()
	out := map[string]anarchon.Status{}
	for _, r := range must(b.History(t.Context(), job, 0)) {
		if _, dup := out[r.Token]; dup {
			t.Errorf("token %s twice in history", r.Token)
		}
		out[r.Token] = r.Status
	}
	return out
}

func TestFault(t *testing.T) {
	boom := errors.New("boom")
	var mu sync.Mutex
	failing := ""
	var seen []string
	b := membackend.New(&membackend.Options{Fault: func(op string) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, op)
		if op == failing {
			return boom
		}
		return nil
	}})
	rs := b.Runs()
	ctx := t.Context()
	calls := map[string]func() error{
		"Init":            func() error { return b.Init(ctx) },
		"PrepareJob":      func() error { return b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: "j", HistorySize: 10}) },
		"Claim":           func() error { _, err := b.Claim(ctx, in("j", 1, "t", "i")); return err },
		"RecordClaim":     func() error { return b.RecordClaim(ctx, in("j", 1, "t", "i")) },
		"RecordManualRun": func() error { _, err := b.RecordManualRun(ctx, in("j", 2, "m", "i")); return err },
		"SaveResult": func() error {
			return b.SaveResult(ctx, anarchon.SaveResultInput{Job: "j", Result: anarchon.StoredResult{Slot: 1, Token: "t", Status: anarchon.StatusSuccess}, HistorySize: 10})
		},
		"History":  func() error { _, err := b.History(ctx, "j", 0); return err },
		"RunClaim": func() error { _, err := rs.Claim(ctx, lease("k", 1, "t", "i")); return err },
		"Heartbeat": func() error {
			_, err := rs.Heartbeat(ctx, anarchon.HeartbeatInput{Job: "k", Slot: 1, Token: "t", Lease: time.Minute})
			return err
		},
		"Release": func() error {
			_, err := rs.Release(ctx, anarchon.ReleaseInput{Job: "k", Slot: 1, Token: "t"})
			return err
		},
		"Finish": func() error {
			_, err := rs.Finish(ctx, anarchon.FinishInput{Job: "k", Slot: 1, Token: "t", Status: anarchon.StatusSuccess})
			return err
		},
		"Active":     func() error { _, err := rs.Active(ctx, "k"); return err },
		"ServerTime": func() error { _, err := b.ServerTime(ctx); return err },
		"WatchRuns":  func() error { _, err := b.WatchRuns(ctx); return err },
	}
	for op, call := range calls {
		mu.Lock()
		failing, seen = op, nil
		mu.Unlock()
		if err := call(); err != boom {
			t.Errorf("%s with a fault: error %v, want the fault's error unchanged", op, err)
		}
		mu.Lock()
		if len(seen) != 1 || seen[0] != op {
			t.Errorf("%s: fault hook saw %v, want [%s]", op, seen, op)
		}
		failing = ""
		mu.Unlock()
	}
	// A failed Claim changed nothing: the same slot is still free.
	if !must(b.Claim(ctx, in("fresh", 1, "x", "i"))) {
		t.Error("claim after faults lost")
	}
}

func TestBadInput(t *testing.T) {
	b := membackend.New(nil)
	rs := b.Runs()
	ctx := t.Context()
	bad := map[string]error{}
	_, bad["Claim empty job"] = b.Claim(ctx, in("", 1, "t", "i"))
	_, bad["Claim empty token"] = b.Claim(ctx, in("j", 1, "", "i"))
	c := in("j", 1, "t", "i")
	c.HistorySize = -1
	_, bad["Claim negative history size"] = b.Claim(ctx, c)
	_, bad["RecordManualRun empty token"] = b.RecordManualRun(ctx, in("j", 1, "", "i"))
	bad["PrepareJob empty job"] = b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: "", HistorySize: 1})
	bad["PrepareJob negative size"] = b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: "j", HistorySize: -1})
	bad["SaveResult empty job"] = b.SaveResult(ctx, anarchon.SaveResultInput{Job: "", Result: anarchon.StoredResult{}, HistorySize: 1})
	bad["SaveResult negative TTL"] = b.SaveResult(ctx, anarchon.SaveResultInput{Job: "j", Result: anarchon.StoredResult{}, HistorySize: 1, HistoryTTL: -time.Second})
	lc := lease("j", 1, "t", "i")
	lc.Lease = 0
	_, bad["RunClaim zero lease"] = rs.Claim(ctx, lc)
	lc = lease("j", 1, "t", "i")
	lc.MaxLate = -1
	_, bad["RunClaim negative MaxLate"] = rs.Claim(ctx, lc)
	_, bad["Heartbeat zero lease"] = rs.Heartbeat(ctx, anarchon.HeartbeatInput{Job: "j", Slot: 1, Token: "t", Lease: 0})
	_, bad["Finish empty status"] = rs.Finish(ctx, anarchon.FinishInput{Job: "j", Slot: 1, Token: "t", Status: ""})
	for what, err := range bad {
		if err == nil {
			t.Errorf("%s: no error", what)
		}
	}
	// Nothing was claimed by the rejected calls.
	if !must(b.Claim(ctx, in("j", 1, "ok", "i"))) {
		t.Error("a rejected claim took the slot")
	}
}

func TestClosed(t *testing.T) {
	b := membackend.New(nil)
	rs := b.Runs()
	ctx := t.Context()
	ch := must(b.WatchRuns(ctx))
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, ok := <-ch; ok {
		t.Error("watch channel open after Close")
	}
	errs := map[string]error{}
	errs["Init"] = b.Init(ctx)
	errs["RecordClaim"] = b.RecordClaim(ctx, in("j", 1, "t", "i"))
	_, errs["ServerTime"] = b.ServerTime(ctx)
	_, errs["WatchRuns"] = b.WatchRuns(ctx)
	_, errs["Heartbeat"] = rs.Heartbeat(ctx, anarchon.HeartbeatInput{Job: "j", Slot: 1, Token: "t", Lease: time.Second})
	_, errs["Finish"] = rs.Finish(ctx, anarchon.FinishInput{Job: "j", Slot: 1, Token: "t", Status: anarchon.StatusSuccess})
	_, errs["Release"] = rs.Release(ctx, anarchon.ReleaseInput{Job: "j", Slot: 1, Token: "t"})
	for op, err := range errs {
		if !errors.Is(err, anarchon.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", op, err)
		}
	}
}

func TestFiniteDedupeWindow(t *testing.T) {
	clock := newFakeClock()
	b := membackend.New(&membackend.Options{Now: clock.Now, DedupeWindow: time.Hour})
	if got := b.DedupeWindow(); got != time.Hour {
		t.Fatalf("DedupeWindow() = %v, want 1h", got)
	}
	if got := membackend.New(nil).DedupeWindow(); got != anarchon.Forever {
		t.Fatalf("default DedupeWindow() = %v, want Forever", got)
	}
	ctx := t.Context()
	must(b.Claim(ctx, in("j", 1, "a", "i")))
	clock.Advance(30 * time.Minute)
	if must(b.Claim(ctx, in("j", 1, "b", "i"))) {
		t.Fatal("claim inside the window won")
	}
	clock.Advance(2 * time.Hour)
	if !must(b.Claim(ctx, in("j", 1, "c", "i"))) {
		t.Error("a claim older than the dedupe window was not forgotten")
	}
}

// TestLeaseHistory checks the records the RunStore writes (package doc,
// "History").
func TestLeaseHistory(t *testing.T) {
	clock := newFakeClock()
	b := membackend.New(&membackend.Options{Now: clock.Now})
	rs := b.Runs()
	ctx := t.Context()
	const job = "j"
	now := clock.Now().UnixMilli() - 10000 // slots a little in the past: none is early

	// Late: missed record under the caller's token.
	c := lease(job, now-600000, "late", "i")
	c.MaxLate = time.Minute
	if out := must(rs.Claim(ctx, c)); out.Kind != anarchon.OutcomeLate {
		t.Fatalf("late claim: %v", out.Kind)
	}
	// Running slot, then an overlapping claim: skipped record.
	must(rs.Claim(ctx, lease(job, now, "run", "i")))
	c = lease(job, now+1000, "skip", "i")
	c.AllowOverlap = false
	if out := must(rs.Claim(ctx, c)); out.Kind != anarchon.OutcomeOverlap {
		t.Fatalf("overlap claim: %v", out.Kind)
	}
	// Release then takeover: handed_over for the first holder.
	must(rs.Release(ctx, anarchon.ReleaseInput{Job: job, Slot: now, Token: "run"}))
	must(rs.Claim(ctx, lease(job, now, "second", "j")))
	// Expiry with attempts used up (MaxAttempts 2): abandoned for the last.
	clock.Advance(2 * time.Minute)
	if out := must(rs.Claim(ctx, lease(job, now, "third", "k"))); out.Status != anarchon.StatusAbandoned {
		t.Fatalf("claim after attempts used up: %+v", out)
	}
	// Expired takeover: lease_lost for the old holder.
	must(rs.Claim(ctx, lease(job, now+2000, "x1", "i")))
	clock.Advance(2 * time.Minute)
	must(rs.Claim(ctx, lease(job, now+2000, "x2", "j")))
	// Finish records a status; SaveResult after it wins.
	must(rs.Finish(ctx, anarchon.FinishInput{Job: job, Slot: now + 2000, Token: "x2", Status: anarchon.StatusError}))
	want := map[string]anarchon.Status{
		"late": anarchon.StatusMissed, "skip": anarchon.StatusSkipped,
		"run": anarchon.StatusHandedOver, "second": anarchon.StatusLeaseLost,
		anarchon.AbandonedToken(now): anarchon.StatusAbandoned,
		"x1":                         anarchon.StatusLeaseLost, "x2": anarchon.StatusError,
	}
	got := statuses(t, b, job)
	for tok, st := range want {
		if got[tok] != st {
			t.Errorf("token %s: status %q, want %q", tok, got[tok], st)
		}
	}
	if len(got) != len(want) {
		t.Errorf("history %v, want %v", got, want)
	}
	if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: anarchon.StoredResult{Slot: now + 2000, Token: "x2", Attempt: 2, Status: anarchon.StatusSuccess}, HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	if st := statuses(t, b, job)["x2"]; st != anarchon.StatusSuccess {
		t.Errorf("after SaveResult: %q, want success", st)
	}
	// A repeat Finish neither fails nor overrides the saved result.
	if !must(rs.Finish(ctx, anarchon.FinishInput{Job: job, Slot: now + 2000, Token: "x2", Status: anarchon.StatusError})) {
		t.Error("repeated Finish returned false")
	}
	if st := statuses(t, b, job)["x2"]; st != anarchon.StatusSuccess {
		t.Errorf("after a repeated Finish: %q, want success", st)
	}
}

func TestRecordClaim(t *testing.T) {
	b := membackend.New(nil)
	ctx := t.Context()
	must(b.Claim(ctx, in("j", 1, "a", "i")))
	for range 2 {
		if err := b.RecordClaim(ctx, in("j", 1, "a", "i")); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(must(b.History(ctx, "j", 0))); n != 1 {
		t.Errorf("RecordClaim after Claim: %d records, want 1", n)
	}
}

func TestWatchDoesNotBlock(t *testing.T) {
	b := membackend.New(nil)
	rs := b.Runs()
	ctx, cancel := context.WithCancel(t.Context())
	ch := must(b.WatchRuns(ctx))
	// Far more events than the buffer holds, none read: sends must drop.
	for i := range int64(200) {
		tok := "t"
		must(rs.Claim(ctx, lease("j", i, tok, "i")))
		must(rs.Release(ctx, anarchon.ReleaseInput{Job: "j", Slot: i, Token: tok}))
	}
	n := 0
	for len(ch) > 0 {
		<-ch
		n++
	}
	if n == 0 || n > 200 {
		t.Errorf("%d buffered events", n)
	}
	cancel()
	for range ch {
	}
}

func TestServerTime(t *testing.T) {
	clock := newFakeClock()
	b := membackend.New(&membackend.Options{Now: clock.Now})
	clock.Advance(time.Hour)
	if got := must(b.ServerTime(t.Context())); !got.Equal(clock.Now()) {
		t.Errorf("ServerTime %v, want the store clock %v", got, clock.Now())
	}
	sc, ok := b.Runs().(anarchon.ServerClock)
	if !ok {
		t.Fatal("RunStore is not a ServerClock")
	}
	if got := must(sc.ServerTime(t.Context())); !got.Equal(clock.Now()) {
		t.Errorf("RunStore ServerTime %v, want %v", got, clock.Now())
	}
}

// A batch meets the fault hook once per claim under the single call's
// name, which fails that claim alone, and once under its own name, which
// fails the batch before any state changes.
func TestFaultBatch(t *testing.T) {
	boom := errors.New("boom")
	var mu sync.Mutex
	var calls int
	failing := ""
	b := membackend.New(&membackend.Options{Fault: func(op string) error {
		mu.Lock()
		defer mu.Unlock()
		if op == failing {
			calls++
			if op == "ClaimBatch" || op == "ClaimRuns" || calls == 2 {
				return boom
			}
		}
		return nil
	}})
	ctx := t.Context()
	set := func(op string) {
		mu.Lock()
		failing, calls = op, 0
		mu.Unlock()
	}
	ins := []anarchon.ClaimInput{in("j", 1, "t1", "i"), in("j", 2, "t2", "i"), in("j", 3, "t3", "i")}
	set("Claim")
	out, err := b.ClaimBatch(ctx, ins)
	if err != nil || len(out) != 3 || !out[0].Won || out[1].Err != boom || out[1].Won || !out[2].Won {
		t.Errorf("ClaimBatch with the second claim's fault = %+v, %v; want won, the fault, won", out, err)
	}
	set("ClaimBatch")
	if out, err := b.ClaimBatch(ctx, []anarchon.ClaimInput{in("j", 2, "t2", "i")}); err != boom || out != nil {
		t.Errorf("ClaimBatch with a batch fault = %+v, %v; want the fault", out, err)
	}
	set("")
	if !must(b.Claim(ctx, in("j", 2, "x", "i"))) {
		t.Error("the slot whose claim failed in a batch is not free")
	}
	rs := b.Runs().(*membackend.RunStore)
	leases := []anarchon.RunClaim{lease("k", 1, "t1", "i"), lease("k", 2, "t2", "i"), lease("k", 3, "t3", "i")}
	set("RunClaim")
	rout, err := rs.ClaimRuns(ctx, leases)
	if err != nil || len(rout) != 3 || rout[0].Outcome.Kind != anarchon.OutcomeWon || rout[1].Err != boom || rout[2].Outcome.Kind != anarchon.OutcomeWon {
		t.Errorf("ClaimRuns with the second claim's fault = %+v, %v; want won, the fault, won", rout, err)
	}
	set("ClaimRuns")
	if rout, err := rs.ClaimRuns(ctx, leases[1:2]); err != boom || rout != nil {
		t.Errorf("ClaimRuns with a batch fault = %+v, %v; want the fault", rout, err)
	}
}

// A call whose context has ended fails before it does anything, with an
// error wrapping the context's, as a call to a server fails; so does a
// scheduler's Start with such a context.
func TestEndedContext(t *testing.T) {
	b := membackend.New(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Init(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Init = %v, want context.Canceled", err)
	}
	c := in("j", time.Now().Add(-time.Minute).UnixMilli(), "t", "i")
	if won, err := b.Claim(ctx, c); won || !errors.Is(err, context.Canceled) {
		t.Errorf("Claim = %v, %v; want context.Canceled", won, err)
	}
	if won, err := b.Claim(context.Background(), c); !won || err != nil {
		t.Errorf("Claim after the refused one = %v, %v; want won: the refused call claimed nothing", won, err)
	}
	s := anarchon.New(b, &anarchon.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := s.Every("j", time.Hour, func(context.Context, *anarchon.Run) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Start = %v, want context.Canceled", err)
	}
}
