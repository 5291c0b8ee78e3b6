package sqlitebackend

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestCheckpointDue: a checkpoint is due only after new writes, once the
// writers are idle for CheckpointIdle, or CheckpointEvery after the last
// one while they never are.
func TestCheckpointDue(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		name string
		s    checkpointState
		want bool
	}{
		{"nothing written since", checkpointState{now: t0.Add(time.Hour), writes: 7, done: 7, lastWrite: t0}, false},
		{"idle long enough", checkpointState{now: t0.Add(CheckpointIdle), writes: 8, done: 7, lastWrite: t0, lastRun: t0}, true},
		{"last write too recent", checkpointState{now: t0.Add(CheckpointIdle - time.Millisecond), writes: 8, done: 7, lastWrite: t0, lastRun: t0}, false},
		{"a writer in the turn", checkpointState{now: t0.Add(time.Second), inTurn: 1, writes: 8, done: 7, lastWrite: t0, lastRun: t0}, false},
		{"never idle, CheckpointEvery passed", checkpointState{now: t0.Add(CheckpointEvery), inTurn: 2, writes: 8, done: 7, lastWrite: t0.Add(CheckpointEvery), lastRun: t0}, true},
	} {
		if got := checkpointDue(tc.s); got != tc.want {
			t.Errorf("%s: checkpointDue = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCheckpointerWaitsForIdleWriters drives the checkpointer's loop in
// fake time: no checkpoint while nothing is written; one once a write's
// writers have been idle for CheckpointIdle, not before; none while the
// writers keep the turn busy, until CheckpointEvery; a failed checkpoint
// is tried again at the next look; none after Close.
func TestCheckpointerWaitsForIdleWriters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &writerQueue{turn: make(chan struct{}, 1), path: "test.db"}
		var runs atomic.Int64
		var fail atomic.Bool
		c := &checkpointer{
			q: func() *writerQueue { return q },
			run: func(context.Context) error {
				runs.Add(1)
				if fail.Load() {
					return errors.New("database is locked")
				}
				return nil
			},
			log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		c.start()
		defer c.close()
		want := func(what string, n int64) {
			t.Helper()
			synctest.Wait()
			if got := runs.Load(); got != n {
				t.Fatalf("%s: %d checkpoints, want %d", what, got, n)
			}
		}
		time.Sleep(time.Second)
		want("nothing written", 0)

		// One write: the checkpoint comes after CheckpointIdle, at the
		// first look after it.
		q.enter()
		time.Sleep(30 * time.Millisecond)
		q.leave(time.Now(), true)
		time.Sleep(CheckpointIdle / 2)
		want("a write, not idle long enough", 0)
		time.Sleep(CheckpointIdle + CheckpointIdle/2)
		want("a write, then idle", 1)
		time.Sleep(time.Second)
		want("nothing written since", 1)

		// Writers that never leave the turn idle: one checkpoint per
		// CheckpointEvery.
		busy := make(chan struct{})
		go func() {
			for {
				q.enter()
				select {
				case <-busy:
					q.leave(time.Now(), true)
					return
				case <-time.After(10 * time.Millisecond):
				}
				q.leave(time.Now(), true)
			}
		}()
		defer close(busy)
		// The last checkpoint was about a second ago.
		time.Sleep(CheckpointEvery - time.Second - 2*CheckpointIdle)
		want("busy writers, before CheckpointEvery", 1)
		time.Sleep(2 * CheckpointIdle)
		want("busy writers, CheckpointEvery after the last", 2)
		time.Sleep(CheckpointEvery - 2*CheckpointIdle)
		want("busy writers, before the next CheckpointEvery", 2)
		time.Sleep(2 * CheckpointIdle)
		want("busy writers, the next CheckpointEvery", 3)

		// A failed checkpoint is tried again.
		fail.Store(true)
		busy <- struct{}{}
		time.Sleep(2 * CheckpointIdle)
		want("the busy writers' last writes, failing", 4)
		time.Sleep(CheckpointIdle)
		want("tried again", 5)
		fail.Store(false)
		time.Sleep(CheckpointIdle)
		want("succeeded", 6)
		time.Sleep(time.Second)
		want("nothing written since", 6)

		c.close()
		q.enter()
		q.leave(time.Now(), true)
		time.Sleep(time.Second)
		want("after close", 6)
	})
}
