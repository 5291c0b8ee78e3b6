//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package sqlitefile_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlitebackend"
	"github.com/anarchon/anarchon/sqlitefile"
)

// writerChildEnv names the database a child process of
// TestWritersQueueAcrossProcesses writes to, and the child's number.
const writerChildEnv = "ANARCHON_SQLITE_WRITER_CHILD"

// TestWritersQueueAcrossProcesses runs three OS processes (this test's
// binary again) that write to one file through backends with a busy
// timeout of 1 ms, in batches of 100 claims that hold SQLite's write lock
// for milliseconds: the processes take turns on the lock file beside the
// database (sqlitebackend's package doc, "Writers across processes"), so
// none meets SQLITE_BUSY. With only SQLite's busy handler between them,
// batches fail (10 of 30 of one process in one run). Systems without
// flock(2) have no lock file, so the test is not built there.
func TestWritersQueueAcrossProcesses(t *testing.T) {
	if v := os.Getenv(writerChildEnv); v != "" {
		writerChild(t, v)
		return
	}
	path := filepath.Join(t.TempDir(), "queue.db")
	b, err := sqlitefile.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := b.PrepareJob(t.Context(), anarchon.PrepareJobInput{Job: "queue", HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	b.Close(context.Background())
	var wg sync.WaitGroup
	outs := make([][]byte, 3)
	errs := make([]error, 3)
	for i := range 3 {
		wg.Go(func() {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestWritersQueueAcrossProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d", writerChildEnv, path, i))
			outs[i], errs[i] = cmd.CombinedOutput()
		})
	}
	wg.Wait()
	for i := range 3 {
		if errs[i] != nil {
			t.Errorf("process %d: %v\n%s", i, errs[i], outs[i])
		}
	}
}

// writerChild is one process of TestWritersQueueAcrossProcesses.
func writerChild(t *testing.T, v string) {
	path, id, _ := strings.Cut(v, "|")
	b, err := sqlitefile.Open(path, &sqlitebackend.Options{BusyTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	ctx := t.Context()
	// Init retries SQLITE_BUSY on its own.
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Minute).UnixMilli()
	failed := 0
	for k := range 30 {
		in := make([]anarchon.ClaimInput, 100)
		for j := range in {
			// every process claims the same slots: two of three lose each
			in[j] = anarchon.ClaimInput{Job: "queue", Slot: base - int64(k*100+j)*1000, Token: fmt.Sprint(id, "-", k, "-", j), InstanceID: id}
		}
		if _, err := b.ClaimBatch(ctx, in); err != nil {
			if failed++; failed <= 3 {
				t.Errorf("batch %d: %v", k, err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of 30 batches failed", failed)
	}
}
