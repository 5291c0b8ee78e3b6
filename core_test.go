package anarchon_test

import (
	"context"
	"errors"
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

// A panicking handler is recorded as an error and the scheduler goes on; a
// timeout cancels the handler with cause ErrTimeout.
func TestPanicAndTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		s := newSched(t, store, "a", nil)
		var n atomic.Int32
		if err := s.Every("panics", time.Second, func(context.Context, *anarchon.Run) error {
			n.Add(1)
			panic("boom")
		}, &anarchon.JobOptions{NoLease: true}); err != nil {
			t.Fatal(err)
		}
		causes := make(chan error, 10)
		if err := s.Every("slow", 10*time.Second, func(ctx context.Context, _ *anarchon.Run) error {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		}, &anarchon.JobOptions{Timeout: 2 * time.Second, NoLease: true}); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		time.Sleep(10500 * time.Millisecond)
		stopAll(t, s)
		if n.Load() < 10 {
			t.Fatalf("the panicking job ran %d times, want >= 10: a panic stopped the scheduler", n.Load())
		}
		hist, _ := s.History(context.Background(), "panics", 0)
		if len(hist) == 0 || hist[0].Status != anarchon.StatusError || !strings.Contains(hist[0].Error, "panic: boom") {
			t.Fatalf("history %+v, want errors with the panic", hist)
		}
		if c := <-causes; !errors.Is(c, anarchon.ErrTimeout) {
			t.Fatalf("cause %v, want ErrTimeout", c)
		}
		hist, _ = s.History(context.Background(), "slow", 1)
		if len(hist) != 1 || !strings.Contains(hist[0].Error, anarchon.ErrTimeout.Error()) {
			t.Fatalf("history %+v, want the timeout named", hist)
		}
	})
}

// A claim that fails at the store is not run (fail closed); the error is
// reported, and the scheduler runs later slots once the store is back.
func TestStoreErrorFailsClosed(t *testing.T) {
	for _, leased := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "leased"}[leased], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var down atomic.Bool
				errDown := errors.New("connection refused")
				store := membackend.New(&membackend.Options{Fault: func(op string) error {
					if down.Load() && (op == "Claim" || op == "RunClaim") {
						return errDown
					}
					return nil
				}})
				var mu sync.Mutex
				var storeErrs []error
				s := newSched(t, store, "a", &anarchon.Options{OnEvent: func(e anarchon.Event) {
					if e.Kind == anarchon.EventStoreError {
						mu.Lock()
						storeErrs = append(storeErrs, e.Err)
						mu.Unlock()
					}
				}})
				l := newLedger(nil)
				if err := s.Every("job", time.Second, l.handler(nil), &anarchon.JobOptions{NoLease: !leased}); err != nil {
					t.Fatal(err)
				}
				mustStart(t, s)
				time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1500 * time.Millisecond)))
				down.Store(true)
				outage := time.Now()
				time.Sleep(5 * time.Second)
				down.Store(false)
				time.Sleep(3 * time.Second)
				stopAll(t, s)
				l.mu.Lock()
				defer l.mu.Unlock()
				for slot := range l.runs {
					ts := time.UnixMilli(slot)
					if ts.After(outage) && ts.Before(outage.Add(5*time.Second)) {
						t.Errorf("slot %v ran while the store was down", ts)
					}
				}
				if len(l.runs) < 4 {
					t.Errorf("only %d runs: the scheduler did not recover", len(l.runs))
				}
				mu.Lock()
				defer mu.Unlock()
				if len(storeErrs) < 5 || !errors.Is(storeErrs[0], errDown) {
					t.Errorf("store errors %v, want the backend's error unchanged for each failed claim", storeErrs)
				}
			})
		})
	}
}

func TestLifecycleErrors(t *testing.T) {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: quiet})
	h := func(context.Context, *anarchon.Run) error { return nil }
	if err := s.Stop(context.Background()); !errors.Is(err, anarchon.ErrNotStarted) {
		t.Fatalf("Stop before Start = %v", err)
	}
	if _, err := s.RunNow(context.Background(), "nope"); !errors.Is(err, anarchon.ErrNotFound) {
		t.Fatalf("RunNow unknown = %v", err)
	}
	if _, err := s.History(context.Background(), "nope", 1); !errors.Is(err, anarchon.ErrNotFound) {
		t.Fatalf("History unknown = %v", err)
	}
	mustStart(t, s)
	if err := s.Start(context.Background()); !errors.Is(err, anarchon.ErrStarted) {
		t.Fatalf("second Start = %v", err)
	}
	if err := s.Every("late", time.Second, h, nil); err != nil {
		t.Fatalf("Add after Start = %v", err)
	}
	if err := s.Every("late", time.Second, h, nil); !isCode(err, anarchon.CodeDuplicateName) {
		t.Fatalf("second Add after Start = %v, want CodeDuplicateName", err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop = %v", err)
	}
	if err := s.Every("after", time.Second, h, nil); !errors.Is(err, anarchon.ErrStopped) {
		t.Fatalf("Add after Stop = %v, want ErrStopped", err)
	}
}

func isCode(err error, c anarchon.Code) bool {
	var ve *anarchon.ValidationError
	return errors.As(err, &ve) && ve.Code == c
}

// A backend whose Init fails: Start returns its error unchanged.
func TestStartReturnsBackendError(t *testing.T) {
	errInit := errors.New("no route to store")
	store := membackend.New(&membackend.Options{Fault: func(op string) error {
		if op == "Init" {
			return errInit
		}
		return nil
	}})
	s := anarchon.New(store, &anarchon.Options{Logger: quiet})
	if err := s.Start(context.Background()); !errors.Is(err, errInit) {
		t.Fatalf("Start = %v, want the backend's error", err)
	}
}

// Interval slots sit on the epoch grid moved by Offset, whatever the start
// time, also before 1970.
func TestIntervalGrid(t *testing.T) {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: quiet})
	h := func(context.Context, *anarchon.Run) error { return nil }
	if err := s.Every("weekly", 7*24*time.Hour, h, &anarchon.JobOptions{Offset: 4 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := s.Every("7s", 7*time.Second, h, nil); err != nil {
		t.Fatal(err)
	}
	// The Unix epoch was a Thursday; a 4-day offset puts the grid on Mondays.
	got, _ := s.NextSlots("weekly", time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC), 2)
	if got[0] != time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) || got[1] != time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC) {
		t.Fatalf("weekly slots %v, want Mondays 30 Nov and 7 Dec", got)
	}
	for _, after := range []time.Time{time.Unix(-15, 0), time.Unix(-14, 0), time.Unix(0, 0), time.Unix(6, 999), time.Unix(1e9, 0)} {
		got, _ := s.NextSlots("7s", after, 3)
		for i, slot := range got {
			if slot.Unix()%7 != 0 || slot.Nanosecond() != 0 || !slot.After(after) {
				t.Fatalf("after %v: slot %d = %v is off the grid", after, i, slot)
			}
			if i == 0 && slot.Sub(after) > 7*time.Second {
				t.Fatalf("after %v: first slot %v skips one", after, slot)
			}
		}
	}
}

func TestBuildHistory(t *testing.T) {
	at := func(s int64) time.Time { return time.UnixMilli(s * 1000).UTC() }
	claims := []anarchon.ClaimRecord{
		{Slot: 1000, Token: "a", InstanceID: "i1", ClaimedAt: at(1)},
		{Slot: 2000, Token: "b", InstanceID: "i2", ClaimedAt: at(2)},
		{Slot: 3000, Token: "c", InstanceID: "i3", ClaimedAt: at(3)},
	}
	results := []anarchon.StoredResult{
		{Slot: 1000, Token: "a", InstanceID: "i1", Status: anarchon.StatusSuccess, StartedAt: at(1), FinishedAt: at(2)},
		{Slot: 2000, Token: "b", InstanceID: "i2", Status: anarchon.StatusError, Error: "x"},
		{Slot: 2000, Token: "b", InstanceID: "i2", Status: anarchon.StatusSuccess}, // a later save of the same run wins
		{Slot: 4000, Token: "missed-4", Status: anarchon.StatusMissed},
	}
	got := anarchon.BuildHistory("j", claims, results, 0)
	want := []struct {
		slot   int64
		status anarchon.Status
		inst   string
	}{{4, anarchon.StatusMissed, ""}, {3, anarchon.StatusRunning, "i3"}, {2, anarchon.StatusSuccess, "i2"}, {1, anarchon.StatusSuccess, "i1"}}
	if len(got) != len(want) {
		t.Fatalf("got %d records: %+v", len(got), got)
	}
	for i, w := range want {
		if got[i].Slot.Unix() != w.slot || got[i].Status != w.status || got[i].InstanceID != w.inst || got[i].Job != "j" || got[i].Attempt != 1 {
			t.Errorf("record %d = %+v, want slot %ds %s by %q", i, got[i], w.slot, w.status, w.inst)
		}
	}
	if got[3].ClaimedAt != at(1) {
		t.Errorf("claim time not merged: %+v", got[3])
	}
	if l := anarchon.BuildHistory("j", claims, results, 2); len(l) != 2 || l[0].Slot.Unix() != 4 {
		t.Fatalf("limit 2: %+v", l)
	}
}

// A claim without a result whose slot was taken over (a higher attempt) or
// abandoned (a record with the last attempt) is shown as lease_lost, not
// running; the current holder, manual runs and plain slots stay running.
func TestBuildHistorySuperseded(t *testing.T) {
	claims := []anarchon.ClaimRecord{
		{Slot: 1000, Token: "a1", Attempt: 1}, // killed, taken over by a2
		{Slot: 1000, Token: "a2", Attempt: 2}, // killed, taken over by a3
		{Slot: 1000, Token: "a3", Attempt: 3}, // running now
		{Slot: 2000, Token: "b1", Attempt: 1}, // taken over by b2, which finished
		{Slot: 2000, Token: "b2", Attempt: 2},
		{Slot: 3000, Token: "c3", Attempt: 3}, // the last holder of an abandoned slot
		{Slot: 4000, Token: "p", Attempt: 0},  // a plain claim in progress
		{Slot: 4000, Token: "m", Manual: true},
		{Slot: 5000, Token: "d1", Attempt: 1}, // killed; the takeover stored its record
		{Slot: 5000, Token: "d2", Attempt: 2},
		{Slot: 6000, Token: "e1", Attempt: 1}, // its finish came after the takeover
		{Slot: 6000, Token: "e2", Attempt: 2},
	}
	t0 := time.UnixMilli(6000)
	results := []anarchon.StoredResult{
		{Slot: 5000, Token: "d1", Attempt: 1, Status: anarchon.StatusLeaseLost},
		{Slot: 6000, Token: "e1", Attempt: 1, Status: anarchon.StatusLeaseLost, StartedAt: t0, FinishedAt: t0.Add(time.Second)},
		{Slot: 2000, Token: "b2", Attempt: 2, Status: anarchon.StatusSuccess},
		{Slot: 3000, Token: anarchon.AbandonedToken(3000), Attempt: 3, Status: anarchon.StatusAbandoned},
	}
	want := map[string]anarchon.Status{
		"a1": anarchon.StatusLeaseLost, "a2": anarchon.StatusLeaseLost, "a3": anarchon.StatusRunning,
		"b1": anarchon.StatusLeaseLost, "b2": anarchon.StatusSuccess,
		"c3": anarchon.StatusLeaseLost, anarchon.AbandonedToken(3000): anarchon.StatusAbandoned,
		"p": anarchon.StatusRunning, "m": anarchon.StatusRunning,
		"d1": anarchon.StatusLeaseLost, "d2": anarchon.StatusRunning,
		"e1": anarchon.StatusLeaseLost, "e2": anarchon.StatusRunning,
	}
	got := anarchon.BuildHistory("j", claims, results, 0)
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d: %+v", len(got), len(want), got)
	}
	for _, r := range got {
		if r.Status != want[r.Token] {
			t.Errorf("token %s: status %s, want %s", r.Token, r.Status, want[r.Token])
		}
		// A lease_lost record found so says why and what became of the slot.
		switch {
		case r.Token == "c3" && !strings.Contains(r.Error, "abandoned"),
			r.Token == "a1" && !strings.Contains(r.Error, "attempt 2 on"),
			r.Token == "b1" && !strings.Contains(r.Error, "attempt 2 on"),
			r.Token == "d1" && !strings.Contains(r.Error, "attempt 2 on"):
			t.Errorf("token %s: error %q, want the reason", r.Token, r.Error)
		case r.Token == "e1" && r.Error != "":
			// Its holder stored how its handler ended (a success):
			// "no result stored" would be false.
			t.Errorf("token %s: error %q, want none", r.Token, r.Error)
		}
	}
}

// A takeover in progress lists its running attempt 2 first, above the
// handed-over attempt 1 that has a start time.
func TestBuildHistoryTakeoverOrder(t *testing.T) {
	t0 := time.UnixMilli(1000).UTC()
	claims := []anarchon.ClaimRecord{
		{Slot: 1000, Token: "a1", Attempt: 1, ClaimedAt: t0},
		{Slot: 1000, Token: "a2", Attempt: 2, ClaimedAt: t0.Add(3 * time.Second)},
	}
	results := []anarchon.StoredResult{{Slot: 1000, Token: "a1", Attempt: 1, Status: anarchon.StatusHandedOver,
		StartedAt: t0, FinishedAt: t0.Add(time.Second)}}
	got := anarchon.BuildHistory("j", claims, results, 0)
	if len(got) != 2 || got[0].Token != "a2" || got[0].Status != anarchon.StatusRunning || got[1].Token != "a1" {
		t.Fatalf("history %+v; want a2 (running) above a1", got)
	}
}

func TestOutcomeKindString(t *testing.T) {
	for k, want := range map[anarchon.OutcomeKind]string{
		anarchon.OutcomeWon: "won", anarchon.OutcomeLate: "late", 0: "unknown(0)", 42: "unknown(42)",
	} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(k), got, want)
		}
	}
}

// Catch-up costs what it keeps, not the size of its window: a 1 ms job and
// a every-second cron job with windows of months start at once.
func TestCatchUpStartIsBounded(t *testing.T) {
	h := func(context.Context, *anarchon.Run) error { return nil }
	// Catch-up records missed slots in the background after Start returns:
	// wait for the first of each job before stopping.
	var once sync.Map
	missedFirst := make(chan string, 2)
	onEvent := func(e anarchon.Event) {
		if e.Kind == anarchon.EventSlotSkipped && e.Status == anarchon.StatusMissed && e.Job != "yearly" {
			if _, seen := once.LoadOrStore(e.Job, true); !seen {
				missedFirst <- e.Job
			}
		}
	}
	s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: quiet, OnEvent: onEvent})
	opts := &anarchon.JobOptions{CatchUp: anarchon.CatchUp{Window: 10000 * time.Hour, Max: 1}, HistorySize: 50, MaxLate: time.Second}
	if err := s.Every("fast", time.Millisecond, h, opts); err != nil {
		t.Fatal(err)
	}
	if err := s.Cron("seconds", "* * * * * *", h, opts); err != nil {
		t.Fatal(err)
	}
	if err := s.Cron("yearly", "@yearly", h, opts); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Start(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Start did not return within 20 s: catch-up walks its whole window")
	}
	for range 2 {
		select {
		case <-missedFirst:
		case <-time.After(20 * time.Second):
			t.Fatal("no missed slot recorded within 20 s")
		}
	}
	stopAll(t, s)
	for _, job := range []string{"fast", "seconds"} {
		hist, _ := s.History(context.Background(), job, 0)
		missed := 0
		for _, r := range hist {
			if r.Status == anarchon.StatusMissed {
				missed++
				if !strings.Contains(r.Error, "not run") {
					t.Errorf("%s: missed record %+v, want its reason", job, r)
				}
			}
		}
		if missed == 0 || missed > 50 {
			t.Errorf("%s: %d missed records, want 1..50 (HistorySize)", job, missed)
		}
	}
}

func TestNilBackendAndOddArguments(t *testing.T) {
	s := anarchon.New(nil, &anarchon.Options{Logger: quiet})
	if err := s.Start(context.Background()); !errors.Is(err, anarchon.ErrNoBackend) {
		t.Fatalf("Start with a nil backend = %v", err)
	}
	s = anarchon.New(membackend.New(nil), &anarchon.Options{Logger: quiet})
	if err := s.Every("j", time.Second, func(context.Context, *anarchon.Run) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{-1, 0, anarchon.MaxNextSlots + 1, 1_000_000_000} {
		var ve *anarchon.ValidationError
		if got, err := s.NextSlots("j", time.Time{}, n); !errors.As(err, &ve) || ve.Code != anarchon.CodeBadOption || ve.Field != "n" || got != nil {
			t.Fatalf("NextSlots(%d) = %d slots, %v; want a bad_option error", n, len(got), err)
		}
	}
	if got, err := s.NextSlots("j", time.Time{}, anarchon.MaxNextSlots); err != nil || len(got) != anarchon.MaxNextSlots {
		t.Fatalf("NextSlots(MaxNextSlots) = %d slots, %v", len(got), err)
	}
	if info := s.Jobs(); len(info) != 1 || info[0].Options.MaxLate != anarchon.DefaultMaxLate {
		t.Fatalf("Jobs() = %+v, want defaults applied", info)
	}
}

// An instance whose clock is off by more than ClockSkewWarning says so.
func TestClockSkewWarning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf strings.Builder
		var mu sync.Mutex
		logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
		s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: logger, Clock: anarchon.OffsetClock{Offset: 3 * time.Second}})
		if err := s.Every("j", time.Minute, func(context.Context, *anarchon.Run) error { return nil }, nil); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		stopAll(t, s)
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(buf.String(), "clock differs from the store's") {
			t.Fatalf("no skew warning in the log:\n%s", buf.String())
		}
	})
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// NotRun is true of the statuses of slots settled without running, whose
// records say why (SPEC §12), and of no other.
func TestStatusNotRun(t *testing.T) {
	for st, want := range map[anarchon.Status]bool{
		anarchon.StatusMissed: true, anarchon.StatusSkipped: true, anarchon.StatusPaused: true,
		anarchon.StatusSuccess: false, anarchon.StatusError: false, anarchon.StatusRunning: false,
		anarchon.StatusReplaced: false, anarchon.StatusAbandoned: false, anarchon.StatusLeaseLost: false,
	} {
		if st.NotRun() != want {
			t.Errorf("%s.NotRun() = %v, want %v", st, !want, want)
		}
	}
}
