package anarchon_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

var quiet = slog.New(slog.DiscardHandler)

// ledger records every handler start, as the jobs themselves would leave
// evidence, so tests judge exactly-once from what ran.
type ledger struct {
	mu   sync.Mutex
	runs map[int64][]anarchon.Run
	// early counts runs that started before their slot by the store's clock.
	early    int
	running  int
	maxConc  int
	storeNow func() time.Time
}

func newLedger(storeNow func() time.Time) *ledger {
	if storeNow == nil {
		storeNow = time.Now
	}
	return &ledger{runs: make(map[int64][]anarchon.Run), storeNow: storeNow}
}

func (l *ledger) start(run *anarchon.Run) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.storeNow().Before(run.Slot) {
		l.early++
	}
	l.runs[run.Slot.UnixMilli()] = append(l.runs[run.Slot.UnixMilli()], *run)
	l.running++
	l.maxConc = max(l.maxConc, l.running)
}

func (l *ledger) end() {
	l.mu.Lock()
	l.running--
	l.mu.Unlock()
}

// handler returns a handler that records its start and then runs work.
func (l *ledger) handler(work func(ctx context.Context, run *anarchon.Run) error) anarchon.Handler {
	return func(ctx context.Context, run *anarchon.Run) error {
		l.start(run)
		defer l.end()
		if work != nil {
			return work(ctx, run)
		}
		return nil
	}
}

// checkOnce fails unless every slot in [first, last] (step) ran exactly once.
func (l *ledger) checkOnce(t *testing.T, first, last time.Time, step time.Duration) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for s := first; !s.After(last); s = s.Add(step) {
		got := len(l.runs[s.UnixMilli()])
		if got != 1 {
			t.Errorf("slot %v ran %d times, want 1", s.Format(time.RFC3339Nano), got)
		}
		n++
	}
	for slot, runs := range l.runs {
		ts := time.UnixMilli(slot)
		if ts.Before(first) || ts.After(last) {
			continue
		}
		if ts.Sub(first)%step != 0 {
			t.Errorf("a run for %v, which is not a slot", ts)
		}
		_ = runs
	}
	if l.early != 0 {
		t.Errorf("%d runs started before their slot", l.early)
	}
	return n
}

func newSched(t *testing.T, b anarchon.Backend, id string, opts *anarchon.Options) *anarchon.Scheduler {
	t.Helper()
	o := anarchon.Options{}
	if opts != nil {
		o = *opts
	}
	o.InstanceID = id
	if o.Logger == nil {
		o.Logger = quiet
	}
	return anarchon.New(b, &o)
}

func mustStart(t *testing.T, s *anarchon.Scheduler) {
	t.Helper()
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

func stopAll(t *testing.T, ss ...*anarchon.Scheduler) {
	t.Helper()
	for _, s := range ss {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop %s: %v", s.InstanceID(), err)
		}
		cancel()
	}
}

// Three schedulers on one store, a 1 s job with random jitter, started at
// different moments: every slot over 60+ seconds runs exactly once, never
// before its time. Both claim paths are covered.
func TestThreeInstancesEverySlotOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts anarchon.JobOptions
	}{
		{"plain", anarchon.JobOptions{Jitter: 300 * time.Millisecond, NoLease: true}},
		{"leased", anarchon.JobOptions{Jitter: 300 * time.Millisecond, Lease: 3 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := membackend.New(nil)
				l := newLedger(nil)
				var ss []*anarchon.Scheduler
				var started time.Duration
				for i, at := range []time.Duration{0, 1300 * time.Millisecond, 2700 * time.Millisecond} {
					time.Sleep(at - started)
					started = at
					s := newSched(t, b, fmt.Sprintf("inst-%d", i), nil)
					opts := tc.opts
					if err := s.Every("tick", time.Second, l.handler(nil), &opts); err != nil {
						t.Fatal(err)
					}
					mustStart(t, s)
					ss = append(ss, s)
				}
				first := time.Now().Truncate(time.Second).Add(time.Second)
				time.Sleep(65 * time.Second)
				last := time.Now().Truncate(time.Second).Add(-time.Second)
				stopAll(t, ss...)
				if n := l.checkOnce(t, first, last, time.Second); n < 60 {
					t.Errorf("checked %d slots, want at least 60", n)
				}
				hist, err := ss[0].History(context.Background(), "tick", 0)
				if err != nil {
					t.Fatal(err)
				}
				seen := map[int64]int{}
				for _, r := range hist {
					if r.Status != anarchon.StatusSuccess {
						t.Errorf("history record %+v, want success", r)
					}
					seen[r.Slot.UnixMilli()]++
				}
				for slot, n := range seen {
					if n != 1 {
						t.Errorf("history has %d records for slot %v", n, time.UnixMilli(slot))
					}
				}
				if len(seen) < 60 {
					t.Errorf("history has %d slots, want >= 60", len(seen))
				}
			})
		})
	}
}

func TestValidation(t *testing.T) {
	h := func(context.Context, *anarchon.Run) error { return nil }
	plain := &plainBackend{membackend.New(nil)}
	short := membackend.New(&membackend.Options{DedupeWindow: 30 * time.Second})
	refusing := &refusingBackend{membackend.New(nil)}
	for _, tc := range []struct {
		name    string
		backend anarchon.Backend
		job     anarchon.Job
		code    anarchon.Code
	}{
		{"empty name", nil, anarchon.Job{Schedule: anarchon.Interval(time.Second), Handler: h}, anarchon.CodeEmptyName},
		{"nil handler", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second)}, anarchon.CodeNoHandler},
		{"bad cron", nil, anarchon.Job{Name: "j", Schedule: anarchon.CronSchedule("*/90 * * * *"), Handler: h}, anarchon.CodeBadCron},
		{"junk cron", nil, anarchon.Job{Name: "j", Schedule: anarchon.CronSchedule("every day"), Handler: h}, anarchon.CodeBadCron},
		{"never fires", nil, anarchon.Job{Name: "j", Schedule: anarchon.CronSchedule("0 0 30 2 *"), Handler: h}, anarchon.CodeBadCron},
		{"unknown zone", nil, anarchon.Job{Name: "j", Schedule: anarchon.CronSchedule("0 * * * *"), Handler: h, Options: &anarchon.JobOptions{Zone: "Mars/Olympus"}}, anarchon.CodeUnknownZone},
		{"zero interval", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(0), Handler: h}, anarchon.CodeBadInterval},
		{"sub-ms interval", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(1500 * time.Microsecond), Handler: h}, anarchon.CodeBadInterval},
		{"offset too big", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Offset: time.Second}}, anarchon.CodeBadInterval},
		{"negative jitter", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Jitter: -1}}, anarchon.CodeNegativeDuration},
		{"negative timeout", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Timeout: -time.Second}}, anarchon.CodeNegativeDuration},
		{"negative max late", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{MaxLate: -time.Second}}, anarchon.CodeNegativeDuration},
		{"nanosecond max late", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{MaxLate: time.Nanosecond}}, anarchon.CodeBadOption},
		{"max late below the floor", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{MaxLate: anarchon.MinMaxLate - time.Millisecond}}, anarchon.CodeBadOption},
		{"negative lease", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Lease: -time.Second}}, anarchon.CodeNegativeDuration},
		{"negative history", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{HistorySize: -1}}, anarchon.CodeBadOption},
		{"bad overlap", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Overlap: 9}}, anarchon.CodeBadOption},
		{"limit without a count", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Overlap: anarchon.OverlapLimit}}, anarchon.CodeBadOption},
		{"negative limit", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Overlap: anarchon.OverlapLimit, OverlapLimit: -2}}, anarchon.CodeBadOption},
		{"huge limit", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Overlap: anarchon.OverlapLimit, OverlapLimit: anarchon.MaxOverlapLimit + 1}}, anarchon.CodeBadOption},
		{"limit count without the policy", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Overlap: anarchon.OverlapSkip, OverlapLimit: 2}}, anarchon.CodeBadOption},
		{"replace without run store", plain, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Overlap: anarchon.OverlapReplace}}, anarchon.CodeNeedsRunStore},
		{"replace without Replacer", noWatch{membackend.New(nil)}, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Overlap: anarchon.OverlapReplace}}, anarchon.CodeNeedsRunStore},
		{"limit without run store", plain, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Overlap: anarchon.OverlapLimit, OverlapLimit: 2}}, anarchon.CodeNeedsRunStore},
		{"limit with NoLease", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{NoLease: true, Overlap: anarchon.OverlapLimit, OverlapLimit: 2}}, anarchon.CodeBadOption},
		{"dedupe window", short, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h}, anarchon.CodeDedupeWindow},
		{"catch-up beyond window", short, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{MaxLate: time.Second, CatchUp: anarchon.CatchUp{Window: time.Minute}}}, anarchon.CodeDedupeWindow},
		{"lease without run store", plain, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Lease: time.Second}}, anarchon.CodeNeedsRunStore},
		{"skip without run store", plain, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Overlap: anarchon.OverlapSkip}}, anarchon.CodeNeedsRunStore},
		{"catch-up without run store", plain, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{CatchUp: anarchon.CatchUp{Window: time.Minute}}}, anarchon.CodeNeedsRunStore},
		{"empty cron", nil, anarchon.Job{Name: "j", Schedule: anarchon.CronSchedule(""), Handler: h}, anarchon.CodeBadCron},
		{"local zone", nil, anarchon.Job{Name: "j", Schedule: anarchon.CronSchedule("0 * * * *"), Handler: h, Options: &anarchon.JobOptions{Zone: "Local"}}, anarchon.CodeUnknownZone},
		{"offset on cron", nil, anarchon.Job{Name: "j", Schedule: anarchon.CronSchedule("0 * * * *"), Handler: h, Options: &anarchon.JobOptions{Offset: time.Second}}, anarchon.CodeBadOption},
		{"huge history", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{HistorySize: math.MaxInt}}, anarchon.CodeBadOption},
		{"huge catch-up", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{CatchUp: anarchon.CatchUp{Window: time.Minute, Max: math.MaxInt}}}, anarchon.CodeBadOption},
		{"huge attempts", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{MaxAttempts: 1e9}}, anarchon.CodeBadOption},
		{"catch-up max without window", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{CatchUp: anarchon.CatchUp{Max: 3}}}, anarchon.CodeBadOption},
		{"jitter above max late", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Minute), Handler: h, Options: &anarchon.JobOptions{Jitter: 5 * time.Second, MaxLate: time.Second}}, anarchon.CodeBadOption},
		{"jitter above interval", nil, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h, Options: &anarchon.JobOptions{Jitter: 2 * time.Second, MaxLate: time.Hour}}, anarchon.CodeBadOption},
		{"jitter overflows the window", short, anarchon.Job{Name: "j", Schedule: anarchon.CronSchedule("0 * * * *"), Handler: h, Options: &anarchon.JobOptions{Jitter: time.Millisecond, MaxLate: math.MaxInt64}}, anarchon.CodeDedupeWindow},
		{"nil backend", nilBackend, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h}, anarchon.CodeBadOption},
		{"backend refuses", refusing, anarchon.Job{Name: "j", Schedule: anarchon.Interval(time.Second), Handler: h}, anarchon.CodeBackendRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.backend
			switch b {
			case nil:
				b = membackend.New(nil)
			case nilBackend:
				b = nil
			}
			s := anarchon.New(b, &anarchon.Options{Logger: quiet})
			err := s.Add(tc.job)
			var ve *anarchon.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Add = %v, want a *ValidationError", err)
			}
			if ve.Code != tc.code {
				t.Fatalf("code %q, want %q (%v)", ve.Code, tc.code, err)
			}
			if ve.Error() == "" {
				t.Fatal("empty message")
			}
		})
	}
	t.Run("max late at the floor", func(t *testing.T) {
		s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: quiet})
		if err := s.Every("j", time.Second, h, &anarchon.JobOptions{MaxLate: anarchon.MinMaxLate}); err != nil {
			t.Fatalf("MaxLate MinMaxLate: %v", err)
		}
		err := s.Every("k", time.Second, h, &anarchon.JobOptions{MaxLate: time.Nanosecond})
		if ve := (*anarchon.ValidationError)(nil); !errors.As(err, &ve) || ve.Field != "MaxLate" {
			t.Fatalf("MaxLate 1ns: %v, want an error on MaxLate", err)
		}
	})
	t.Run("duplicate name", func(t *testing.T) {
		s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: quiet})
		if err := s.Every("j", time.Second, h, nil); err != nil {
			t.Fatal(err)
		}
		err := s.Cron("j", "* * * * *", h, nil)
		var ve *anarchon.ValidationError
		if !errors.As(err, &ve) || ve.Code != anarchon.CodeDuplicateName {
			t.Fatalf("got %v, want duplicate_name", err)
		}
	})
	t.Run("backend error reachable", func(t *testing.T) {
		s := anarchon.New(refusing, &anarchon.Options{Logger: quiet})
		err := s.Every("j", time.Second, h, nil)
		if !errors.Is(err, errRefused) {
			t.Fatalf("errors.Is(%v, errRefused) = false", err)
		}
	})
}

// plainBackend hides the RunStore of a membackend: a backend without leases.
type plainBackend struct{ *membackend.Backend }

func (plainBackend) Runs() {} // shadows LeaseBackend's method with another signature

var errRefused = errors.New("this store cannot run that job")

// nilBackend marks a case that passes a nil Backend to New.
var nilBackend anarchon.Backend = &plainBackend{}

type refusingBackend struct{ *membackend.Backend }

func (refusingBackend) CheckJob(anarchon.JobLimits) error { return errRefused }

func TestPlainBackendHasNoLeases(t *testing.T) {
	if _, ok := anarchon.Backend(&plainBackend{}).(anarchon.LeaseBackend); ok {
		t.Fatal("plainBackend still offers a RunStore")
	}
}

// gatedClaims is a membackend whose plain claims are recorded at once but
// answered only when gate closes, or never if the caller gives up first:
// an answer lost on the way back.
type gatedClaims struct {
	*membackend.Backend
	sent chan struct{} // closed when the first claim has been recorded
	gate chan struct{}
	once sync.Once
}

func (g *gatedClaims) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	won, err := g.Backend.Claim(ctx, in)
	g.once.Do(func() { close(g.sent) })
	select {
	case <-g.gate:
		return won, err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// A plain claim in flight when Stop begins must not be abandoned: the store
// may have recorded it, and no other instance would run the slot. Its
// answer is awaited, and the won slot runs before Stop returns.
func TestStopDuringClaimStillRunsTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &gatedClaims{Backend: membackend.New(nil), sent: make(chan struct{}), gate: make(chan struct{})}
		var ran atomic.Int64
		s := newSched(t, g, "i0", nil)
		h := func(context.Context, *anarchon.Run) error { ran.Add(1); return nil }
		if err := s.Every("job", time.Hour, h, &anarchon.JobOptions{NoLease: true}); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		<-g.sent // the slot's claim is recorded; its answer waits
		stopped := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			stopped <- s.Stop(ctx)
		}()
		time.Sleep(time.Second) // Stop has begun (the bubble is idle)
		close(g.gate)
		if err := <-stopped; err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if n := ran.Load(); n != 1 {
			t.Errorf("the claimed slot ran %d times, want 1", n)
		}
	})
}
