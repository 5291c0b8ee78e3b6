package anarchon_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// claimCounter counts one instance's lease claims on a shared membackend.
// Its watch is the store's, hidden, or broken (WatchRuns always fails).
type claimCounter struct {
	*membackend.Backend
	claims atomic.Int64
	mu     sync.Mutex
	times  []time.Time // when each claim was sent
}

func (c *claimCounter) Runs() anarchon.RunStore {
	return backupClaims{RunStore: c.Backend.Runs(), c: c}
}

// claimAfter returns the time of the first claim sent at t or after (zero
// if none).
func (c *claimCounter) claimAfter(t time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, at := range c.times {
		if !at.Before(t) {
			return at
		}
	}
	return time.Time{}
}

type backupClaims struct {
	anarchon.RunStore
	c *claimCounter
}

func (r backupClaims) Claim(ctx context.Context, rc anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	r.c.claims.Add(1)
	r.c.mu.Lock()
	r.c.times = append(r.c.times, time.Now())
	r.c.mu.Unlock()
	return r.RunStore.Claim(ctx, rc)
}

// pollingCounter is a claimCounter without a Watcher.
type pollingCounter struct{ c *claimCounter }

func (p pollingCounter) Name() string                   { return p.c.Name() }
func (p pollingCounter) DedupeWindow() time.Duration    { return p.c.DedupeWindow() }
func (p pollingCounter) Init(ctx context.Context) error { return p.c.Init(ctx) }
func (p pollingCounter) PrepareJob(ctx context.Context, in anarchon.PrepareJobInput) error {
	return p.c.PrepareJob(ctx, in)
}
func (p pollingCounter) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	return p.c.Claim(ctx, in)
}
func (p pollingCounter) RecordManualRun(ctx context.Context, in anarchon.ClaimInput) (int64, error) {
	return p.c.RecordManualRun(ctx, in)
}
func (p pollingCounter) SaveResult(ctx context.Context, in anarchon.SaveResultInput) error {
	return p.c.SaveResult(ctx, in)
}
func (p pollingCounter) History(ctx context.Context, job string, limit int) ([]anarchon.RunRecord, error) {
	return p.c.History(ctx, job, limit)
}
func (p pollingCounter) Close(ctx context.Context) error { return p.c.Close(ctx) }
func (p pollingCounter) Runs() anarchon.RunStore         { return p.c.Runs() }

// brokenWatch is a claimCounter whose watch never comes up.
type brokenWatch struct{ pollingCounter }

func (brokenWatch) WatchRuns(context.Context) (<-chan anarchon.RunEvent, error) {
	return nil, errors.New("watch refused")
}

// breakingWatch is a claimCounter whose watch is the store's until the
// time at, when its channel closes; it cannot be watched again after.
type breakingWatch struct {
	pollingCounter
	at time.Time
}

func (b breakingWatch) WatchRuns(ctx context.Context) (<-chan anarchon.RunEvent, error) {
	if !time.Now().Before(b.at) {
		return nil, errors.New("watch refused")
	}
	wctx, cancel := context.WithDeadline(ctx, b.at)
	in, err := b.c.Backend.WatchRuns(wctx)
	if err != nil {
		cancel()
		return nil, err
	}
	out := make(chan anarchon.RunEvent)
	go func() {
		defer close(out)
		defer cancel()
		for ev := range in {
			select {
			case out <- ev:
			case <-wctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// A backup standing by while another instance runs a long leased run asks
// the store again only when the lease it was told of runs out, when the
// store has a Watcher: not every PollInterval. Without a Watcher, or while
// the watch is broken, it polls every PollInterval; a watch that breaks
// wakes it to ask at once. The holder heartbeats
// every Lease/3, so each answer the backup gets ends at least 2/3 of a
// lease later: over a run of length d it claims at most about
// d/(2·Lease/3) times. With the watch up, the holder's finish (its
// RunFinished event) ends the backup's stand-by without another claim.
func TestBackupWaitsForLeaseEndWithWatcher(t *testing.T) {
	const (
		poll  = time.Second
		lease = time.Minute
		run   = 30 * time.Minute
	)
	// In "watch breaks", the watch ends this long after the first slot.
	const breakAfter = 10*time.Minute + 30*time.Second
	for _, tc := range []struct {
		name   string
		wrap   func(c *claimCounter, slot time.Time) anarchon.Backend
		polled bool // the backup must poll every PollInterval
	}{
		{"watcher", func(c *claimCounter, _ time.Time) anarchon.Backend { return c }, false},
		{"no watcher", func(c *claimCounter, _ time.Time) anarchon.Backend { return pollingCounter{c} }, true},
		{"broken watch", func(c *claimCounter, _ time.Time) anarchon.Backend { return brokenWatch{pollingCounter{c}} }, true},
		{"watch breaks", func(c *claimCounter, slot time.Time) anarchon.Backend {
			return breakingWatch{pollingCounter{c}, slot.Add(breakAfter)}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The first slot is at the next whole day; stop just after the run ends.
				next := time.Now().Truncate(24 * time.Hour).Add(24 * time.Hour)
				store := membackend.New(nil)
				var mu sync.Mutex
				var runs []anarchon.Run
				var ended time.Time // when the handler returned
				h := func(ctx context.Context, r *anarchon.Run) error {
					mu.Lock()
					runs = append(runs, *r)
					mu.Unlock()
					select {
					case <-time.After(run):
					case <-ctx.Done():
					}
					mu.Lock()
					ended = time.Now()
					mu.Unlock()
					return nil
				}
				counters := map[string]*claimCounter{}
				var ss []*anarchon.Scheduler
				for _, id := range []string{"a", "b"} {
					c := &claimCounter{Backend: store}
					counters[id] = c
					s := newSched(t, tc.wrap(c, next), id, &anarchon.Options{PollInterval: poll})
					if err := s.Every("long", 24*time.Hour, h, &anarchon.JobOptions{Lease: lease}); err != nil {
						t.Fatal(err)
					}
					mustStart(t, s)
					ss = append(ss, s)
				}
				time.Sleep(time.Until(next) + run + lease/2)
				mu.Lock()
				got := append([]anarchon.Run(nil), runs...)
				mu.Unlock()
				stopAll(t, ss...)
				if len(got) != 1 {
					t.Fatalf("runs %+v, want exactly one", got)
				}
				backup := counters["a"]
				if got[0].InstanceID == "a" {
					backup = counters["b"]
				}
				n := backup.claims.Load()
				t.Logf("the backup claimed %d times during the %v run", n, run)
				if tc.name == "watch breaks" {
					// Woken when the watch broke, the backup asks at once
					// and polls from then on.
					broke := next.Add(breakAfter)
					if at := backup.claimAfter(broke); at.IsZero() || at.Sub(broke) > time.Millisecond {
						t.Fatalf("first claim after the watch broke at %v: %v, want at once", broke, at)
					}
					if want := int64((run-breakAfter)/poll) - 5; n < want {
						t.Fatalf("backup claimed %d times, want at least %d (polling after the watch broke)", n, want)
					}
					return
				}
				if tc.polled {
					// One claim per PollInterval, give or take the first
					// and last.
					if want := int64(run/poll) - 5; n < want {
						t.Fatalf("backup claimed %d times during a %v run, want at least %d (it must poll every %v)", n, run, want, poll)
					}
					return
				}
				// The holder's finish sends RunFinished, which settles the
				// slot for the backup: it does not ask again.
				mu.Lock()
				end := ended
				mu.Unlock()
				if end.IsZero() {
					t.Fatal("the handler did not return")
				}
				if at := backup.claimAfter(end); !at.IsZero() {
					t.Fatalf("the backup claimed at %v, after the run finished at %v and its RunFinished event", at, end)
				}
				if limit := int64(run/(2*lease/3)) + 3; n > limit {
					t.Fatalf("backup claimed %d times during a %v run with a %v lease and a Watcher, want at most %d (it polled every PollInterval)", n, run, lease, limit)
				}
				if n < 2 {
					t.Fatalf("backup claimed %d times, want it to stand by and ask again at the lease's ends", n)
				}
			})
		})
	}
}
