//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd)

package sqlitebackend

import (
	"errors"
	"os"
)

// openCrossLock has no lock file to offer where there is no flock(2)
// (Windows, AIX, Solaris): the processes' writers meet only SQLite's busy
// handler.
func openCrossLock(string, string) *crossLock { return nil }

var errNoFlock = errors.New("sqlitebackend: no flock on this system")

func flock(*os.File, bool) error { return errNoFlock }
func funlock(*os.File) error     { return errNoFlock }
func wouldBlock(error) bool      { return false }
