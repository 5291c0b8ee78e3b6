package sqlitebackend

import (
	"context"
	"os"
	"sync/atomic"
	"time"
)

// crossLock is this process's hold on a database's lock file: the
// writers of different processes take turns on an exclusive flock(2) of
// it before they ask SQLite for the write lock. The kernel wakes a waiter
// the moment the holder lets go, where SQLite's busy handler would sleep
// 1, 2, 5, … 100 ms between tries and let a process that just committed
// take the lock again first (the package doc, "Writers across
// processes"). A crossLock is only used by the holder of its file's
// process-wide turn, so one call at a time waits on it.
//
// The lock file only orders the writers: SQLite's own lock still decides
// who writes, so a writer that goes on without the lock file (it could
// not be had in time) is only slower, never wrong.
type crossLock struct {
	f *os.File // open for the life of the process

	// abandoned is set while a wait given up (its context ended, or it
	// took longer than the busy timeout) may still get the lock: writers
	// then go on without the lock file until that late lock is let go,
	// so that no writer takes for its own a lock that is about to be
	// let go under it.
	abandoned atomic.Bool
	waiting   atomic.Bool // a blocking wait is under way (for tests)
	settled   func()      // called when a late lock has been let go (for tests)
}

// lock takes the lock file, waiting while another process holds it, for
// up to limit or until ctx ends. held is false, with a nil error, when
// the writer is to go on without the lock file: the file cannot be locked
// (a file system without flock), an earlier wait given up may still get
// it, or limit passed (a process that holds it for that long is stuck,
// and SQLite's busy handler, bounded by the same timeout, takes over).
// When ctx ends first, the error is its cause. A wait given up goes on in
// the background and lets the lock go at once if it gets it. When held,
// the caller lets the lock go with unlock.
func (l *crossLock) lock(ctx context.Context, limit time.Duration) (held bool, err error) {
	if l.abandoned.Load() {
		return false, nil
	}
	switch err := flock(l.f, false); {
	case err == nil:
		return true, nil
	case !wouldBlock(err):
		return false, nil
	}
	done := make(chan error, 1)
	l.waiting.Store(true)
	go func() { done <- flock(l.f, true) }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-done:
		l.waiting.Store(false)
		return err == nil, nil
	case <-t.C:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	l.abandoned.Store(true)
	go func() {
		if <-done == nil {
			l.unlock()
		}
		l.waiting.Store(false)
		l.abandoned.Store(false)
		if l.settled != nil {
			l.settled()
		}
	}()
	return false, err
}

// unlock lets the lock file go.
func (l *crossLock) unlock() { _ = funlock(l.f) }
