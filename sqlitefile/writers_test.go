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

// TestWritersQueueInProcess opens four backends on one file in one
// process, each with a busy timeout of 1 ms, and has eight goroutines
// write through them at once (plain claims, batches, lease claims): the
// writers of one process take turns on the file's queue before asking
// SQLite for the write lock (sqlitebackend's package doc, "Writers in one
// process"), so none meets SQLITE_BUSY. Without the queue they would
// contend in SQLite, and with a 1 ms timeout most would fail.
func TestWritersQueueInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	var bs []*sqlitebackend.Backend
	for range 4 {
		b, err := sqlitefile.Open(path, &sqlitebackend.Options{BusyTimeout: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(context.Background()) })
		bs = append(bs, b)
	}
	ctx := t.Context()
	// Init one at a time: Init's check retries SQLITE_BUSY on its own.
	for _, b := range bs {
		if err := b.Init(ctx); err != nil {
			t.Fatal(err)
		}
	}
	const job = "queue"
	if err := bs[0].PrepareJob(ctx, anarchon.PrepareJobInput{Job: job, HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	slot := func(k int) int64 { return time.Now().Add(-time.Hour).Truncate(time.Minute).UnixMilli() - int64(k)*1000 }
	var wg sync.WaitGroup
	errs := make(chan error, 8*rounds)
	for g := range 8 {
		wg.Go(func() {
			b := bs[g%len(bs)]
			inst := fmt.Sprint("w", g)
			for k := range rounds {
				in := anarchon.ClaimInput{Job: job, Slot: slot(k), Token: fmt.Sprint(inst, "-", k), InstanceID: inst}
				var err error
				switch g % 3 {
				case 0:
					_, err = b.Claim(ctx, in)
				case 1:
					_, err = b.ClaimBatch(ctx, []anarchon.ClaimInput{in, {Job: job, Slot: slot(k + rounds), Token: in.Token + "b", InstanceID: inst}})
				default:
					in.Job = job + "-lease"
					_, err = b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: in, Lease: time.Minute})
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d, round %d: %w", g, k, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 5 {
			t.Error(err)
		}
	}
	if n > 0 {
		t.Fatalf("%d of %d writes failed", n, 8*rounds)
	}
}

// writerChildEnv names the database a child process of
// TestWritersQueueAcrossProcesses writes to, and the child's number.
const writerChildEnv = "ANARCHON_SQLITE_WRITER_CHILD"

// TestWritersQueueAcrossProcesses runs three OS processes (this test's
// binary again) that write to one file through backends with a busy
// timeout of 1 ms, in batches of 100 claims that hold SQLite's write lock
// for milliseconds: the processes take turns on the lock file beside the
// database (sqlitebackend's package doc, "Writers across processes"), so
// none meets SQLITE_BUSY. With only SQLite's busy handler between them,
// most batches fail.
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
