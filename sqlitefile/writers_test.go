package sqlitefile_test

import (
	"context"
	"fmt"
	"path/filepath"
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
