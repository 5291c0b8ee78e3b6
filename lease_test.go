package anarchon_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// instance is one process's view of a shared membackend: its heartbeats can
// be made to fail (a stalled or partitioned winner) and its watch hidden.
type instance struct {
	*membackend.Backend
	failHB     atomic.Bool
	failFinish atomic.Bool   // Finish fails as if the store were unreachable
	hangHB     atomic.Bool   // heartbeats do not return, whatever their context says,
	unhang     chan struct{} // until this is closed
	// hangOnWin sets hangHB when a first attempt's claim is won, before
	// the answer returns: the holder's renewals never get through, not
	// even one sent as its handler starts.
	hangOnWin atomic.Bool
	// slowWin delays the first answer to each won first attempt by this
	// long (ns) after the store recorded it: a reply held up on the way
	// back. lateToken is the token whose last won answer was so delayed
	// (a handler must not be running on it).
	slowWin   atomic.Int64
	slowEvery atomic.Bool // delay every won answer, of any attempt, by slowWin
	wins      atomic.Int64
	mu        sync.Mutex
	slowed    map[string]bool
	lateToken string
}

func (i *instance) Runs() anarchon.RunStore {
	return &instanceRuns{RunStore: i.Backend.Runs(), inst: i}
}

type instanceRuns struct {
	anarchon.RunStore
	inst *instance
}

var errPartition = errors.New("store unreachable")

func (r *instanceRuns) Finish(ctx context.Context, in anarchon.FinishInput) (bool, error) {
	if r.inst.failFinish.Load() {
		return false, errPartition
	}
	return r.RunStore.Finish(ctx, in)
}

func (r *instanceRuns) Claim(ctx context.Context, rc anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	out, err := r.RunStore.Claim(ctx, rc)
	if err == nil && out.Kind == anarchon.OutcomeWon {
		r.inst.wins.Add(1)
		if out.Attempt == 1 && r.inst.hangOnWin.Load() {
			r.inst.hangHB.Store(true)
		}
	}
	if d := r.inst.slowWin.Load(); d > 0 && err == nil && out.Kind == anarchon.OutcomeWon && r.inst.slowEvery.Load() {
		time.Sleep(time.Duration(d))
		return out, err
	}
	if d := r.inst.slowWin.Load(); d > 0 && err == nil && out.Kind == anarchon.OutcomeWon && out.Attempt == 1 {
		r.inst.mu.Lock()
		first := !r.inst.slowed[rc.Token]
		if r.inst.slowed == nil {
			r.inst.slowed = map[string]bool{}
		}
		r.inst.slowed[rc.Token] = true
		r.inst.lateToken = ""
		if first {
			r.inst.lateToken = rc.Token
		}
		r.inst.mu.Unlock()
		if first {
			time.Sleep(time.Duration(d))
		}
	}
	return out, err
}

func (r *instanceRuns) Heartbeat(ctx context.Context, in anarchon.HeartbeatInput) (bool, error) {
	if r.inst.failHB.Load() {
		return false, errPartition
	}
	if r.inst.hangHB.Load() {
		<-r.inst.unhang // a black-holed connection with no deadline
		return false, errPartition
	}
	return r.RunStore.Heartbeat(ctx, in)
}

// noWatch hides the Watcher of a membackend: backups must poll.
type noWatch struct{ *membackend.Backend }

func (n noWatch) Runs() anarchon.RunStore { return struct{ anarchon.RunStore }{n.Backend.Runs()} }
func (noWatch) WatchRuns()                {}

func historyBySlot(t *testing.T, s *anarchon.Scheduler, job string) map[int64][]anarchon.RunRecord {
	t.Helper()
	hist, err := s.History(context.Background(), job, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64][]anarchon.RunRecord{}
	for _, r := range hist {
		out[r.Slot.UnixMilli()] = append(out[r.Slot.UnixMilli()], r)
	}
	return out
}

// The winner stops heartbeating mid-run (its store is unreachable): its
// handler is cancelled with ErrLeaseLost before the lease runs out, and a
// backup completes the slot with Attempt 2.
func TestBackupTakesOverStalledWinner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		insts := map[string]*instance{}
		var ss []*anarchon.Scheduler
		var mu sync.Mutex
		var causes []error
		var attempts []anarchon.Run
		h := func(ctx context.Context, run *anarchon.Run) error {
			mu.Lock()
			attempts = append(attempts, *run)
			mu.Unlock()
			if run.Attempt == 1 {
				insts[run.InstanceID].failHB.Store(true)
				<-ctx.Done()
				mu.Lock()
				causes = append(causes, context.Cause(ctx))
				mu.Unlock()
				return ctx.Err()
			}
			return nil
		}
		var logMu sync.Mutex
		var logs strings.Builder
		for i := range 4 {
			id := fmt.Sprintf("i%d", i)
			insts[id] = &instance{Backend: store}
			logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil)).With("instance", id)
			s := newSched(t, insts[id], id, &anarchon.Options{Logger: logger})
			if err := s.Every("job", time.Minute, h, &anarchon.JobOptions{Lease: 3 * time.Second}); err != nil {
				t.Fatal(err)
			}
			mustStart(t, s)
			ss = append(ss, s)
		}
		time.Sleep(time.Minute + 10*time.Second)
		stopAll(t, ss...)
		mu.Lock()
		defer mu.Unlock()
		if len(attempts) != 2 || attempts[0].Attempt != 1 || attempts[1].Attempt != 2 {
			t.Fatalf("runs %+v, want attempt 1 then attempt 2", attempts)
		}
		if attempts[0].InstanceID == attempts[1].InstanceID {
			t.Fatalf("the stalled instance took its own slot back")
		}
		if attempts[0].Fence == 0 || attempts[1].Fence <= attempts[0].Fence {
			t.Fatalf("fences %d then %d, want the backup's above the stalled holder's (SPEC §6, Fencing)", attempts[0].Fence, attempts[1].Fence)
		}
		if len(causes) != 1 || !errors.Is(causes[0], anarchon.ErrLeaseLost) {
			t.Fatalf("causes %v, want [ErrLeaseLost]", causes)
		}
		recs := historyBySlot(t, ss[0], "job")[attempts[0].Slot.UnixMilli()]
		statuses := map[anarchon.Status]int{}
		for _, r := range recs {
			statuses[r.Status]++
		}
		if statuses[anarchon.StatusSuccess] != 1 || statuses[anarchon.StatusLeaseLost] != 1 {
			t.Fatalf("history of the slot %+v, want one success and one lease_lost", recs)
		}
		// The backup's log says that the slot came to it.
		logMu.Lock()
		defer logMu.Unlock()
		var taken []string
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, `msg="slot taken over from another instance"`) {
				taken = append(taken, line)
			}
		}
		if want := "instance=" + attempts[1].InstanceID; len(taken) != 1 || !strings.Contains(taken[0], want) || !strings.Contains(taken[0], "attempt=2") {
			t.Fatalf("takeover lines %q, want one with %s and attempt=2", taken, want)
		}
	})
}

// A heartbeat answered false (the store gave the slot to someone else)
// cancels the handler with cause ErrLeaseLost, and its result is not the
// slot's outcome.
func TestLostLeaseCancelsHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		cause := make(chan error, 1)
		started := make(chan anarchon.Run, 1)
		h := func(ctx context.Context, run *anarchon.Run) error {
			if run.Attempt > 1 {
				return nil
			}
			started <- *run
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil // even a nil return must not settle the slot
		}
		a, b := newSched(t, store, "a", nil), newSched(t, store, "b", nil)
		for _, s := range []*anarchon.Scheduler{a, b} {
			if err := s.Every("job", time.Minute, h, &anarchon.JobOptions{Lease: 30 * time.Second}); err != nil {
				t.Fatal(err)
			}
			mustStart(t, s)
		}
		run := <-started
		// Another party ends the lease: the store releases it and the
		// backup takes the slot.
		if ok, err := store.Runs().Release(context.Background(), anarchon.ReleaseInput{Job: "job", Slot: run.Slot.UnixMilli(), Token: run.Token}); err != nil || !ok {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		if got := <-cause; !errors.Is(got, anarchon.ErrLeaseLost) {
			t.Fatalf("cause %v, want ErrLeaseLost", got)
		}
		time.Sleep(time.Second)
		stopAll(t, a, b)
		recs := historyBySlot(t, a, "job")[run.Slot.UnixMilli()]
		var lost, ok int
		for _, r := range recs {
			switch {
			case r.Token == run.Token && r.Status == anarchon.StatusLeaseLost:
				lost++
			case r.Attempt == 2 && r.Status == anarchon.StatusSuccess:
				ok++
			}
		}
		if lost != 1 || ok != 1 {
			t.Fatalf("history %+v, want the first attempt lease_lost and attempt 2 success", recs)
		}
	})
}

// With the skip policy a job whose runs outlast its interval never runs
// twice at once and the skipped slots are recorded; with allow, runs
// overlap.
func TestOverlapPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy   anarchon.OverlapPolicy
		wantConc func(int) bool
	}{
		{anarchon.OverlapSkip, func(c int) bool { return c == 1 }},
		{anarchon.OverlapAllow, func(c int) bool { return c >= 2 }},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := membackend.New(nil)
				l := newLedger(nil)
				h := l.handler(func(ctx context.Context, run *anarchon.Run) error {
					time.Sleep(2500 * time.Millisecond)
					return nil
				})
				var ss []*anarchon.Scheduler
				for i := range 3 {
					s := newSched(t, store, fmt.Sprintf("i%d", i), nil)
					if err := s.Every("slow", time.Second, h, &anarchon.JobOptions{Overlap: tc.policy, Lease: 2 * time.Second}); err != nil {
						t.Fatal(err)
					}
					mustStart(t, s)
					ss = append(ss, s)
				}
				time.Sleep(20 * time.Second)
				stopAll(t, ss...)
				if !tc.wantConc(l.maxConc) {
					t.Fatalf("max concurrent runs %d", l.maxConc)
				}
				skipped := 0
				for _, recs := range historyBySlot(t, ss[0], "slow") {
					for _, r := range recs {
						if r.Status == anarchon.StatusSkipped {
							skipped++
						}
					}
				}
				if tc.policy == anarchon.OverlapSkip && skipped < 10 {
					t.Fatalf("%d skipped slots recorded, want >= 10", skipped)
				}
				if tc.policy == anarchon.OverlapAllow && skipped != 0 {
					t.Fatalf("%d skipped slots with allow", skipped)
				}
			})
		})
	}
}

// Every instance is down for 100 slots. With CatchUp{Max: 1}, three
// instances starting together (and restarting) run exactly one missed slot,
// once, and record the other 99 as missed.
func TestCatchUpAfterDowntime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		l := newLedger(nil)
		opts := &anarchon.JobOptions{
			Lease:       5 * time.Second,
			MaxLate:     500 * time.Millisecond,
			HistorySize: 500,
			CatchUp:     anarchon.CatchUp{Window: 100 * time.Second, Max: 1},
		}
		// The events of the slots settled missed carry their records'
		// reason (Event.Reason), which the daemon logs.
		var evMu sync.Mutex
		var missedEvents []anarchon.Event
		onEvent := func(e anarchon.Event) {
			if e.Kind == anarchon.EventSlotSkipped && e.Status == anarchon.StatusMissed {
				evMu.Lock()
				missedEvents = append(missedEvents, e)
				evMu.Unlock()
			}
		}
		boot := func() []*anarchon.Scheduler {
			var ss []*anarchon.Scheduler
			for i := range 3 {
				s := newSched(t, store, fmt.Sprintf("i%d", i), &anarchon.Options{OnEvent: onEvent})
				if err := s.Every("tick", time.Second, l.handler(nil), opts); err != nil {
					t.Fatal(err)
				}
				mustStart(t, s)
				ss = append(ss, s)
			}
			return ss
		}
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 100*time.Millisecond)))
		ss := boot()
		time.Sleep(5 * time.Second)
		stopAll(t, ss...)
		lastRun := time.Now().Truncate(time.Second) // the last slot run before the outage
		time.Sleep(100 * time.Second)               // slots lastRun+1s … lastRun+100s pass with nobody up
		ss = boot()
		restart := time.Now()
		time.Sleep(500 * time.Millisecond)
		ss = append(ss, boot()...) // a second wave of restarts at once
		time.Sleep(3 * time.Second)
		stopAll(t, ss...)

		l.mu.Lock()
		defer l.mu.Unlock()
		var down []int64
		for s := lastRun.Add(time.Second); !s.After(restart); s = s.Add(time.Second) {
			down = append(down, s.UnixMilli())
		}
		if len(down) != 100 {
			t.Fatalf("%d slots during the outage, want 100", len(down))
		}
		ran, missed := 0, 0
		hist := historyBySlot(t, ss[0], "tick")
		for i, slot := range down {
			n := len(l.runs[slot])
			ran += n
			if i == len(down)-1 {
				if n != 1 {
					t.Errorf("latest missed slot ran %d times, want 1", n)
				}
				continue
			}
			if n != 0 {
				t.Errorf("slot %v ran %d times during catch-up, want 0", time.UnixMilli(slot), n)
			}
			m := 0
			for _, r := range hist[slot] {
				if r.Status == anarchon.StatusMissed {
					m++
					if !strings.Contains(r.Error, "only the newest 1 slot(s)") || r.ClaimedAt.IsZero() {
						t.Errorf("missed record %+v, want its claim time and its reason", r)
					}
				}
			}
			if m != 1 {
				t.Errorf("slot %v has %d missed records, want 1: %+v", time.UnixMilli(slot), m, hist[slot])
			}
			missed += m
		}
		if ran != 1 || missed != 99 {
			t.Fatalf("ran %d, missed %d; want 1 and 99", ran, missed)
		}
		evMu.Lock()
		defer evMu.Unlock()
		if len(missedEvents) < 99 {
			t.Errorf("%d missed-slot events; want at least the 99 settled", len(missedEvents))
		}
		for _, e := range missedEvents {
			if !strings.Contains(e.Reason, "only the newest 1 slot(s)") {
				t.Errorf("missed-slot event %v: reason %q; want the record's catch-up reason", e.Slot, e.Reason)
				break
			}
		}
	})
}

// Stop hands a running job over: with a Watcher the backup starts at the
// Stop deadline (within 50 ms in simulated time); without one, within one
// poll interval.
func TestHandOver(t *testing.T) {
	for _, tc := range []struct {
		name  string
		wrap  func(*membackend.Backend) anarchon.Backend
		limit time.Duration
	}{
		{"watcher", func(b *membackend.Backend) anarchon.Backend { return b }, 50 * time.Millisecond},
		{"poll", func(b *membackend.Backend) anarchon.Backend { return noWatch{b} }, time.Second + 50*time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := membackend.New(nil)
				first := make(chan *anarchon.Run, 1)
				backupAt := make(chan time.Time, 1)
				holderCause := make(chan error, 1)
				h := func(ctx context.Context, run *anarchon.Run) error {
					if run.Attempt == 1 {
						first <- run
						<-ctx.Done()
						holderCause <- context.Cause(ctx)
						return ctx.Err()
					}
					backupAt <- time.Now()
					return nil
				}
				byID := map[string]*anarchon.Scheduler{}
				for _, id := range []string{"a", "b"} {
					s := newSched(t, tc.wrap(store), id, &anarchon.Options{PollInterval: time.Second})
					if err := s.Every("long", time.Hour, h, &anarchon.JobOptions{Lease: 10 * time.Minute}); err != nil {
						t.Fatal(err)
					}
					mustStart(t, s)
					byID[id] = s
				}
				run := <-first
				time.Sleep(5 * time.Second)
				holder := byID[run.InstanceID]
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				deadline, _ := ctx.Deadline()
				if err := holder.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Stop = %v, want DeadlineExceeded", err)
				}
				cancel()
				handedOnStop := false
				for _, r := range historyBySlot(t, holder, "long")[run.Slot.UnixMilli()] {
					handedOnStop = handedOnStop || (r.Status == anarchon.StatusHandedOver && r.Token == run.Token)
				}
				if !handedOnStop {
					t.Fatal("the hand-over was not recorded when Stop returned")
				}
				got := <-backupAt
				if d := got.Sub(deadline); d < 0 || d > tc.limit {
					t.Fatalf("backup started %v after the Stop deadline, want within %v", d, tc.limit)
				}
				if c := <-holderCause; !errors.Is(c, anarchon.ErrStopped) {
					t.Fatalf("holder's cause %v, want ErrStopped", c)
				}
				for id, s := range byID {
					if id != run.InstanceID {
						stopAll(t, s)
					}
				}
				recs := historyBySlot(t, holder, "long")[run.Slot.UnixMilli()]
				var handed, ok int
				for _, r := range recs {
					switch r.Status {
					case anarchon.StatusHandedOver:
						handed++
					case anarchon.StatusSuccess:
						if r.Attempt == 2 {
							ok++
						}
					}
				}
				if handed != 1 || ok != 1 {
					t.Fatalf("history %+v, want handed_over then success at attempt 2", recs)
				}
			})
		})
	}
}

// Every holder stalls; after MaxAttempts holders the slot is recorded
// abandoned, once.
func TestAttemptsRunOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		var mu sync.Mutex
		var attempts []int
		insts := map[string]*instance{}
		h := func(ctx context.Context, run *anarchon.Run) error {
			mu.Lock()
			attempts = append(attempts, run.Attempt)
			mu.Unlock()
			insts[run.InstanceID].failHB.Store(true)
			<-ctx.Done()
			return ctx.Err()
		}
		var ss []*anarchon.Scheduler
		for i := range 4 {
			id := fmt.Sprintf("i%d", i)
			insts[id] = &instance{Backend: store}
			s := newSched(t, insts[id], id, nil)
			if err := s.Every("doomed", time.Hour, h, &anarchon.JobOptions{Lease: 3 * time.Second, MaxAttempts: 3}); err != nil {
				t.Fatal(err)
			}
			mustStart(t, s)
			ss = append(ss, s)
		}
		time.Sleep(time.Hour + time.Minute)
		stopAll(t, ss...)
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(attempts) != "[1 2 3]" {
			t.Fatalf("attempts %v, want [1 2 3]", attempts)
		}
		abandoned := 0
		for _, recs := range historyBySlot(t, ss[0], "doomed") {
			for _, r := range recs {
				if r.Status == anarchon.StatusAbandoned {
					abandoned++
					if r.Attempt != 3 {
						t.Errorf("abandoned record at attempt %d, want the last holder's 3", r.Attempt)
					}
				}
			}
		}
		if abandoned != 1 {
			t.Fatalf("%d abandoned records, want 1", abandoned)
		}
	})
}

// One instance's clock is 5 s fast, another's 5 s slow, a third is right;
// they share one store. Every slot runs exactly once and none before its
// time by the store's clock.
func TestClockSkew(t *testing.T) {
	for _, leased := range []bool{false, true} {
		t.Run(fmt.Sprintf("leased=%v", leased), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := membackend.New(nil) // the store's clock is the bubble's time.Now
				l := newLedger(time.Now)
				var ss []*anarchon.Scheduler
				for i, off := range []time.Duration{5 * time.Second, -5 * time.Second, 0} {
					s := newSched(t, store, fmt.Sprintf("i%d", i), &anarchon.Options{Clock: anarchon.OffsetClock{Offset: off}})
					if err := s.Every("tick", time.Second, l.handler(nil), &anarchon.JobOptions{NoLease: !leased, MaxLate: 2 * time.Second}); err != nil {
						t.Fatal(err)
					}
					mustStart(t, s)
					if got := s.ClockOffset(); got != -off {
						t.Errorf("instance %d: ClockOffset %v, want %v", i, got, -off)
					}
					ss = append(ss, s)
				}
				first := time.Now().Truncate(time.Second).Add(time.Second)
				time.Sleep(30 * time.Second)
				last := time.Now().Truncate(time.Second).Add(-time.Second)
				stopAll(t, ss...)
				l.checkOnce(t, first, last, time.Second)
				l.mu.Lock()
				defer l.mu.Unlock()
				by := map[string]int{}
				for _, runs := range l.runs {
					for _, r := range runs {
						by[r.InstanceID]++
					}
				}
				if len(by) < 2 {
					t.Errorf("runs by instance %v: the skewed instances never won", by)
				}
			})
		})
	}
}

// futureRuns answers every lease claim with an outcome kind this version
// does not know.
type futureRuns struct{ anarchon.RunStore }

func (futureRuns) Claim(context.Context, anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	return anarchon.ClaimOutcome{Kind: 99}, nil
}

type futureBackend struct{ *membackend.Backend }

func (f futureBackend) Runs() anarchon.RunStore { return futureRuns{f.Backend.Runs()} }

// An outcome kind the scheduler does not know is handled like done: the
// slot is not run, and the scheduler goes on.
func TestUnknownOutcomeIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var claims atomic.Int32
		s := newSched(t, futureBackend{membackend.New(nil)}, "a", &anarchon.Options{OnEvent: func(e anarchon.Event) {
			if e.Kind == anarchon.EventClaim && e.Outcome == "unknown(99)" {
				claims.Add(1)
			}
		}})
		ran := atomic.Int32{}
		if err := s.Every("job", time.Second, func(context.Context, *anarchon.Run) error { ran.Add(1); return nil }, nil); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		time.Sleep(5500 * time.Millisecond)
		stopAll(t, s)
		if ran.Load() != 0 || claims.Load() != 5 {
			t.Fatalf("ran %d, claims %d; want 0 runs for 5 claims", ran.Load(), claims.Load())
		}
	})
}

// startHourly starts n instances (IDs i0, i1, …, added to insts) on
// store, each running h hourly under a 6 s lease, with their won first
// claims answered slowWin late and their hung heartbeats released by
// closing unhang.
func startHourly(t *testing.T, store *membackend.Backend, insts map[string]*instance, n int, slowWin time.Duration, unhang chan struct{}, h anarchon.Handler) []*anarchon.Scheduler {
	t.Helper()
	var ss []*anarchon.Scheduler
	for i := range n {
		id := fmt.Sprintf("i%d", i)
		insts[id] = &instance{Backend: store, unhang: unhang}
		insts[id].slowWin.Store(int64(slowWin))
		s := newSched(t, insts[id], id, nil)
		if err := s.Every("job", time.Hour, h, &anarchon.JobOptions{Lease: 6 * time.Second}); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		ss = append(ss, s)
	}
	return ss
}

// hungHolderRun runs one hourly slot on three instances sharing a
// membackend, with a 6 s lease: the first holder's heartbeats hang from its
// won claim on, and its won claim is answered slowWin late (0: at once).
// It returns when the holder's handler ended, when the backup's handler
// started, and the cause the holder's context ended with. Call it inside a
// synctest bubble.
func hungHolderRun(t *testing.T, slowWin time.Duration) (holderEnd, backupStart time.Time, holderCause error) {
	t.Helper()
	store := membackend.New(nil)
	insts := map[string]*instance{}
	var mu sync.Mutex
	unhang := make(chan struct{})
	defer close(unhang)
	h := func(ctx context.Context, run *anarchon.Run) error {
		if run.Attempt == 1 {
			insts[run.InstanceID].hangHB.Store(true)
			<-ctx.Done()
			mu.Lock()
			holderEnd, holderCause = time.Now(), context.Cause(ctx)
			mu.Unlock()
			return ctx.Err()
		}
		mu.Lock()
		backupStart = time.Now()
		mu.Unlock()
		return nil
	}
	ss := startHourly(t, store, insts, 3, slowWin, unhang, h)
	for _, in := range insts {
		// Hang from the won claim on, not from the handler's start: a
		// renewal sent as the run starts, before the handler sets
		// hangHB, would otherwise get through and move the safe end.
		in.hangOnWin.Store(true)
	}
	time.Sleep(time.Hour + time.Minute)
	for _, s := range ss {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s.Stop(ctx) // the hung heartbeat goroutine stays: that is the point
		cancel()
	}
	mu.Lock()
	defer mu.Unlock()
	return holderEnd, backupStart, holderCause
}

// A heartbeat that hangs (a black-holed connection whose client ignores its
// context) must not keep the holder running: its handler is cancelled at
// the lease's safe end, before the backup can take over.
func TestHungHeartbeatStillFences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		holderEnd, backupStart, holderCause := hungHolderRun(t, 0)
		if !errors.Is(holderCause, anarchon.ErrLeaseLost) {
			t.Fatalf("holder's cause %v, want ErrLeaseLost", holderCause)
		}
		if backupStart.IsZero() || !holderEnd.Before(backupStart) {
			t.Fatalf("holder ended at %v, backup started at %v: they overlapped", holderEnd, backupStart)
		}
		slot := time.Now().Truncate(time.Hour)
		if got := holderEnd.Sub(slot); got > 5*time.Second {
			t.Fatalf("holder cancelled %v after the slot, want by the safe end (5s)", got)
		}
	})
}

// A run whose holder died while no backup was standing by is taken over by
// an instance that starts later, though that instance never saw the slot
// come due.
func TestStartAdoptsOrphanedRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		slot := time.Now().Truncate(time.Hour)
		// A holder that claimed the slot and died.
		out, err := store.Runs().Claim(context.Background(), anarchon.RunClaim{
			ClaimInput: anarchon.ClaimInput{Job: "hourly", Slot: slot.UnixMilli(), Token: "ghost", InstanceID: "dead", HistorySize: 100},
			Lease:      10 * time.Second, MaxAttempts: 3,
		})
		if err != nil || out.Kind != anarchon.OutcomeWon {
			t.Fatalf("ghost claim: %+v %v", out, err)
		}
		runs := make(chan anarchon.Run, 2)
		s := newSched(t, store, "late", nil)
		if err := s.Every("hourly", time.Hour, func(_ context.Context, run *anarchon.Run) error {
			runs <- *run
			return nil
		}, &anarchon.JobOptions{Lease: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		got := <-runs
		stopAll(t, s)
		if !got.Slot.Equal(slot) || got.Attempt != 2 {
			t.Fatalf("run %+v, want slot %v at attempt 2", got, slot)
		}
		if d := time.Since(slot); d < 10*time.Second {
			t.Fatalf("took over %v after the claim, before the dead holder's lease ran out", d)
		}
	})
}

// A holder whose finish never reaches the store records its run as
// unconfirmed, which does not settle the slot; a backup runs it again and
// settles it. History has exactly one final record for the slot.
func TestUnconfirmedFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		insts := map[string]*instance{}
		runs := make(chan anarchon.Run, 4)
		h := func(_ context.Context, run *anarchon.Run) error {
			if run.Attempt == 1 {
				insts[run.InstanceID].failFinish.Store(true)
			}
			runs <- *run
			return nil
		}
		var ss []*anarchon.Scheduler
		for i := range 2 {
			id := fmt.Sprintf("i%d", i)
			insts[id] = &instance{Backend: store}
			s := newSched(t, insts[id], id, nil)
			if err := s.Every("job", time.Hour, h, &anarchon.JobOptions{Lease: 3 * time.Second}); err != nil {
				t.Fatal(err)
			}
			mustStart(t, s)
			ss = append(ss, s)
		}
		first, second := <-runs, <-runs
		time.Sleep(time.Minute)
		stopAll(t, ss...)
		if first.Attempt != 1 || second.Attempt != 2 || first.InstanceID == second.InstanceID {
			t.Fatalf("runs %+v then %+v, want attempt 1, then attempt 2 elsewhere", first, second)
		}
		var final, unconfirmed int
		for _, r := range historyBySlot(t, ss[0], "job")[first.Slot.UnixMilli()] {
			if r.Status.Final() {
				final++
			}
			if r.Status == anarchon.StatusUnconfirmed && r.Token == first.Token {
				unconfirmed++
			}
		}
		if final != 1 || unconfirmed != 1 {
			t.Fatalf("%d final and %d unconfirmed records, want 1 and 1", final, unconfirmed)
		}
	})
}

// The lease starts when the store records the claim, so a holder whose
// claim answer came back late has less of it: its safe end counts from the
// claim's send time. An answer 3 s late on a 6 s lease (safe end 5 s) whose
// renewals never get through: the holder must stop 5 s after the slot, not
// 8 s, and before the backup starts at the store's expiry (6 s).
func TestSlowClaimAnswerShortensTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		holderEnd, backupStart, _ := hungHolderRun(t, 3*time.Second)
		slot := time.Now().Truncate(time.Hour)
		if holderEnd.IsZero() || backupStart.IsZero() {
			t.Fatalf("holder ended %v, backup started %v: want both", holderEnd, backupStart)
		}
		if got := holderEnd.Sub(slot); got > 5*time.Second {
			t.Errorf("holder cancelled %v after the slot, want by the safe end counted from the claim (5s)", got)
		}
		if !holderEnd.Before(backupStart) {
			t.Errorf("holder ended at %v, backup started at %v: they overlapped", holderEnd, backupStart)
		}
	})
}

// A won claim answered after the lease's safe end must not start the
// handler: the holder claims again with the same token, which renews the
// lease (SPEC §6), and runs on that answer. The slot runs once, as
// attempt 1, and no backup takes it over.
func TestClaimAnsweredPastSafeEndRenewsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		insts := map[string]*instance{}
		var mu sync.Mutex
		var runs []int
		var onLate []string
		h := func(ctx context.Context, run *anarchon.Run) error {
			inst := insts[run.InstanceID]
			inst.mu.Lock()
			if inst.lateToken == run.Token {
				onLate = append(onLate, run.Token)
			}
			inst.mu.Unlock()
			mu.Lock()
			runs = append(runs, run.Attempt)
			mu.Unlock()
			time.Sleep(10 * time.Second) // longer than the lease: heartbeats must hold it
			return nil
		}
		// The safe end of a 6 s lease is 5 s.
		ss := startHourly(t, store, insts, 2, 5500*time.Millisecond, nil, h)
		time.Sleep(time.Hour + time.Minute)
		for _, s := range ss {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if err := s.Stop(ctx); err != nil {
				t.Error(err)
			}
			cancel()
		}
		mu.Lock()
		defer mu.Unlock()
		if len(runs) != 1 || runs[0] != 1 {
			t.Errorf("handler ran attempts %v, want attempt 1 once", runs)
		}
		if len(onLate) > 0 {
			t.Errorf("handler started on the answer that came past the safe end")
		}
		slot := time.Now().Truncate(time.Hour)
		recs := historyBySlot(t, ss[0], "job")[slot.UnixMilli()]
		if len(recs) != 1 || recs[0].Status != anarchon.StatusSuccess || recs[0].Attempt != 1 {
			var got []string
			for _, r := range recs {
				got = append(got, fmt.Sprintf("%d:%s", r.Attempt, r.Status))
			}
			t.Errorf("history %v, want attempt 1 success only", got)
		}
	})
}

// A store that answers every won claim past the lease's safe end (a lease
// too short for it) must not keep a slot renewed for ever: after a few
// late wins an instance gives its attempt up (recorded lease_lost) and
// stands by under a new token, so the attempts run out and the slot ends
// abandoned. The handler never runs, and the claims are bounded.
func TestLeaseTooShortForTheStoreEndsAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		insts := map[string]*instance{}
		var ran atomic.Int64
		h := func(context.Context, *anarchon.Run) error {
			ran.Add(1)
			return nil
		}
		ss := startHourly(t, store, insts, 2, 5500*time.Millisecond, nil, h)
		for _, in := range insts {
			in.slowEvery.Store(true)
		}
		time.Sleep(time.Hour + 10*time.Minute)
		stopAll(t, ss...)
		if n := ran.Load(); n != 0 {
			t.Errorf("handler ran %d times on wins answered past the safe end", n)
		}
		var wins int64
		for _, in := range insts {
			wins += in.wins.Load()
		}
		// 3 attempts (the default MaxAttempts), each given up after at
		// most 3 late wins by each of the 2 instances.
		if wins == 0 || wins > 3*3*2 {
			t.Errorf("%d wins in all, want between 1 and 18", wins)
		}
		slot := time.Now().Truncate(time.Hour)
		var statuses []string
		abandoned := false
		for _, r := range historyBySlot(t, ss[0], "job")[slot.UnixMilli()] {
			statuses = append(statuses, fmt.Sprintf("%d:%s", r.Attempt, r.Status))
			abandoned = abandoned || r.Status == anarchon.StatusAbandoned
		}
		if !abandoned {
			t.Errorf("history of the slot %v, want it abandoned", statuses)
		}
	})
}
