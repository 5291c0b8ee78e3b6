package natsbackend_test

import (
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon/natsbackend"
)

// TestRebindDoesNotHoldOtherCalls holds one call inside a rebind (as a
// bind waits out Options.Timeout while a stream's leader is being
// elected) and claims meanwhile from another goroutine: the claim must be
// answered on the handles the backend has, not wait for the rebind.
// Before, every call queued behind the binding one.
func TestRebindDoesNotHoldOtherCalls(t *testing.T) {
	url := natsURL(t)
	o := freshOptions(t, url)
	b := openN(t, url, o, 1)[0]
	ctx := t.Context()
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}

	entered, release := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	defer natsbackend.SetRebindHook(func() {
		once.Do(func() { close(entered) })
		<-release
	})()
	let := func() { releaseOnce.Do(func() { close(release) }) }
	defer let()

	slot := time.Now().Add(-time.Second).UnixMilli()
	b.MarkRebind()
	first := make(chan error, 1)
	go func() {
		won, err := b.Claim(ctx, in("rebind", slot, "t1", "a"))
		if err == nil && !won {
			t.Errorf("the claim that rebound lost its free slot")
		}
		first <- err
	}()
	<-entered

	second := make(chan error, 1)
	go func() {
		won, err := b.Claim(ctx, in("rebind", slot-1000, "t2", "a"))
		if err == nil && !won {
			t.Errorf("the claim made during the rebind lost its free slot")
		}
		second <- err
	}()
	// Not a speed bound: only a claim that waits for the rebind (which
	// is held until this test lets it go) takes this long.
	select {
	case err := <-second:
		if err != nil {
			t.Errorf("claim during a rebind: %v", err)
		}
	case <-time.After(30 * time.Second):
		let()
		t.Fatal("a claim waited for another call's rebind")
	}
	let()
	if err := <-first; err != nil {
		t.Errorf("the claim that rebound: %v", err)
	}
	// The rebind is done: the next call binds no more.
	if _, err := b.Claim(ctx, in("rebind", slot-2000, "t3", "a")); err != nil {
		t.Errorf("claim after the rebind: %v", err)
	}
}
