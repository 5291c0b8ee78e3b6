package sqlitefile_test

import (
	"bytes"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlitebackend"
	"github.com/anarchon/anarchon/sqlitefile"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A database file Open creates is readable by its owner only.
func TestFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	b, err := sqlitefile.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(t.Context())
	if err := b.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + sqlitebackend.LockFileSuffix} {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) && p != path {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m&0o077 != 0 {
			t.Errorf("%s has mode %v, want no access for group and others", filepath.Base(p), m)
		}
	}
}

// Open creates a missing file only, and an existing one is SQLite's to
// open; a symbolic link to a file yet to be made counts as missing: the
// file is made through it, with the owner-only mode, as a plain path's.
func TestOpenThroughLinkToMissingFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need a privilege on Windows")
	}
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target.db"), filepath.Join(dir, "link.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	b, err := sqlitefile.Open(link, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(t.Context())
	if err := b.Init(t.Context()); err != nil {
		t.Fatalf("Init through the link: %v", err)
	}
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("the link's target has mode %v, want 0600", m)
	}
}

// A database file deleted or replaced under the process is found at a
// claim: an ERROR names the file, and every claim fails closed with the
// permanent ErrFileReplaced, so this process and one that opened the new
// file never both win a slot.
func TestFileReplaced(t *testing.T) {
	for _, how := range []string{"deleted", "replaced"} {
		t.Run(how, func(t *testing.T) {
			defer sqlitebackend.SetFileCheckEvery(0)()
			path := filepath.Join(t.TempDir(), "a.db")
			var logs syncBuffer
			b, err := sqlitefile.Open(path, &sqlitebackend.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close(t.Context())
			ctx := t.Context()
			if err := b.Init(ctx); err != nil {
				t.Fatal(err)
			}
			slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
			if ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: "j", Slot: slot, Token: "a", InstanceID: "a", HistorySize: 10}); err != nil || !ok {
				t.Fatalf("claim: %v, %v", ok, err)
			}
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
			if how == "replaced" {
				nb, err := sqlitefile.Open(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := nb.Init(ctx); err != nil {
					t.Fatal(err)
				}
				// The new file forgot the claim: a process on it wins the slot.
				if ok, err := nb.Claim(ctx, anarchon.ClaimInput{Job: "j", Slot: slot + 1000, Token: "n", InstanceID: "n", HistorySize: 10}); err != nil || !ok {
					t.Fatalf("claim on the new file: %v, %v", ok, err)
				}
				nb.Close(ctx)
			}
			_, err = b.Claim(ctx, anarchon.ClaimInput{Job: "j", Slot: slot + 1000, Token: "b", InstanceID: "a", HistorySize: 10})
			if !errors.Is(err, sqlitebackend.ErrFileReplaced) || !anarchon.IsPermanent(err) {
				t.Fatalf("claim after the file was %s: %v, want a permanent ErrFileReplaced", how, err)
			}
			lb := anarchon.LeaseBackend(b)
			_, err = lb.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "j", Slot: slot + 2000, Token: "c", InstanceID: "a", HistorySize: 10}, Lease: time.Minute})
			if !errors.Is(err, sqlitebackend.ErrFileReplaced) {
				t.Fatalf("lease claim after the file was %s: %v", how, err)
			}
			// The store's clock, which the daemon's /readyz reads, fails
			// closed too: the process is not ready to claim.
			if _, err := b.ServerTime(ctx); !errors.Is(err, sqlitebackend.ErrFileReplaced) {
				t.Fatalf("ServerTime after the file was %s: %v, want ErrFileReplaced", how, err)
			}
			if n := strings.Count(logs.String(), "level=ERROR"); n != 1 || !strings.Contains(logs.String(), path) {
				t.Errorf("%d ERROR lines, want one naming %s: %q", n, path, logs.String())
			}
			if how == "deleted" {
				// Connections the pool opens now (all 16 taken at once)
				// fail to open ("unable to open database file"); they do
				// not make a new, empty file at the path.
				var conns []*sql.Conn
				for range 16 {
					c, err := b.DB().Conn(ctx)
					if err != nil {
						break
					}
					conns = append(conns, c)
					_ = c.PingContext(ctx)
				}
				for _, c := range conns {
					c.Close()
				}
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("after new connections, the deleted file's path: %v, want it absent", err)
				}
				if !strings.Contains(logs.String(), "was deleted") {
					t.Errorf("the ERROR does not say the file was deleted: %q", logs.String())
				}
			}
		})
	}
}

// TestPoolBounded checks the pool the package doc describes: a burst of
// concurrent claims uses at most 16 connections, and none is closed for
// being idle.
func TestPoolBounded(t *testing.T) {
	ctx := t.Context()
	b := open(t, 1)[0]
	const job = "burst"
	if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: job, HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Go(func() {
			if _, err := b.Claim(ctx, anarchon.ClaimInput{Job: job, Slot: int64(g) * 1000, Token: "t", InstanceID: "i"}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := b.DB().Stats()
	if st.MaxOpenConnections != 16 || st.OpenConnections > 16 {
		t.Errorf("pool: %d open, limit %d; want at most 16", st.OpenConnections, st.MaxOpenConnections)
	}
	if st.MaxIdleClosed != 0 || st.MaxIdleTimeClosed != 0 || st.MaxLifetimeClosed != 0 {
		t.Errorf("pool closed connections: %+v", st)
	}
}
