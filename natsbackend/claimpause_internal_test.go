package natsbackend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/nats-io/nats.go/jetstream"
)

// Plain claims of a paused job: repeats of one token, elections and a
// pause beside the claims. stepKV lets a test hold a call on a backend of
// its own.

// stepKV hands Update to the test's function first; a function that
// answers ok false lets the call through.
type stepKV struct {
	jetstream.KeyValue
	update func(ctx context.Context, key string, rev uint64) (uint64, error, bool)
}

func (k *stepKV) Update(ctx context.Context, key string, val []byte, rev uint64) (uint64, error) {
	if f := k.update; f != nil {
		if r, err, ok := f(ctx, key, rev); ok {
			return r, err
		}
	}
	return k.KeyValue.Update(ctx, key, val, rev)
}

// openStepped opens n backends on one fresh store (deleted when t ends),
// each with its KeyValue wrapped in a stepKV.
func openStepped(t *testing.T, n int, timeout time.Duration) ([]*Backend, []*stepKV) {
	t.Helper()
	url := ServerURL(t)
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	o := &Options{Bucket: "anarchon_s_" + hex.EncodeToString(id), HistoryStream: "ANARCHON_S_" + hex.EncodeToString(id),
		HistorySubject: "anarchon.s." + hex.EncodeToString(id), Timeout: timeout}
	bs, ks := make([]*Backend, n), make([]*stepKV, n)
	for i := range bs {
		b, err := Open(url, o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.ready(t.Context()); err != nil {
			t.Fatal(err)
		}
		b.mu.Lock()
		ks[i] = &stepKV{KeyValue: b.kv}
		b.kv = ks[i]
		b.mu.Unlock()
		bs[i] = b
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = bs[0].js.DeleteKeyValue(ctx, o.Bucket)
		_ = bs[0].js.DeleteStream(ctx, o.HistoryStream)
		for _, b := range bs {
			_ = b.Close(ctx)
		}
	})
	return bs, ks
}

func setPaused(t *testing.T, b *Backend, job string, paused bool) {
	t.Helper()
	if _, err := b.SetPaused(t.Context(), anarchon.PauseInput{Job: job, Paused: paused, By: "ops"}); err != nil {
		t.Fatal(err)
	}
}

func claimAs(b *Backend, job string, slot int64, tok string) (bool, error) {
	return b.Claim(context.Background(), anarchon.ClaimInput{Job: job, Slot: slot, Token: tok, InstanceID: "i-" + tok, HistorySize: 10})
}

// pausedRecords counts the history records of job's slot with status
// paused.
func pausedRecords(t *testing.T, b *Backend, job string, slot int64) int {
	t.Helper()
	recs, err := b.History(t.Context(), job, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Slot.UnixMilli() == slot && r.Status == anarchon.StatusPaused {
			n++
		}
	}
	return n
}

func pastSlot() int64 { return time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli() }

// A slot won before its job was paused keeps its winner when the
// winner's repeat, made after the pause, loses its first copy of the
// Create to an election and finds its token in the key with the second.
func TestClaimRepeatAcrossElectionKeepsWin(t *testing.T) {
	defer SetNoFastPath(true)()
	bs, ks := openStepped(t, 1, 10*time.Second)
	b := bs[0]
	slot := pastSlot()
	if ok, err := claimAs(b, "j", slot, "a"); !ok || err != nil {
		t.Fatalf("first claim: %v, %v", ok, err)
	}
	setPaused(t, b, "j", true)
	var once sync.Once
	ks[0].update = func(ctx context.Context, key string, rev uint64) (r uint64, err error, ok bool) {
		once.Do(func() {
			b.elect.elected() // a leader is elected while the copy waits
			<-ctx.Done()
			err, ok = ctx.Err(), true
		})
		return 0, err, ok
	}
	if ok, err := claimAs(b, "j", slot, "a"); !ok || err != nil {
		t.Errorf("repeat of the won claim after the pause: %v, %v; want true", ok, err)
	}
	if n := pausedRecords(t, b, "j", slot); n != 0 {
		t.Errorf("%d paused records of a slot won before the pause, want 0", n)
	}
}

// Many claims of one slot race on two handles, two goroutines under each
// token (repeats), some with a stale clock sample, while the job is
// paused before them, paused beside them, or not paused: at most one
// token wins; a slot paused before the claims is won by none and
// recorded paused once; no slot is both won and recorded paused. (Claims
// that read the pause state beside their Create, not before it, failed
// these checks: a repeat could win a slot its first call was settling as
// paused, or settle one the first call had answered won.)
func TestClaimPausedRaces(t *testing.T) {
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	bs, _ := openStepped(t, 2, 10*time.Second)
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	for round := range rounds {
		slot := base + int64(round)*1000
		before := round%3 == 0
		setPaused(t, bs[0], "s", before)
		var wg sync.WaitGroup
		if round%3 == 1 {
			wg.Go(func() { setPaused(t, bs[1], "s", true) })
		}
		var mu sync.Mutex
		won := map[string]bool{}
		for g := range 16 {
			wg.Go(func() {
				b := bs[g%2]
				if g%4 == 3 {
					b.StaleClock()
				}
				tok := fmt.Sprintf("t%d", g%8)
				ok, err := claimAs(b, "s", slot, tok)
				if err != nil {
					t.Errorf("round %d: claim by %s: %v", round, tok, err)
				}
				if ok {
					mu.Lock()
					won[tok] = true
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		n := pausedRecords(t, bs[0], "s", slot)
		switch {
		case len(won) > 1:
			t.Errorf("round %d: %d tokens won: %v", round, len(won), won)
		case before && (len(won) > 0 || n != 1):
			t.Errorf("round %d, paused before: won by %v, %d paused records; want none, 1", round, won, n)
		case len(won) > 0 && n > 0:
			t.Errorf("round %d: won by %v and recorded paused", round, won)
		}
	}
}
