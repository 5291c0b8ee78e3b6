package sqlitebackend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/anarchon/anarchon"
)

// ErrFileReplaced is returned by every claim once the backend found that
// its database file was deleted or replaced under the process
// (Options.File). It is permanent: the process keeps the old file open,
// which no new process will see, so claiming on it could run a slot that
// another process runs from the new file. Reopen the database (restart).
var ErrFileReplaced = anarchon.Permanent(errors.New("sqlitebackend: the database file was replaced or deleted under the process; claims fail closed"))

// fileCheckEvery is how often a claim looks at the file.
var fileCheckEvery = time.Second

// fileGuard remembers the identity of the database file at open and
// compares the path's current file with it.
type fileGuard struct {
	path string
	log  *slog.Logger
	orig os.FileInfo

	mu      sync.Mutex
	checked time.Time
	lost    error // set once the file is found replaced
}

func newFileGuard(path string, log *slog.Logger) (*fileGuard, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("sqlitebackend: database file: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &fileGuard{path: path, log: log, orig: fi, checked: time.Now()}, nil
}

func (g *fileGuard) check(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lost != nil {
		return g.lost
	}
	now := time.Now()
	if now.Sub(g.checked) < fileCheckEvery {
		return nil
	}
	g.checked = now
	fi, err := os.Stat(g.path)
	var what string
	switch {
	case errors.Is(err, os.ErrNotExist):
		what = "deleted"
	case err != nil:
		return nil // cannot tell; the claim meets the file system itself
	case !os.SameFile(fi, g.orig):
		what = "replaced by another file"
	default:
		return nil
	}
	g.lost = fmt.Errorf("%w: %s was %s", ErrFileReplaced, g.path, what)
	g.log.LogAttrs(ctx, slog.LevelError, "sqlite: the database file was "+what+" under the process: every claim, lease and history record in it is lost to the processes that open the path now; this process stops claiming (fail closed) until it opens the database again",
		slog.String("path", g.path))
	return g.lost
}
