//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package sqlitebackend

import (
	"errors"
	"os"
	"syscall"
)

// openCrossLock opens the lock file at path, creating it with the
// permission bits of the database file at db (0600 when it cannot be
// read), so that whoever may write the database may take the lock; nil
// when it cannot be opened (a read-only directory, say): the processes'
// writers then meet only SQLite's busy handler.
func openCrossLock(path, db string) *crossLock {
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(db); err == nil {
		mode = fi.Mode().Perm()
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, mode)
	if err != nil {
		return nil
	}
	return &crossLock{f: f}
}

// flock takes an exclusive lock of f, waiting for it when wait is true.
func flock(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

func funlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

func wouldBlock(err error) bool { return errors.Is(err, syscall.EWOULDBLOCK) }
