package sqlitebackend

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"time"
)

// CheckpointIdle is how long the process's writers of the file must have
// been idle before the backend checkpoints the WAL (Options.Checkpoints),
// and how often it looks.
const CheckpointIdle = 100 * time.Millisecond

// CheckpointEvery is the longest the backend leaves new writes in the WAL
// while its writers are never idle for CheckpointIdle
// (Options.Checkpoints): it then checkpoints beside them.
const CheckpointEvery = 5 * time.Second

// checkpointer runs the WAL checkpoints of a backend's file itself, off
// the writers' turn (Options.Checkpoints). SQLite's automatic checkpoint
// runs inside the COMMIT that takes the WAL past its threshold (PRAGMA
// wal_autocheckpoint, 1,000 pages by default), while that writer still
// holds the file's turn (queuedConn): every other writer of every process
// waits for the copy of the WAL into the database and its fsyncs. One
// instance's third of a 10,000-job burst's lease claims, in batches of
// 256 in the queue's order, wrote 1,353 WAL frames (pages)
// (sqlitefile's TestBatchesInNameOrderWriteFewerPages), so a burst's
// first claims passed the threshold several times (bench/HISTORY.md's
// §8 of 2026-12-05 on 8fc7759, 4a04876, has the bursts before and after). A PASSIVE
// checkpoint from another connection takes only the checkpoint lock:
// writers go on appending to the WAL meanwhile.
type checkpointer struct {
	q   func() *writerQueue // the file's queue, nil until Init found it
	run func(ctx context.Context) error
	log *slog.Logger

	stop context.CancelFunc
	done chan struct{}
}

// checkpointState is what checkpointDue decides from.
type checkpointState struct {
	now       time.Time
	inTurn    int64     // writers holding or waiting for the turn
	lastWrite time.Time // when the last writer gave the turn back
	writes    uint64    // writes finished so far
	done      uint64    // writes finished when the last checkpoint began
	lastRun   time.Time // when the last checkpoint began
}

// checkpointDue reports whether a checkpoint is due: something was
// written since the last one, and the writers are idle (none in or
// waiting for the turn, the last one gone for CheckpointIdle), or
// CheckpointEvery has passed since the last checkpoint.
func checkpointDue(s checkpointState) bool {
	if s.writes == s.done {
		return false
	}
	if s.inTurn == 0 && s.now.Sub(s.lastWrite) >= CheckpointIdle {
		return true
	}
	return s.now.Sub(s.lastRun) >= CheckpointEvery
}

// startCheckpointer starts the goroutine that checkpoints db's WAL; its
// stop ends it and waits for it.
func startCheckpointer(db *sql.DB, qc *queuedConn, log *slog.Logger) *checkpointer {
	c := &checkpointer{
		q: qc.queue.Load,
		run: func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
			return err
		},
		log: log,
	}
	c.start()
	return c
}

func (c *checkpointer) start() {
	ctx, stop := context.WithCancel(context.Background())
	c.stop, c.done = stop, make(chan struct{})
	go c.loop(ctx)
}

func (c *checkpointer) loop(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(CheckpointIdle)
	defer t.Stop()
	var done uint64
	lastRun := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		q := c.q()
		if q == nil {
			continue
		}
		s := q.activity(time.Now())
		s.done, s.lastRun = done, lastRun
		if !checkpointDue(s) {
			continue
		}
		// A failure (another connection's checkpoint holds the lock,
		// an I/O error) leaves the frames in the WAL for the next try;
		// the writers are not held up either way.
		lastRun = s.now
		if err := c.run(ctx); err != nil {
			if ctx.Err() == nil {
				c.log.Debug("sqlitebackend: WAL checkpoint", "file", q.path, "err", err)
			}
			continue
		}
		done = s.writes
	}
}

// close stops the goroutine and waits for it to end.
func (c *checkpointer) close() {
	c.stop()
	<-c.done
}

// writerActivity is what a writerQueue counts for the checkpointer.
type writerActivity struct {
	mu        sync.Mutex
	inTurn    int64
	lastWrite time.Time
	writes    uint64
}

// enter counts a writer that asks for the turn.
func (a *writerActivity) enter() {
	a.mu.Lock()
	a.inTurn++
	a.mu.Unlock()
}

// leave counts a writer that gave the turn back at now, having written
// in it when wrote (false: its wait ended before it got the turn).
func (a *writerActivity) leave(now time.Time, wrote bool) {
	a.mu.Lock()
	a.inTurn--
	if wrote {
		a.lastWrite = now
		a.writes++
	}
	a.mu.Unlock()
}

// activity returns the counts at now.
func (a *writerActivity) activity(now time.Time) checkpointState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return checkpointState{now: now, inTurn: a.inTurn, lastWrite: a.lastWrite, writes: a.writes}
}
