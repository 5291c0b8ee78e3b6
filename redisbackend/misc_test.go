package redisbackend_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

// TestInvalidInput needs no server: bad arguments are refused before any
// I/O with ErrInvalidInput.
func TestInvalidInput(t *testing.T) {
	if _, err := redisbackend.New(nil, nil); !errors.Is(err, redisbackend.ErrInvalidInput) {
		t.Errorf("New(nil): %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	// "a:b" would share keys with prefix "a" and a job named "b:…".
	for _, o := range []redisbackend.Options{{Prefix: "a{b"}, {Prefix: "a}"}, {Prefix: "a:b"}, {Replicas: -1}, {ReplicaTimeout: -time.Second}, {LossHold: -time.Second}} {
		if _, err := redisbackend.New(c, &o); !errors.Is(err, redisbackend.ErrInvalidInput) {
			t.Errorf("New(%+v): %v, want ErrInvalidInput", o, err)
		}
	}
	if _, err := redisbackend.New(c, &redisbackend.Options{Replicas: 1, ReplicaTimeout: time.Minute}); !errors.Is(err, redisbackend.ErrInvalidInput) {
		t.Errorf("New with ReplicaTimeout above the client's ReadTimeout: %v, want ErrInvalidInput", err)
	}
	b, err := redisbackend.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	rs := b.Runs()
	good := anarchon.ClaimInput{Job: "j", Slot: 1, Token: "t", InstanceID: "i"}
	bad := map[string]func() error{
		"Claim empty job":     func() error { in := good; in.Job = ""; _, err := b.Claim(ctx, in); return err },
		"Claim empty token":   func() error { in := good; in.Token = ""; _, err := b.Claim(ctx, in); return err },
		"Claim huge slot":     func() error { in := good; in.Slot = redisbackend.MaxSlot + 1; _, err := b.Claim(ctx, in); return err },
		"Claim negative slot": func() error { in := good; in.Slot = -redisbackend.MaxSlot - 1; _, err := b.Claim(ctx, in); return err },
		"Manual empty token":  func() error { in := good; in.Token = ""; _, err := b.RecordManualRun(ctx, in); return err },
		"PrepareJob empty":    func() error { return b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: "", HistorySize: 10}) },
		"PrepareJob negative": func() error { return b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: "j", HistorySize: -1}) },
		"SaveResult empty job": func() error {
			return b.SaveResult(ctx, anarchon.SaveResultInput{Job: "", Result: anarchon.StoredResult{Slot: 1}, HistorySize: 10})
		},
		"SaveResult neg TTL": func() error {
			return b.SaveResult(ctx, anarchon.SaveResultInput{Job: "j", Result: anarchon.StoredResult{Slot: 1}, HistorySize: 1, HistoryTTL: -time.Second})
		},
		"History empty job": func() error { _, err := b.History(ctx, "", 0); return err },
		"Lease zero": func() error {
			_, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: good})
			return err
		},
		"Lease negative MaxLate": func() error {
			_, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: good, Lease: time.Second, MaxLate: -1})
			return err
		},
		"Heartbeat zero lease": func() error {
			_, err := rs.Heartbeat(ctx, anarchon.HeartbeatInput{Job: "j", Slot: 1, Token: "t", Lease: 0})
			return err
		},
		"Finish empty status": func() error {
			_, err := rs.Finish(ctx, anarchon.FinishInput{Job: "j", Slot: 1, Token: "t", Status: ""})
			return err
		},
		"FinishResult empty token": func() error {
			_, err := rs.(anarchon.ResultFinisher).FinishResult(ctx, anarchon.SaveResultInput{Job: "j", Result: anarchon.StoredResult{Slot: 1, Status: anarchon.StatusSuccess}, HistorySize: 10})
			return err
		},
		"Release empty token": func() error {
			_, err := rs.Release(ctx, anarchon.ReleaseInput{Job: "j", Slot: 1, Token: ""})
			return err
		},
		"Active empty job": func() error { _, err := rs.Active(ctx, ""); return err },
	}
	for name, f := range bad {
		if err := f(); !errors.Is(err, redisbackend.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
}

// TestOpenRedactsPassword: no error of Open or of the backend it makes
// contains the URL's password.
func TestOpenRedactsPassword(t *testing.T) {
	const secret = "s3cret-Pa55"
	for _, u := range []string{
		"http://user:" + secret + "@127.0.0.1:6379/0",
		"redis://user:" + secret + "@127.0.0.1:6379/notanumber",
		"redis://user:" + secret + "@127.0.0.1:6379/0?dial_timeout=oops",
		"redis://user:" + secret + "@[::1:6379/0",
		"redis://user:" + secret + "@127.0.0.1:bad/0",
	} {
		_, err := redisbackend.Open(u, nil)
		if err == nil {
			t.Errorf("Open(%q): no error", strings.ReplaceAll(u, secret, "xxx"))
			continue
		}
		if !errors.Is(err, redisbackend.ErrInvalidInput) {
			t.Errorf("Open: %v, want ErrInvalidInput", err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Open error shows the password: %v", err)
		}
	}
	// A server that refuses the connection: the dial error stays reachable.
	port := freePort(t)
	b, err := redisbackend.Open("redis://user:"+secret+"@127.0.0.1:"+itoa(port)+"/0?max_retries=-1&dial_timeout=1s", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	err = b.Init(t.Context())
	if err == nil {
		t.Fatal("Init against a closed port: no error")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("Init error shows the password: %v", err)
	}
	var op *net.OpError
	if !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &op) {
		t.Errorf("Init error %v: want errors.Is ECONNREFUSED and errors.As *net.OpError", err)
	}
	_, err = b.Claim(t.Context(), anarchon.ClaimInput{Job: "j", Slot: 1, Token: "t"})
	if !errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), secret) {
		t.Errorf("Claim error %v: want ECONNREFUSED, no password", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestOwnership: Close closes a client that Open made, never one passed to
// New; after Close every method fails with anarchon.ErrClosed.
func TestOwnership(t *testing.T) {
	addr := redisAddr(t)
	c := newClient(t, addr, nil)
	b, err := redisbackend.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Errorf("the caller's client after Close: %v", err)
	}
	if err := b.Init(t.Context()); !errors.Is(err, anarchon.ErrClosed) {
		t.Errorf("Init after Close: %v", err)
	}
	if _, err := b.ServerTime(t.Context()); !errors.Is(err, anarchon.ErrClosed) {
		t.Errorf("ServerTime after Close: %v", err)
	}
	if _, err := b.WatchRuns(t.Context()); !errors.Is(err, anarchon.ErrClosed) {
		t.Errorf("WatchRuns after Close: %v", err)
	}

	ob, err := redisbackend.Open("redis://"+addr+"/0", &redisbackend.Options{Prefix: freshPrefix(t, addr)})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := ob.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := ob.Client().Ping(t.Context()).Err(); !errors.Is(err, redis.ErrClosed) {
		t.Errorf("Open's client after Close: %v, want redis.ErrClosed", err)
	}
	if err := ob.Close(t.Context()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestWatch: events arrive for release and finish; the channel closes when
// the subscription's connection breaks, and when the backend is closed.
func TestWatch(t *testing.T) {
	addr := redisAddr(t)
	prefix := freshPrefix(t, addr)
	direct := newBackend(t, addr, prefix, nil)
	p := startCutProxy(t, addr)
	watched := cutBackend(t, p, prefix)
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli()

	ch, err := watched.WatchRuns(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tok := randToken()
	rs := direct.Runs()
	if out, err := rs.Claim(t.Context(), anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "w", Slot: slot, Token: tok}, Lease: time.Hour}); err != nil || out.Kind != anarchon.OutcomeWon {
		t.Fatal(out, err)
	}
	if ok, err := rs.Release(t.Context(), anarchon.ReleaseInput{Job: "w", Slot: slot, Token: tok}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	select {
	case ev := <-ch:
		if ev != (anarchon.RunEvent{Job: "w", Slot: slot, Kind: anarchon.RunReleased}) {
			t.Errorf("event %+v, want release of w at %d", ev, slot)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no release event")
	}
	// Cut the subscription's connection on the next message.
	p.arm()
	if ok, err := rs.Finish(t.Context(), anarchon.FinishInput{Job: "w", Slot: slot, Token: tok, Status: anarchon.StatusHandedOver}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	p.waitCut(t)
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("event %+v after the cut, want the channel closed", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch channel still open after its connection broke")
	}

	// Closing the backend ends its watches.
	ch2, err := direct.WatchRuns(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := direct.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-ch2:
		if ok {
			t.Fatal("event after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch channel still open after Close")
	}
}

// TestJobNamesDistinct: names that differ only in characters the key
// encoding escapes get keys of their own.
func TestJobNamesDistinct(t *testing.T) {
	addr := redisAddr(t)
	b := newBackend(t, addr, freshPrefix(t, addr), nil)
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli()
	for _, job := range []string{"a}", "a%7D", "a%257D", "{a}", "a", "a}:run", "a:run"} {
		if ok, err := b.Claim(t.Context(), anarchon.ClaimInput{Job: job, Slot: slot, Token: randToken(), InstanceID: "x"}); err != nil || !ok {
			t.Errorf("job %q: first claim of the slot: %v, %v; want true", job, ok, err)
		}
	}
}

// TestHistoryLimitWithinSlot: with a limit, History still orders the
// records of one slot (attempts after takeovers) by anarchon.BuildHistory's
// rule, newest attempt first, whatever order Redis keeps them in.
func TestHistoryLimitWithinSlot(t *testing.T) {
	addr := redisAddr(t)
	b := newBackend(t, addr, freshPrefix(t, addr), nil)
	rs := b.Runs()
	ctx := t.Context()
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli()
	var toks []string
	for i := range 3 {
		tok := randToken()
		toks = append(toks, tok)
		out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "h", Slot: slot, Token: tok, InstanceID: "i" + itoa(i)}, Lease: time.Hour, MaxAttempts: 5})
		if err != nil || out.Kind != anarchon.OutcomeWon || out.Attempt != i+1 {
			t.Fatalf("claim %d: %+v %v", i, out, err)
		}
		if ok, err := rs.Release(ctx, anarchon.ReleaseInput{Job: "h", Slot: slot, Token: tok}); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	if ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: "h", Slot: slot - 60000, Token: randToken(), InstanceID: "old"}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	for _, limit := range []int{1, 2, 3} {
		recs, err := b.History(ctx, "h", limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != limit {
			t.Fatalf("History(%d): %d records", limit, len(recs))
		}
		for i, r := range recs {
			if want := toks[2-i]; r.Token != want || r.Attempt != 3-i {
				t.Errorf("History(%d)[%d]: token %s attempt %d, want %s attempt %d", limit, i, r.Token, r.Attempt, want, 3-i)
			}
		}
	}
	recs, err := b.History(ctx, "h", 0)
	if err != nil || len(recs) != 4 || recs[3].InstanceID != "old" {
		t.Errorf("History(0): %+v, %v; want 4 records, the older slot last", recs, err)
	}
}

// TestTTLTrimClaimOnly: HistoryTTL also drops claims that never got a
// result (their age is the claim time), keeps young ones, and the dropped
// slots stay claimed.
func TestTTLTrimClaimOnly(t *testing.T) {
	addr := redisAddr(t)
	b := newBackend(t, addr, freshPrefix(t, addr), nil)
	ctx := t.Context()
	const ttl = time.Second
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli() - 60000 // older than the TTL by slot
	old, young, saved := randToken(), randToken(), randToken()
	claim := func(s int64, tok string) {
		t.Helper()
		if ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: "ttl", Slot: s, Token: tok, InstanceID: "a"}); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	claim(slot, old)
	time.Sleep(ttl + ttl/2) // let the server's clock pass the TTL
	claim(slot+1000, young) // an old slot claimed just now: young by claim time
	claim(slot+2000, saved)
	if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: "ttl", Result: anarchon.StoredResult{Slot: slot + 2000, Token: saved, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}, HistorySize: 100, HistoryTTL: ttl}); err != nil {
		t.Fatal(err)
	}
	recs, err := b.History(ctx, "ttl", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range recs {
		got[r.Token] = true
	}
	if got[old] || !got[young] || !got[saved] || len(recs) != 2 {
		t.Errorf("History after TTL trim: old %v young %v saved %v (%d records); want only young and saved", got[old], got[young], got[saved], len(recs))
	}
	if ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: "ttl", Slot: slot, Token: randToken(), InstanceID: "b"}); err != nil || ok {
		t.Errorf("claim of the trimmed slot: %v, %v; want false", ok, err)
	}
}

// TestFinishResult: one script finishes the run and stores its result; a
// token that lost the run has its result stored as lease_lost.
func TestFinishResult(t *testing.T) {
	addr := redisAddr(t)
	b := newBackend(t, addr, freshPrefix(t, addr), nil)
	rs := b.Runs()
	rf := rs.(anarchon.ResultFinisher)
	ctx := t.Context()
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli()
	a, c := randToken(), randToken()
	claim := func(tok, inst string) anarchon.ClaimOutcome {
		t.Helper()
		out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "fr", Slot: slot, Token: tok, InstanceID: inst}, Lease: time.Hour, MaxAttempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := claim(a, "a"); out.Kind != anarchon.OutcomeWon {
		t.Fatal(out)
	}
	if ok, err := rs.Release(ctx, anarchon.ReleaseInput{Job: "fr", Slot: slot, Token: a}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if out := claim(c, "c"); out.Kind != anarchon.OutcomeWon || out.Attempt != 2 {
		t.Fatal(out)
	}
	now := time.Now()
	// The old holder's result: the run is c's now.
	ok, err := rf.FinishResult(ctx, anarchon.SaveResultInput{Job: "fr", Result: anarchon.StoredResult{Slot: slot, Token: a, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess, StartedAt: now, FinishedAt: now}, HistorySize: 10})
	if ok || err != nil {
		t.Fatalf("FinishResult by the old holder: %v, %v; want false", ok, err)
	}
	// The holder's result.
	for range 2 { // the repeat answers the same
		ok, err = rf.FinishResult(ctx, anarchon.SaveResultInput{Job: "fr", Result: anarchon.StoredResult{Slot: slot, Token: c, InstanceID: "c", Attempt: 2, Status: anarchon.StatusError, Error: "boom", StartedAt: now, FinishedAt: now}, HistorySize: 10})
		if !ok || err != nil {
			t.Fatalf("FinishResult by the holder: %v, %v; want true", ok, err)
		}
	}
	if out := claim(randToken(), "d"); out.Kind != anarchon.OutcomeDone || out.Status != anarchon.StatusError {
		t.Errorf("claim after FinishResult: %+v, want done, error", out)
	}
	recs, err := b.History(ctx, "fr", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]anarchon.RunRecord{}
	for _, r := range recs {
		got[r.Token] = r
	}
	if len(recs) != 2 || got[a].Status != anarchon.StatusLeaseLost || got[c].Status != anarchon.StatusError || got[c].Error != "boom" || got[c].Attempt != 2 {
		t.Errorf("History: %+v; want a lease_lost, c error boom attempt 2", recs)
	}
}

// TestPlainClaimsBeforeTheirResult: a plain claim enters the history index
// only with its result, so History and trimming must find claims without
// one (runs in flight, and claims whose instance died) in the run hash:
// History lists them in slot order with the indexed runs and cuts them by
// its limit; trimming counts them against the history size, drops the
// oldest first and keeps dropped slots claimed.
func TestPlainClaimsBeforeTheirResult(t *testing.T) {
	addr := redisAddr(t)
	b := newBackend(t, addr, freshPrefix(t, addr), nil)
	ctx := t.Context()
	slot0 := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli() - 3600_000
	slot := func(i int) int64 { return slot0 + int64(i)*1000 }
	toks := map[int]string{}
	claim := func(i int) {
		t.Helper()
		toks[i] = randToken()
		if ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: "p", Slot: slot(i), Token: toks[i], InstanceID: "a"}); err != nil || !ok {
			t.Fatalf("claim %d: %v %v", i, ok, err)
		}
	}
	save := func(i, size int) {
		t.Helper()
		r := anarchon.StoredResult{Slot: slot(i), Token: toks[i], InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}
		if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: "p", Result: r, HistorySize: size}); err != nil {
			t.Fatal(err)
		}
	}
	slots := func(limit int) []int {
		t.Helper()
		recs, err := b.History(ctx, "p", limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, r := range recs {
			out = append(out, int((r.Slot.UnixMilli()-slot0)/1000))
			if want := toks[out[len(out)-1]]; r.Token != want {
				t.Errorf("History: slot %d has token %s, want %s", out[len(out)-1], r.Token, want)
			}
		}
		return out
	}
	// Slots 1-3 get results, 4 and 6 are in flight, 5 gets a result.
	for i := 1; i <= 6; i++ {
		claim(i)
	}
	for _, i := range []int{1, 2, 3, 5} {
		save(i, 100)
	}
	if got, want := slots(0), []int{6, 5, 4, 3, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("History(0) = %v, want %v", got, want)
	}
	if got, want := slots(3), []int{6, 5, 4}; !slices.Equal(got, want) {
		t.Errorf("History(3) = %v, want %v", got, want)
	}
	recs, err := b.History(ctx, "p", 1)
	if err != nil || len(recs) != 1 || recs[0].Status != anarchon.StatusRunning {
		t.Errorf("History(1) = %+v, %v; want slot 6 running", recs, err)
	}
	// Claims 7-12 never get a result (their instance died); saving slot 13
	// with a history of 4 keeps the 4 newest records (13, 12, 11, 10) of
	// indexed and unindexed together.
	for i := 7; i <= 13; i++ {
		claim(i)
	}
	save(13, 4)
	if got, want := slots(0), []int{13, 12, 11, 10}; !slices.Equal(got, want) {
		t.Errorf("History(0) after trimming to 4 = %v, want %v", got, want)
	}
	for _, i := range []int{1, 4, 6, 9} {
		if ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: "p", Slot: slot(i), Token: randToken(), InstanceID: "b"}); err != nil || ok {
			t.Errorf("claim of trimmed slot %d: %v, %v; want false", i, ok, err)
		}
	}
	// The claim of an unindexed slot still answers its own token.
	if ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: "p", Slot: slot(12), Token: toks[12], InstanceID: "a"}); err != nil || !ok {
		t.Errorf("repeat claim of slot 12: %v, %v; want true", ok, err)
	}
}
