//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package sqlitebackend

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// twoLocks opens two crossLocks on one lock file. They stand for two
// processes: flock(2) locks belong to the open file, so two opens in one
// process exclude each other as two processes do.
func twoLocks(t *testing.T) (a, b *crossLock) {
	db := filepath.Join(t.TempDir(), "db")
	a, b = openCrossLock(db+LockFileSuffix, db), openCrossLock(db+LockFileSuffix, db)
	if a == nil || b == nil {
		t.Fatal("lock file not opened")
	}
	t.Cleanup(func() { a.f.Close(); b.f.Close() })
	return a, b
}

// lockNow takes l, which nothing else holds.
func lockNow(t *testing.T, l *crossLock) {
	t.Helper()
	if held, err := l.lock(t.Context(), time.Hour); !held || err != nil {
		t.Fatalf("lock of a free file = %v, %v; want held", held, err)
	}
}

// A wait the holder ends takes the lock: the waiter was blocked in
// flock(2) (its non-blocking try had failed) when the holder let go.
func TestCrossLockWait(t *testing.T) {
	a, b := twoLocks(t)
	lockNow(t, a)
	if err := flock(b.f, false); !wouldBlock(err) {
		t.Fatalf("second open's try while the first holds: %v; want EWOULDBLOCK", err)
	}
	got := make(chan bool)
	go func() {
		held, err := b.lock(t.Context(), time.Hour)
		got <- held && err == nil
	}()
	for !b.waiting.Load() {
		runtime.Gosched()
	}
	a.unlock()
	if !<-got {
		t.Fatal("wait ended by the holder: not held")
	}
	b.unlock()
}

// A wait given up, because its context ended or the limit passed,
// returns at once, not held; until its late lock is let go the process's
// writers go without the lock file (a second lock answers not held at
// once); the late lock is let go as soon as it is taken, and the file is
// free again.
func TestCrossLockGivenUp(t *testing.T) {
	stop := errors.New("stopped")
	for _, tc := range []struct {
		name    string
		ctx     func(context.Context) context.Context
		limit   time.Duration
		wantErr error
	}{
		{"context", func(ctx context.Context) context.Context {
			ctx, cancel := context.WithCancelCause(ctx)
			cancel(stop)
			return ctx
		}, time.Hour, stop},
		{"limit", func(ctx context.Context) context.Context { return ctx }, time.Millisecond, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := twoLocks(t)
			settled := make(chan struct{})
			b.settled = func() { close(settled) }
			lockNow(t, a)
			if held, err := b.lock(tc.ctx(t.Context()), tc.limit); held || !errors.Is(err, tc.wantErr) {
				t.Fatalf("lock given up = %v, %v; want not held, %v", held, err, tc.wantErr)
			}
			if held, err := b.lock(t.Context(), time.Hour); held || err != nil {
				t.Fatalf("lock while a wait given up is pending = %v, %v; want not held at once", held, err)
			}
			select {
			case <-settled:
				t.Fatal("late lock settled while the first open still holds the file")
			default:
			}
			a.unlock()
			<-settled // the late lock was taken and let go
			lockNow(t, a)
			a.unlock()
			lockNow(t, b)
			b.unlock()
		})
	}
}
