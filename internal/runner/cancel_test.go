package runner

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestRunCtxEndsHandlers races 200 plain runs against the end of the
// runner's context: a handler that began before it ended and one that
// began after both see their context end with its cause (Stop's
// ErrStopped), and carry the runner context's values. Handler contexts
// are not children of the runner's (begin), so this is what stands for
// context propagation. A handler left waiting is a deadlock, which
// synctest reports.
func TestRunCtxEndsHandlers(t *testing.T) {
	type key struct{}
	for range 20 {
		synctest.Test(t, func(t *testing.T) { runCtxEndsHandlers(t, key{}) })
	}
}

func runCtxEndsHandlers(t *testing.T, key any) {
	h := &fakeHost{}
	base, cancel := context.WithCancelCause(context.WithValue(context.Background(), key, "v"))
	defer cancel(nil)
	r := New[job](h, base, Config{ErrLeaseLost: errLost, ErrReplaced: errReplaced})
	var (
		mu     sync.Mutex
		causes []error
		values []any
	)
	h.exec = func(ctx context.Context, a *Attempt[job]) Result {
		<-ctx.Done()
		mu.Lock()
		causes = append(causes, context.Cause(ctx))
		values = append(values, ctx.Value(key))
		mu.Unlock()
		return Result{Status: StatusError}
	}
	var wg sync.WaitGroup
	const runs = 200
	for i := range runs {
		if i == runs/2 {
			wg.Go(func() { cancel(errStopped) })
		}
		a := r.Plain(job{}, "j", time.UnixMilli(1e12+int64(i)), 0)
		wg.Go(func() { a.Run(t.Context()) })
	}
	wg.Wait()
	if len(causes) != runs {
		t.Fatalf("%d of %d handlers ended", len(causes), runs)
	}
	for i := range causes {
		if !errors.Is(causes[i], errStopped) || values[i] != "v" {
			t.Fatalf("handler %d: cause %v, value %v; want %v and v", i, causes[i], values[i], errStopped)
		}
	}
	r.amu.Lock()
	left := len(r.active)
	r.amu.Unlock()
	if left != 0 {
		t.Fatalf("%d attempts still tracked after their handlers ended", left)
	}
}
