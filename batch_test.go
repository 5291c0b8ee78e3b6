package anarchon_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// countStore is one instance's handle to a shared membackend store that
// counts the claim calls it forwards: single claims and batches, plain
// and under leases.
type countStore struct {
	*membackend.Backend
	claims, batches       atomic.Int64  // Claim, ClaimBatch
	runClaims, runBatches atomic.Int64  // RunStore.Claim, ClaimRuns
	beats, beatBatches    atomic.Int64  // Heartbeat, Heartbeats
	beatsBatched          atomic.Int64  // heartbeats sent in Heartbeats
	saves, saveBatches    atomic.Int64  // SaveResult, SaveResults
	finishes, finBatches  atomic.Int64  // FinishResult, FinishResults
	records, recBatches   atomic.Int64  // RecordClaim, RecordClaims
	recordsBatched        atomic.Int64  // claims recorded in RecordClaims
	sizes                 sync.Map      // batch size -> count, of both kinds
	delay                 time.Duration // each first-claim batch takes this long (a store's round trip)

	mu        sync.Mutex
	batchJobs [][]string // the jobs of each first-claim batch of either kind, in its order
}

// keep records the jobs of a first-claim batch.
func (c *countStore) keep(n int, job func(i int) string) {
	jobs := make([]string, n)
	for i := range jobs {
		jobs[i] = job(i)
	}
	c.mu.Lock()
	c.batchJobs = append(c.batchJobs, jobs)
	c.mu.Unlock()
}

func (c *countStore) Unwrap() anarchon.Backend { return c.Backend }

func (c *countStore) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	c.claims.Add(1)
	return c.Backend.Claim(ctx, in)
}

func (c *countStore) ClaimBatch(ctx context.Context, in []anarchon.ClaimInput) ([]anarchon.ClaimAnswer, error) {
	c.batches.Add(1)
	c.size(len(in))
	c.keep(len(in), func(i int) string { return in[i].Job })
	time.Sleep(c.delay)
	return c.Backend.ClaimBatch(ctx, in)
}

func (c *countStore) RecordClaim(ctx context.Context, in anarchon.ClaimInput) error {
	c.records.Add(1)
	return c.Backend.RecordClaim(ctx, in)
}

func (c *countStore) RecordClaims(ctx context.Context, in []anarchon.ClaimInput) ([]error, error) {
	c.recBatches.Add(1)
	c.recordsBatched.Add(int64(len(in)))
	return c.Backend.RecordClaims(ctx, in)
}

func (c *countStore) size(n int) {
	v, _ := c.sizes.LoadOrStore(n, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func (c *countStore) Runs() anarchon.RunStore {
	return countRuns{RunStore: c.Backend.Runs().(*membackend.RunStore), c: c}
}

type countRuns struct {
	*membackend.RunStore
	c *countStore
}

func (r countRuns) Claim(ctx context.Context, rc anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	r.c.runClaims.Add(1)
	return r.RunStore.Claim(ctx, rc)
}

func (r countRuns) ClaimRuns(ctx context.Context, in []anarchon.RunClaim) ([]anarchon.RunClaimAnswer, error) {
	r.c.runBatches.Add(1)
	r.c.size(len(in))
	r.c.keep(len(in), func(i int) string { return in[i].Job })
	time.Sleep(r.c.delay)
	return r.RunStore.ClaimRuns(ctx, in)
}

func (c *countStore) SaveResult(ctx context.Context, in anarchon.SaveResultInput) error {
	c.saves.Add(1)
	return c.Backend.SaveResult(ctx, in)
}

func (c *countStore) SaveResults(ctx context.Context, in []anarchon.SaveResultInput) ([]error, error) {
	c.saveBatches.Add(1)
	return c.Backend.SaveResults(ctx, in)
}

func (r countRuns) FinishResult(ctx context.Context, in anarchon.SaveResultInput) (bool, error) {
	r.c.finishes.Add(1)
	return r.RunStore.FinishResult(ctx, in)
}

func (r countRuns) FinishResults(ctx context.Context, in []anarchon.SaveResultInput) ([]anarchon.HeldAnswer, error) {
	r.c.finBatches.Add(1)
	return r.RunStore.FinishResults(ctx, in)
}

func (r countRuns) Heartbeat(ctx context.Context, in anarchon.HeartbeatInput) (bool, error) {
	r.c.beats.Add(1)
	return r.RunStore.Heartbeat(ctx, in)
}

func (r countRuns) Heartbeats(ctx context.Context, in []anarchon.HeartbeatInput) ([]anarchon.HeldAnswer, error) {
	r.c.beatBatches.Add(1)
	r.c.beatsBatched.Add(int64(len(in)))
	return r.RunStore.Heartbeats(ctx, in)
}

// K jobs on one schedule, no jitter: the K slots due at one instant reach
// the store from each of three schedulers as ceil(K/BatchSize) batches
// (of even sizes) and no single first claim, and every slot runs exactly
// once across the three. Plain and leased claims, the default batch size
// and a small one that makes batches of the three schedulers overlap in
// part.
// TestBurstBatchesInNameOrder: a burst's batches take its slots in the
// order of their jobs' names, whatever the order the jobs were added in,
// so that each batch claims one range of names and no two batches'
// ranges interleave (SPEC §4, "Batches"); every slot runs once.
func TestBurstBatchesInNameOrder(t *testing.T) {
	for _, leased := range []bool{false, true} {
		t.Run(fmt.Sprintf("leased=%v", leased), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &countStore{Backend: membackend.New(nil)}
				s := newSched(t, c, "s", &anarchon.Options{BatchSize: 50})
				var ran atomic.Int32
				h := func(context.Context, *anarchon.Run) error { ran.Add(1); return nil }
				const k = 600
				for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(k) {
					if err := s.Every(fmt.Sprintf("job-%04d", i), time.Minute, h, &anarchon.JobOptions{NoLease: !leased}); err != nil {
						t.Fatal(err)
					}
				}
				mustStart(t, s)
				time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + 30*time.Second)))
				stopAll(t, s)
				if n := ran.Load(); n != k {
					t.Fatalf("%d runs, want %d", n, k)
				}
				c.mu.Lock()
				defer c.mu.Unlock()
				if len(c.batchJobs) != k/50 {
					t.Fatalf("%d batches, want %d", len(c.batchJobs), k/50)
				}
				for i, b := range c.batchJobs {
					if !slices.IsSorted(b) {
						t.Errorf("batch %d is not in name order: %v", i, b)
					}
					for j, o := range c.batchJobs[:i] {
						if b[0] <= o[len(o)-1] && o[0] <= b[len(b)-1] {
							t.Errorf("batches %d (%s…%s) and %d (%s…%s) interleave", j, o[0], o[len(o)-1], i, b[0], b[len(b)-1])
						}
					}
				}
			})
		})
	}
}

func TestBurstClaimsInBatches(t *testing.T) {
	for _, tc := range []struct {
		name      string
		leased    bool
		k, size   int
		wantBatch int64
	}{
		{"plain/default", false, 600, 0, 3},
		{"plain/size7", false, 100, 7, 15},
		{"leased/default", true, 600, 0, 3},
		{"leased/size7", true, 100, 7, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := membackend.New(nil)
				var ran sync.Map // job -> *atomic.Int32
				var early atomic.Int32
				h := func(_ context.Context, run *anarchon.Run) error {
					if time.Now().Before(run.Slot) {
						early.Add(1)
					}
					v, _ := ran.LoadOrStore(run.Job, new(atomic.Int32))
					v.(*atomic.Int32).Add(1)
					return nil
				}
				var handles []*countStore
				var ss []*anarchon.Scheduler
				for i := range 3 {
					c := &countStore{Backend: store}
					s := newSched(t, c, fmt.Sprintf("s%d", i), &anarchon.Options{BatchSize: tc.size})
					for k := range tc.k {
						if err := s.Every(fmt.Sprintf("job-%04d", k), time.Minute, h, &anarchon.JobOptions{NoLease: !tc.leased}); err != nil {
							t.Fatal(err)
						}
					}
					handles, ss = append(handles, c), append(ss, s)
				}
				for _, s := range ss {
					mustStart(t, s)
				}
				// One minute boundary passes; the slots of the next are
				// not yet due.
				time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + 30*time.Second)))
				stopAll(t, ss...)
				for k := range tc.k {
					job := fmt.Sprintf("job-%04d", k)
					n := int32(0)
					if v, ok := ran.Load(job); ok {
						n = v.(*atomic.Int32).Load()
					}
					if n != 1 {
						t.Errorf("%s ran %d times, want 1", job, n)
					}
				}
				if n := early.Load(); n > 0 {
					t.Errorf("%d runs started before their slot", n)
				}
				// Each won plain claim is recorded once, in one call with
				// the other wins of its batch; a batch that won one slot
				// records it alone.
				var recorded int64
				for i, c := range handles {
					singles, batched := c.records.Load(), c.recBatches.Load()
					recorded += singles + c.recordsBatched.Load()
					if tc.leased && singles+batched != 0 || singles > c.batches.Load() || batched > c.batches.Load() {
						t.Errorf("scheduler %d: %d single and %d batched claim records for %d claim batches", i, singles, batched, c.batches.Load())
					}
				}
				if want := int64(tc.k); !tc.leased && recorded != want {
					t.Errorf("%d claims recorded, want %d", recorded, want)
				}
				for i, c := range handles {
					batches, singles := c.batches.Load(), c.claims.Load()
					if tc.leased {
						// Backups standing by learn of the holders'
						// finishes from the store's events and claim no
						// more (TestBurstBackupsPollInBatches: without a
						// Watcher, their polls come in batches too).
						batches, singles = c.runBatches.Load(), c.runClaims.Load()
					}
					if batches != tc.wantBatch || singles != 0 {
						t.Errorf("scheduler %d: %d batches and %d single claims for %d slots due at once, want %d and 0", i, batches, singles, tc.k, tc.wantBatch)
					}
					// The no-op handlers end together: their results go
					// in batches too, never one call per run.
					singles, batched := c.saves.Load(), c.saveBatches.Load()
					if tc.leased {
						singles, batched = c.finishes.Load(), c.finBatches.Load()
					}
					if singles != 0 || batched > 2*tc.wantBatch {
						t.Errorf("scheduler %d: results in %d single calls and %d batches, want none single and at most %d batches", i, singles, batched, 2*tc.wantBatch)
					}
					c.sizes.Range(func(k, v any) bool {
						size := tc.size
						if size == 0 {
							size = anarchon.DefaultBatchSize
						}
						if n := k.(int); n > size || n < size/2 {
							t.Errorf("scheduler %d: %d batches of %d claims, want at most %d and at least half that", i, v.(*atomic.Int64).Load(), n, size)
						}
						return true
					})
				}
			})
		})
	}
}

// Without batches (BatchSize 1), every slot of a burst is a single claim,
// as before batches existed, and still runs once.
func TestBurstBatchSizeOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &countStore{Backend: membackend.New(nil)}
		var ran atomic.Int32
		s := newSched(t, c, "a", &anarchon.Options{BatchSize: 1})
		for k := range 20 {
			if err := s.Every(fmt.Sprintf("job-%d", k), time.Minute, func(context.Context, *anarchon.Run) error { ran.Add(1); return nil }, &anarchon.JobOptions{NoLease: true}); err != nil {
				t.Fatal(err)
			}
		}
		mustStart(t, s)
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + 30*time.Second)))
		stopAll(t, s)
		if got := ran.Load(); got != 20 {
			t.Errorf("%d runs, want 20", got)
		}
		if b, n := c.batches.Load(), c.claims.Load(); b != 0 || n != 20 {
			t.Errorf("%d batches and %d single claims, want 0 and 20", b, n)
		}
	})
}

// The heartbeats of the runs of a burst come due together and go to the
// store in batches: each scheduler renews all the leases it holds in one
// Heartbeats call per round (every Lease/3), never one call per run, and
// with BatchSize 1 one call per run as before.
func TestBurstHeartbeatsInBatches(t *testing.T) {
	for _, size := range []int{0, 1} {
		t.Run(fmt.Sprintf("size%d", size), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const k, lease, work = 120, 3 * time.Second, 10 * time.Second
				handles, n := leasedBurst(t, k, work, lease, &anarchon.Options{BatchSize: size},
					func(c *countStore) anarchon.Backend { return c })
				if n != k {
					t.Fatalf("%d runs, want %d", n, k)
				}
				// A run of 10 s renews every second: 9 or 10 rounds.
				var total int64
				for i, c := range handles {
					singles, batches, batched := c.beats.Load(), c.beatBatches.Load(), c.beatsBatched.Load()
					total += singles + batched
					if size == 1 {
						if batches != 0 {
							t.Errorf("scheduler %d: %d Heartbeats calls with BatchSize 1", i, batches)
						}
						continue
					}
					if singles != 0 || batches > 11 {
						t.Errorf("scheduler %d: %d single heartbeats and %d batches of %d; want none single and one batch per round (at most 11)", i, singles, batches, batched)
					}
				}
				if total < 9*k || total > 11*k {
					t.Errorf("%d heartbeats in all for %d runs of 10 s renewed every second, want 9 to 11 each", total, k)
				}
			})
		})
	}
}

// slowRecords is a store whose claim records take a second, in one call
// per batch.
type slowRecords struct{ *membackend.Backend }

func (c *slowRecords) Unwrap() anarchon.Backend { return c.Backend }

func (c *slowRecords) RecordClaims(ctx context.Context, in []anarchon.ClaimInput) ([]error, error) {
	time.Sleep(time.Second)
	return c.Backend.RecordClaims(ctx, in)
}

// A batch's claim records do not hold its claim call's permit
// (MaxClaimCalls): 200 batches of 2 slots due at once, records of 1 s,
// MaxLate 1.5 s; every slot runs. Held through the record, the 129th
// batch on waited 2 s for a permit and 272 of the 400 slots were missed.
func TestRecordsHoldNoClaimPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var missed, ran atomic.Int64
		s := newSched(t, &slowRecords{membackend.New(nil)}, "s0", &anarchon.Options{BatchSize: 2, OnEvent: func(e anarchon.Event) {
			if e.Kind == anarchon.EventSlotSkipped && e.Status == anarchon.StatusMissed {
				missed.Add(1)
			}
		}})
		plainMinuteBurst(t, s, 400, 1500*time.Millisecond, &ran)
		if ran.Load() != 400 || missed.Load() != 0 {
			t.Errorf("%d of 400 slots ran, %d missed", ran.Load(), missed.Load())
		}
	})
}

// plainMinuteBurst registers n plain jobs job-0000… on s, every minute
// with maxLate, each counting its runs in ran; it starts s, passes one
// minute boundary (every job's slot at once) and stops s.
func plainMinuteBurst(t *testing.T, s *anarchon.Scheduler, n int, maxLate time.Duration, ran *atomic.Int64) {
	t.Helper()
	for k := range n {
		err := s.Every(fmt.Sprintf("job-%04d", k), time.Minute, func(context.Context, *anarchon.Run) error {
			ran.Add(1)
			return nil
		}, &anarchon.JobOptions{NoLease: true, MaxLate: maxLate})
		if err != nil {
			t.Fatal(err)
		}
	}
	mustStart(t, s)
	time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + 30*time.Second)))
	stopAll(t, s)
}

// slowPlainClaims is a store whose plain claims take two seconds each,
// alone or in a batch.
type slowPlainClaims struct{ *membackend.Backend }

func (c *slowPlainClaims) Unwrap() anarchon.Backend { return c.Backend }

func (c *slowPlainClaims) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	time.Sleep(2 * time.Second)
	return c.Backend.Claim(ctx, in)
}

func (c *slowPlainClaims) ClaimBatch(ctx context.Context, in []anarchon.ClaimInput) ([]anarchon.ClaimAnswer, error) {
	time.Sleep(2 * time.Second)
	return c.Backend.ClaimBatch(ctx, in)
}

// A plain slot already past MaxLate when its claim can be sent is claimed
// all the same, and its winner records it missed (SPEC §3, step 3): 200
// slots due at once, claims of 2 s one slot a call, MaxClaimCalls (64) at
// a time, MaxLate 3 s. The first 64 run; the next 64 are won 4 s late and
// recorded missed; the rest are late before their claims are sent, and
// were neither claimed nor recorded before: now each has its one record,
// which says so.
func TestPlainLateSlotRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		var ran atomic.Int64
		s := newSched(t, &slowPlainClaims{membackend.New(nil)}, "s0", &anarchon.Options{BatchSize: 1})
		plainMinuteBurst(t, s, n, 3*time.Second, &ran)
		missed, lateAtClaim := 0, 0
		for k := range n {
			hist, err := s.History(context.Background(), fmt.Sprintf("job-%04d", k), 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(hist) != 1 {
				t.Fatalf("job-%04d: %d records, want 1: %+v", k, len(hist), hist)
			}
			if hist[0].Status == anarchon.StatusMissed {
				missed++
				if strings.HasPrefix(hist[0].Error, "the claim came ") {
					lateAtClaim++
				}
			}
		}
		if r := ran.Load(); r+int64(missed) != n || lateAtClaim == 0 {
			t.Errorf("%d ran, %d recorded missed (%d found late before their claims), of %d; want every slot run or recorded, some late before their claims", r, missed, lateAtClaim, n)
		}
	})
}

// leasedBurst runs k leased jobs on one minute schedule on three
// schedulers sharing store, each through its own countStore (given to the
// scheduler as wrap makes it), with opts and a handler that works for
// work (or until cancelled); it passes one minute boundary, stops them,
// and returns the handles and how many handlers ran.
func leasedBurst(t *testing.T, k int, work, lease time.Duration, opts *anarchon.Options, wrap func(*countStore) anarchon.Backend) ([]*countStore, int32) {
	t.Helper()
	store := membackend.New(nil)
	var ran atomic.Int32
	h := func(ctx context.Context, _ *anarchon.Run) error {
		ran.Add(1)
		select {
		case <-time.After(work):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	var handles []*countStore
	var ss []*anarchon.Scheduler
	for i := range 3 {
		c := &countStore{Backend: store}
		s := newSched(t, wrap(c), fmt.Sprintf("s%d", i), opts)
		for j := range k {
			if err := s.Every(fmt.Sprintf("job-%03d", j), time.Minute, h, &anarchon.JobOptions{Lease: lease}); err != nil {
				t.Fatal(err)
			}
		}
		handles, ss = append(handles, c), append(ss, s)
	}
	for _, s := range ss {
		mustStart(t, s)
	}
	time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + 30*time.Second)))
	stopAll(t, ss...)
	return handles, ran.Load()
}

// noWatchCount is a countStore without a Watcher, as SQLite and MySQL
// are, with every batch ability kept (unlike noWatch): its fields named
// after the watch methods hide the ones its stores promote, and it has no
// Unwrap through which As would find them.
type noWatchCount struct {
	*countStore
	WatchRuns, Unwrap struct{}
}

func (n noWatchCount) Runs() anarchon.RunStore {
	return noWatchRuns{countRuns: n.countStore.Runs().(countRuns)}
}

type noWatchRuns struct {
	countRuns
	WatchRuns struct{}
}

// On a store without a Watcher, the backups of a burst poll while the
// holders run, every PollInterval, and their claims go to the store in
// batches with the other backups polling at that instant, never one call
// per backup: K slots held by three schedulers for 5 s cost each
// scheduler about one ClaimRuns call per poll, not K × 2/3 per poll.
func TestBurstBackupsPollInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const k, work, poll = 90, 5 * time.Second, time.Second
		handles, n := leasedBurst(t, k, work, 30*time.Second, &anarchon.Options{PollInterval: poll},
			func(c *countStore) anarchon.Backend { return noWatchCount{countStore: c} })
		if n != k {
			t.Errorf("%d runs, want %d", n, k)
		}
		var batched int64
		for i, c := range handles {
			singles, batches := c.runClaims.Load(), c.runBatches.Load()
			batched += batches
			t.Logf("scheduler %d: %d single lease claims and %d batches", i, singles, batches)
			// The first claims (one batch), then, where it lost slots, a
			// poll each second of the 5 s run: about 6 batches. Claimed
			// one by one, the backups of k/3 slots lost to each of two
			// schedulers would send about k/3 × 2 × 5 = 300.
			if singles != 0 || batches > 10 {
				t.Errorf("scheduler %d: %d single lease claims and %d batches, want 0 and at most 10", i, singles, batches)
			}
		}
		// Each scheduler's first claims, and the polls of at least one
		// that lost slots: the batches carry the polls.
		if min := 3 + int64(work/poll); batched < min {
			t.Errorf("%d lease claim batches in all, want the backups' polls among them (at least %d)", batched, min)
		}
	})
}
