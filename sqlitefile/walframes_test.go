package sqlitefile_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlitefile"
)

// TestBatchesInNameOrderWriteFewerPages measures what the scheduler's
// batches in job-name order (SPEC §4, "Batches") save SQLite: one
// instance's wave of a burst (a third of 10,000 jobs, shuffled with a
// fixed seed) claimed in batches of 256, lease and plain, in the queue's
// order and in name order, counting the WAL frames (pages) each wrote
// (Open runs no automatic checkpoint, so the WAL keeps them all). The
// figures in run.go's prepareWave and sqlitebackend's doc,
// "Checkpoints", are this test's.
func TestBatchesInNameOrderWriteFewerPages(t *testing.T) {
	frames := map[string]int{}
	for _, order := range []string{"random", "sorted"} {
		ctx := t.Context()
		// Checkpoints only between the counts: one that restarts the WAL
		// within a count loses the frames before it.
		b, err := sqlitefile.OpenManualCheckpoints(filepath.Join(t.TempDir(), "f.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close(ctx)
		if err := b.Init(ctx); err != nil {
			t.Fatal(err)
		}
		const k = 10_000
		names := make([]string, k)
		for i := range names {
			names[i] = fmt.Sprintf("burst-%06d", i)
			if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: names[i]}); err != nil {
				t.Fatal(err)
			}
		}
		rand.New(rand.NewPCG(1, 2)).Shuffle(k, func(i, j int) { names[i], names[j] = names[j], names[i] })
		wave := names[:k/3]
		if order == "sorted" {
			slices.Sort(wave)
		}
		walFrames := func() int {
			var busy, log, done int
			if err := b.DB().QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done); err != nil {
				t.Fatal(err)
			}
			return log
		}
		slot := time.Now().Add(-time.Second).UnixMilli()
		for _, lease := range []bool{false, true} {
			walFrames() // every frame copied: the next write starts the WAL over
			if _, err := b.Claim(ctx, anarchon.ClaimInput{Job: "restart", Slot: slot, Token: fmt.Sprint(lease), InstanceID: "i"}); err != nil {
				t.Fatal(err)
			}
			from := walFrames()
			for chunk := range slices.Chunk(wave, 256) {
				// Every claim must win, or fewer frames would mean fewer writes.
				if lease {
					in := make([]anarchon.RunClaim, len(chunk))
					for i, job := range chunk {
						in[i] = anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: slot + 1, Token: "t", InstanceID: "i"}, Lease: time.Minute}
					}
					out, err := b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(ctx, in)
					if err != nil {
						t.Fatal(err)
					}
					for i, a := range out {
						if a.Err != nil || a.Outcome.Kind != anarchon.OutcomeWon {
							t.Fatalf("%s: %+v", in[i].Job, a)
						}
					}
					continue
				}
				in := make([]anarchon.ClaimInput, len(chunk))
				for i, job := range chunk {
					in[i] = anarchon.ClaimInput{Job: job, Slot: slot, Token: "t", InstanceID: "i"}
				}
				out, err := b.ClaimBatch(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				for i, a := range out {
					if a.Err != nil || !a.Won {
						t.Fatalf("%s: %+v", in[i].Job, a)
					}
				}
			}
			name := fmt.Sprintf("%s lease=%v", order, lease)
			frames[name] = walFrames() - from
			t.Logf("%s: %d WAL frames for %d claims", name, frames[name], len(wave))
		}
	}
	for _, lease := range []string{"false", "true"} {
		if r, s := frames["random lease="+lease], frames["sorted lease="+lease]; s*3/2 > r {
			t.Errorf("lease=%s: %d WAL frames in name order against %d in random order, want at most two thirds", lease, s, r)
		}
	}
}
