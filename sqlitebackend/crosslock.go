package sqlitebackend

import (
	"context"
	"os"
)

// crossLock is this process's hold on a database's lock file: the
// writers of different processes take turns on an exclusive flock(2) of
// it before they ask SQLite for the write lock. The kernel wakes a waiter
// the moment the holder lets go, where SQLite's busy handler would sleep
// 1, 2, 5, … 100 ms between tries and let a process that just committed
// take the lock again first (the package doc, "Writers across
// processes"). A crossLock is only used by the holder of its file's
// process-wide turn, so one call at a time waits on it.
type crossLock struct {
	f *os.File // open for the life of the process
}

// lock takes the lock file, waiting while another process holds it, or
// until ctx ends. held is false, with a nil error, when the file cannot be
// locked (a file system without flock): the writer then goes on to
// SQLite's own lock, as without a lock file. When ctx ends first, the
// wait goes on in the background; once it returns, the lock is let go
// and leave is called, so that the process's next writer cannot take the
// turn while a late lock is still held. Otherwise the caller calls
// unlock, then leave, itself.
func (l *crossLock) lock(ctx context.Context, leave func()) (held bool, err error) {
	switch err := flock(l.f, false); {
	case err == nil:
		return true, nil
	case !wouldBlock(err):
		return false, nil
	}
	done := make(chan error, 1)
	go func() { done <- flock(l.f, true) }()
	select {
	case err := <-done:
		return err == nil, nil
	case <-ctx.Done():
		go func() {
			if <-done == nil {
				l.unlock()
			}
			leave()
		}()
		return false, context.Cause(ctx)
	}
}

// unlock lets the lock file go.
func (l *crossLock) unlock() { _ = funlock(l.f) }
