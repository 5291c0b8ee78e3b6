//go:build unix

package sqlitebackend

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// Two crossLocks on one lock file stand for two processes (flock(2) locks
// belong to the open file, so two opens in one process exclude each other
// as two processes do). The second waits while the first holds the file;
// a wait whose context ends returns at once with the context's cause, and
// the lock it took late is let go, and its turn given back, only once the
// first lets go.
func TestCrossLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db"+LockFileSuffix)
	a, b := openCrossLock(path), openCrossLock(path)
	if a == nil || b == nil {
		t.Fatal("lock file not opened")
	}
	defer a.f.Close()
	defer b.f.Close()
	never := func() { t.Error("leave called for a lock taken in time") }
	if held, err := a.lock(t.Context(), never); !held || err != nil {
		t.Fatalf("first lock = %v, %v; want held", held, err)
	}
	if err := flock(b.f, false); !wouldBlock(err) {
		t.Fatalf("second open's try while the first holds: %v; want EWOULDBLOCK", err)
	}

	stop := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(stop)
	left := make(chan struct{})
	if held, err := b.lock(ctx, func() { close(left) }); held || !errors.Is(err, stop) {
		t.Fatalf("second lock with its context ended = %v, %v; want not held, the cause", held, err)
	}
	select {
	case <-left:
		t.Fatal("turn given back while the first still holds the file")
	default:
	}
	a.unlock()
	<-left // the late lock was taken and let go
	if held, err := a.lock(t.Context(), never); !held || err != nil {
		t.Fatalf("lock after the late one let go = %v, %v; want held", held, err)
	}
	a.unlock()

	// A wait that the holder ends is held.
	if held, err := a.lock(t.Context(), never); !held || err != nil {
		t.Fatal(held, err)
	}
	got := make(chan bool)
	go func() {
		held, err := b.lock(t.Context(), never)
		got <- held && err == nil
	}()
	a.unlock()
	if !<-got {
		t.Fatal("second lock after the first let go: not held")
	}
	b.unlock()
}
