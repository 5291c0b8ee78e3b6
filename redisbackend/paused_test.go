package redisbackend_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

// cutAfter is a client hook that counts the commands sent and, once
// armed, lets n commands through and fails the next one as a lost
// connection would: the claimer dies between two calls.
type cutAfter struct {
	mu    sync.Mutex
	armed bool
	n     int
	sent  int // commands sent, cut or not
}

func (h *cutAfter) count() int { h.mu.Lock(); defer h.mu.Unlock(); return h.sent }

var errCut = errors.New("connection cut by the test")

func (h *cutAfter) arm(n int) { h.mu.Lock(); h.armed, h.n = true, n; h.mu.Unlock() }

func (h *cutAfter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cutAfter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.sent++
		cut := h.armed && h.n == 0
		if h.armed {
			h.armed = h.n > 0
			h.n--
		}
		h.mu.Unlock()
		if cut {
			cmd.SetErr(errCut)
			return errCut
		}
		return next(ctx, cmd)
	}
}

func (h *cutAfter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A claim that settles a paused job's new slot saves the slot's history
// record in the same step: a claimer whose connection is cut after its
// first command leaves either nothing (the plain claim, which then takes
// a second script that decides again) or the settled slot with its
// record (the lease claim, one script), never a settled slot without its
// record.
func TestPausedSlotRecordedInOneStep(t *testing.T) {
	addr := redisAddr(t)
	defer redisbackend.SetEpochCheckEvery(time.Hour)() // no sentinel read among the counted commands
	hook := &cutAfter{}
	client := newClient(t, addr, nil)
	client.AddHook(hook)
	b, err := redisbackend.New(client, &redisbackend.Options{Prefix: freshPrefix(t, addr)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	recorded := func(job string) {
		t.Helper()
		recs, err := b.History(ctx, job, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].Status != anarchon.StatusPaused || recs[0].Token != anarchon.PausedToken(slot) ||
			recs[0].Error != "job paused by ops: maintenance" {
			t.Fatalf("%s: history %+v, want one paused record naming who paused and why", job, recs)
		}
	}
	for _, job := range []string{"plain", "lease"} {
		if _, err := b.SetPaused(ctx, anarchon.PauseInput{Job: job, Paused: true, By: "ops", Reason: "maintenance"}); err != nil {
			t.Fatal(err)
		}
	}

	in := anarchon.ClaimInput{Job: "plain", Slot: slot, Token: "a", InstanceID: "a", HistorySize: 10}
	hook.arm(1)
	if _, err := b.Claim(ctx, in); !errors.Is(err, errCut) {
		t.Fatalf("plain claim cut after its first command: %v, want the cut", err)
	}
	in.Token, in.InstanceID = "b", "b"
	if ok, err := b.Claim(ctx, in); err != nil || ok {
		t.Fatalf("plain claim of a paused slot: %v, %v; want false", ok, err)
	}
	recorded("plain")

	c := anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "lease", Slot: slot, Token: "a", InstanceID: "a", HistorySize: 10},
		Lease: time.Minute}
	hook.arm(1)
	out, err := b.Runs().Claim(ctx, c)
	if err != nil || out.Kind != anarchon.OutcomePaused {
		t.Fatalf("lease claim with a cut after its first command: %+v, %v; want OutcomePaused in one command", out, err)
	}
	hook.mu.Lock()
	hook.armed = false // the History read below is not cut
	hook.mu.Unlock()
	recorded("lease")
}

// Each claim is one command (its script) on the hot path; the sentinel
// read of the data-loss check adds one at most once per epochCheckEvery
// (here: never, then at every claim), and a new slot of a paused job
// takes the plain claim a second script.
func TestClaimCommands(t *testing.T) {
	addr := redisAddr(t)
	hook := &cutAfter{}
	client := newClient(t, addr, nil)
	client.AddHook(hook)
	b, err := redisbackend.New(client, &redisbackend.Options{Prefix: freshPrefix(t, addr)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SetPaused(ctx, anarchon.PauseInput{Job: "paused", Paused: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	for _, every := range []time.Duration{time.Hour, 0} {
		restore := redisbackend.SetEpochCheckEvery(every)
		extra := 0
		if every == 0 {
			extra = 1
		}
		slot += 1000
		for _, c := range []struct {
			what  string
			claim func() error
			want  int
		}{
			{"plain", func() error {
				_, err := b.Claim(ctx, anarchon.ClaimInput{Job: "j", Slot: slot, Token: "a"})
				return err
			}, 1},
			{"plain repeat", func() error {
				_, err := b.Claim(ctx, anarchon.ClaimInput{Job: "j", Slot: slot, Token: "a"})
				return err
			}, 1},
			{"lease", func() error {
				_, err := b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "l", Slot: slot, Token: "a"}, Lease: time.Minute})
				return err
			}, 1},
			{"plain, paused", func() error {
				_, err := b.Claim(ctx, anarchon.ClaimInput{Job: "paused", Slot: slot, Token: "a"})
				return err
			}, 2},
			{"lease, paused", func() error {
				_, err := b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "paused", Slot: slot + 1, Token: "a"}, Lease: time.Minute})
				return err
			}, 1},
		} {
			before := hook.count()
			if err := c.claim(); err != nil {
				t.Fatalf("%s: %v", c.what, err)
			}
			if n := hook.count() - before; n != c.want+extra {
				t.Errorf("%s (sentinel read every %v): %d commands, want %d", c.what, every, n, c.want+extra)
			}
		}
		restore()
	}
}
