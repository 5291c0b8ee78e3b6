package anarchon_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// retryCluster starts n schedulers on one memory store, each running an
// hourly job "flaky" with opts, whose handler is h; it returns them and a
// log of every handler call.
func retryCluster(t *testing.T, n int, every time.Duration, opts *anarchon.JobOptions, h func(run *anarchon.Run) error) ([]*anarchon.Scheduler, func() []anarchon.Run) {
	t.Helper()
	store := membackend.New(nil)
	var mu sync.Mutex
	var calls []anarchon.Run
	handler := func(ctx context.Context, run *anarchon.Run) error {
		mu.Lock()
		calls = append(calls, *run)
		mu.Unlock()
		time.Sleep(100 * time.Millisecond) // the work
		return h(run)
	}
	var ss []*anarchon.Scheduler
	for i := range n {
		s := newSched(t, store, fmt.Sprintf("i%d", i), nil)
		if err := s.Every("flaky", every, handler, opts); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		ss = append(ss, s)
	}
	return ss, func() []anarchon.Run {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(calls)
	}
}

// A handler that fails twice, then succeeds, on three schedulers sharing a
// store: one slot, three attempts, each run once, each after the
// configured backoff (2 s, then 2·3 = 6 s) by the store's clock; history
// shows every attempt with its error and the slot ends a success.
func TestRetryFailsTwiceThenSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fails := map[int64]int{}
		var mu sync.Mutex
		opts := &anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 5, InitialBackoff: 2 * time.Second, Multiplier: 3}}
		ss, calls := retryCluster(t, 3, time.Hour, opts, func(run *anarchon.Run) error {
			mu.Lock()
			defer mu.Unlock()
			if fails[run.Slot.UnixMilli()] < 2 {
				fails[run.Slot.UnixMilli()]++
				return fmt.Errorf("boom %d", run.Attempt)
			}
			return nil
		})
		time.Sleep(time.Hour + time.Minute)
		stopAll(t, ss...)

		got := calls()
		var attempts []int
		for _, c := range got {
			attempts = append(attempts, c.Attempt)
			if c.Slot != got[0].Slot {
				t.Errorf("a retry ran slot %v, want %v", c.Slot, got[0].Slot)
			}
		}
		if fmt.Sprint(attempts) != "[1 2 3]" {
			t.Fatalf("attempts %v, want [1 2 3]: each attempt once", attempts)
		}
		recs := historyBySlot(t, ss[1], "flaky")[got[0].Slot.UnixMilli()]
		slices.SortFunc(recs, func(a, b anarchon.RunRecord) int { return a.Attempt - b.Attempt })
		if len(recs) != 3 {
			t.Fatalf("history: %d records of the slot, want 3: %+v", len(recs), recs)
		}
		wantBackoff := []time.Duration{2 * time.Second, 6 * time.Second}
		for i, r := range recs {
			wantSt, wantErr := anarchon.StatusError, fmt.Sprintf("boom %d", i+1)
			if i == 2 {
				wantSt, wantErr = anarchon.StatusSuccess, ""
			}
			if r.Attempt != i+1 || r.Status != wantSt || r.Error != wantErr {
				t.Errorf("record %d: attempt %d status %s error %q, want %d %s %q", i, r.Attempt, r.Status, r.Error, i+1, wantSt, wantErr)
			}
			if i > 0 {
				gap := r.StartedAt.Sub(recs[i-1].FinishedAt)
				// The retry is a claim again at the lease's end, which
				// waits BatchWindow for others ending with it (a burst's).
				if d := gap - wantBackoff[i-1]; d < -time.Millisecond || d > time.Millisecond+anarchon.BatchWindow {
					t.Errorf("attempt %d started %v after attempt %d ended, want %v, -1ms to +1ms+BatchWindow", i+1, gap, i, wantBackoff[i-1])
				}
			}
		}
	})
}

// An error marked Permanent ends the slot at once, whatever MaxRetries
// allows, whether the handler returns it or panics with it (PanicError
// unwraps to it).
func TestRetryPermanentStops(t *testing.T) {
	t.Run("Returned", func(t *testing.T) {
		testRetryPermanentStops(t, func() error { return anarchon.Permanent(errors.New("bad input")) }, "bad input")
	})
	t.Run("Panicked", func(t *testing.T) {
		testRetryPermanentStops(t, func() error { panic(anarchon.Permanent(errors.New("bad input"))) }, "panic: bad input")
	})
}

func testRetryPermanentStops(t *testing.T, fail func() error, wantErr string) {
	synctest.Test(t, func(t *testing.T) {
		opts := &anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 5, InitialBackoff: time.Second}}
		ss, calls := retryCluster(t, 3, time.Hour, opts, func(run *anarchon.Run) error {
			return fail()
		})
		time.Sleep(time.Hour + time.Minute)
		stopAll(t, ss...)
		if got := calls(); len(got) != 1 {
			t.Fatalf("%d attempts, want 1: %+v", len(got), got)
		}
		hist, err := ss[2].History(context.Background(), "flaky", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 1 || hist[0].Status != anarchon.StatusError || hist[0].Error != wantErr {
			t.Fatalf("history %+v, want one error record", hist)
		}
	})
}

// MaxRetries bounds the attempts; under OverlapSkip a retry that would
// start at or after the next slot is not made.
func TestRetryBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		every time.Duration
		retry anarchon.Retry
		want  string
	}{
		{"MaxRetries", time.Hour, anarchon.Retry{MaxRetries: 2, InitialBackoff: time.Second, Multiplier: 1}, "[1 2 3]"},
		// Backoffs 4 s then 8 s: the second retry would start at ~12.2 s,
		// after the next slot (10 s).
		{"NextSlot", 10 * time.Second, anarchon.Retry{MaxRetries: 5, InitialBackoff: 4 * time.Second}, "[1 2]"},
		{"MaxBackoff", time.Hour, anarchon.Retry{MaxRetries: 3, InitialBackoff: time.Second, MaxBackoff: 1500 * time.Millisecond, Multiplier: 10}, "[1 2 3 4]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := &anarchon.JobOptions{Retry: tc.retry}
				ss, calls := retryCluster(t, 3, tc.every, opts, func(run *anarchon.Run) error { return errors.New("always") })
				// Run until just before the second slot.
				time.Sleep(time.Until(time.Now().Truncate(tc.every).Add(2 * tc.every).Add(-time.Millisecond)))
				stopAll(t, ss...)
				var attempts []int
				got := calls()
				for _, c := range got {
					if c.Slot.Equal(got[0].Slot) {
						attempts = append(attempts, c.Attempt)
					}
				}
				if fmt.Sprint(attempts) != tc.want {
					t.Fatalf("attempts of the first slot %v, want %s", attempts, tc.want)
				}
				recs := historyBySlot(t, ss[0], "flaky")[got[0].Slot.UnixMilli()]
				for _, r := range recs {
					if r.Status != anarchon.StatusError {
						t.Errorf("record %+v, want status error", r)
					}
				}
				if len(recs) != len(attempts) {
					t.Errorf("%d records of the slot, want %d", len(recs), len(attempts))
				}
			})
		})
	}
}

// Bad retry options are refused with codes; retries need a RunStore.
func TestRetryBadInput(t *testing.T) {
	h := func(context.Context, *anarchon.Run) error { return nil }
	for _, tc := range []struct {
		name string
		b    anarchon.Backend
		o    anarchon.JobOptions
		code anarchon.Code
	}{
		{"NegativeBackoff", membackend.New(nil), anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 1, InitialBackoff: -time.Second}}, anarchon.CodeNegativeDuration},
		{"NegativeMax", membackend.New(nil), anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 1, MaxBackoff: -1}}, anarchon.CodeNegativeDuration},
		{"NegativeJitter", membackend.New(nil), anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 1, Jitter: -1}}, anarchon.CodeNegativeDuration},
		{"NegativeRetries", membackend.New(nil), anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: -1}}, anarchon.CodeBadOption},
		{"TooManyRetries", membackend.New(nil), anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: anarchon.MaxRetries + 1}}, anarchon.CodeBadOption},
		{"Multiplier", membackend.New(nil), anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 1, Multiplier: 0.5}}, anarchon.CodeBadOption},
		{"MaxBelowInitial", membackend.New(nil), anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 1, InitialBackoff: time.Minute, MaxBackoff: time.Second}}, anarchon.CodeBadOption},
		{"NoLease", membackend.New(nil), anarchon.JobOptions{NoLease: true, Retry: anarchon.Retry{MaxRetries: 1}}, anarchon.CodeBadOption},
		{"NoRunStore", plainOnly{membackend.New(nil)}, anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 1}}, anarchon.CodeNeedsRunStore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSched(t, tc.b, "i", nil)
			err := s.Every("j", time.Minute, h, &tc.o)
			var ve *anarchon.ValidationError
			if !errors.As(err, &ve) || ve.Code != tc.code {
				t.Fatalf("got %v, want code %s", err, tc.code)
			}
		})
	}
}

// plainOnly hides the RunStore of a backend.
type plainOnly struct{ anarchon.Backend }

// The instance whose handler failed stops during the backoff: another
// instance runs the retry, as attempt 2, once the backoff is over by the
// store's clock.
func TestRetryTakenByAnotherInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := &anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 3, InitialBackoff: 10 * time.Second}}
		ss, calls := retryCluster(t, 3, time.Hour, opts, func(run *anarchon.Run) error {
			if run.Attempt == 1 {
				return errors.New("first attempt fails")
			}
			return nil
		})
		slot := time.Now().Truncate(time.Hour).Add(time.Hour)
		time.Sleep(time.Until(slot.Add(2 * time.Second)))
		first := calls()
		if len(first) != 1 {
			t.Fatalf("%d attempts by the slot's second second, want 1", len(first))
		}
		var rest []*anarchon.Scheduler
		for _, s := range ss {
			if s.InstanceID() == first[0].InstanceID {
				stopAll(t, s) // the failing instance leaves during the backoff
			} else {
				rest = append(rest, s)
			}
		}
		time.Sleep(time.Minute)
		stopAll(t, rest...)
		got := calls()
		if len(got) != 2 || got[1].Attempt != 2 || got[1].InstanceID == first[0].InstanceID {
			t.Fatalf("attempts %+v, want attempt 2 on another instance", got)
		}
		if gap := got[1].Slot; !gap.Equal(slot) {
			t.Errorf("the retry ran slot %v, want %v", gap, slot)
		}
		recs := historyBySlot(t, rest[0], "flaky")[slot.UnixMilli()]
		if len(recs) != 2 {
			t.Fatalf("history %+v, want 2 records", recs)
		}
		for _, r := range recs {
			if (r.Attempt == 1) != (r.Status == anarchon.StatusError) {
				t.Errorf("record %+v", r)
			}
		}
		if !recs[0].StartedAt.After(recs[1].FinishedAt.Add(10*time.Second - time.Millisecond)) {
			t.Errorf("the retry started %v after the failure, want >= the 10 s backoff", recs[0].StartedAt.Sub(recs[1].FinishedAt))
		}
	})
}

// failingClaims makes every lease claim fail while down is set: the store
// is unreachable for claims.
type failingClaims struct {
	*membackend.Backend
	down *atomic.Bool
}

func (f failingClaims) Runs() anarchon.RunStore {
	return failingRuns{RunStore: f.Backend.Runs(), down: f.down}
}

type failingRuns struct {
	anarchon.RunStore
	down *atomic.Bool
}

func (f failingRuns) Claim(ctx context.Context, c anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	if f.down.Load() {
		return anarchon.ClaimOutcome{}, errPartition
	}
	return f.RunStore.Claim(ctx, c)
}

// The retry is set up to start before the next slot (10 s job, 4 s
// backoff), but no claim reaches the store until 12 s: the attempt that
// then wins the slot does not run its handler (it would overlap the next
// slot) and the slot ends with an error saying so.
func TestRetryNeverAfterNextSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		var down atomic.Bool
		var mu sync.Mutex
		var calls []anarchon.Run
		h := func(ctx context.Context, run *anarchon.Run) error {
			mu.Lock()
			calls = append(calls, *run)
			mu.Unlock()
			if run.Attempt == 1 {
				down.Store(true) // the store stops answering claims
			}
			return errors.New("fails")
		}
		slot := time.Now().Truncate(10 * time.Second).Add(10 * time.Second)
		var ss []*anarchon.Scheduler
		for i := range 3 {
			s := newSched(t, failingClaims{store, &down}, fmt.Sprintf("i%d", i), nil)
			if err := s.Every("tight", 10*time.Second, h, &anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 3, InitialBackoff: 4 * time.Second}}); err != nil {
				t.Fatal(err)
			}
			mustStart(t, s)
			ss = append(ss, s)
		}
		time.Sleep(time.Until(slot.Add(12 * time.Second)))
		down.Store(false)
		time.Sleep(5 * time.Second)
		stopAll(t, ss...)
		mu.Lock()
		defer mu.Unlock()
		for _, c := range calls {
			if c.Slot.Equal(slot) && c.Attempt > 1 {
				t.Errorf("attempt %d of the slot ran after the next slot was due", c.Attempt)
			}
		}
		recs := historyBySlot(t, ss[0], "tight")[slot.UnixMilli()]
		found := false
		for _, r := range recs {
			if r.Attempt == 2 {
				found = true
				if r.Status != anarchon.StatusError || !strings.Contains(r.Error, "came after the job's next slot was due") {
					t.Errorf("attempt 2's record %+v", r)
				}
			}
		}
		if !found {
			t.Errorf("no record of attempt 2: %+v", recs)
		}
	})
}

// With retries, PauseOnFailure counts slots, not attempts: one slot whose
// three attempts all fail is one failed run; the job pauses after its
// second failed slot.
func TestRetryPauseOnFailureCountsSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := &anarchon.JobOptions{PauseOnFailure: 2, Retry: anarchon.Retry{MaxRetries: 2, InitialBackoff: time.Second}}
		ss, calls := retryCluster(t, 3, time.Minute, opts, func(run *anarchon.Run) error { return errors.New("down") })
		first := time.Now().Truncate(time.Minute).Add(time.Minute)
		time.Sleep(time.Until(first.Add(30 * time.Second)))
		st, err := ss[0].JobState(context.Background(), "flaky")
		if err != nil || st.Paused {
			t.Fatalf("after one failed slot (3 attempts): %+v %v, want not paused", st, err)
		}
		time.Sleep(time.Minute)
		st, err = ss[0].JobState(context.Background(), "flaky")
		if err != nil || !st.Paused {
			t.Fatalf("after two failed slots: %+v %v, want paused", st, err)
		}
		time.Sleep(3 * time.Minute)
		stopAll(t, ss...)
		if n := len(calls()); n != 6 {
			t.Errorf("%d attempts, want 6: 3 for each of two slots, none after the pause", n)
		}
	})
}

// A Timeout is a handler error like any other (Retry's doc): the attempt
// it cut short is recorded with the timeout as its cause, and the slot is
// run again.
func TestRetryAfterTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSched(t, membackend.New(nil), "i0", nil)
		var mu sync.Mutex
		var attempts []int
		h := func(ctx context.Context, run *anarchon.Run) error {
			mu.Lock()
			attempts = append(attempts, run.Attempt)
			mu.Unlock()
			if run.Attempt == 1 {
				<-ctx.Done() // hangs until the timeout
				return ctx.Err()
			}
			return nil
		}
		opts := &anarchon.JobOptions{Timeout: 5 * time.Second, Retry: anarchon.Retry{MaxRetries: 2, InitialBackoff: time.Second}}
		if err := s.Every("slow", time.Hour, h, opts); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		time.Sleep(time.Hour + time.Minute)
		stopAll(t, s)
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(attempts) != "[1 2]" {
			t.Fatalf("attempts %v, want [1 2]: the timed-out attempt retried once", attempts)
		}
		recs := historyBySlot(t, s, "slow")
		if len(recs) != 1 {
			t.Fatalf("history of %d slots, want 1: %+v", len(recs), recs)
		}
		for _, rs := range recs {
			slices.SortFunc(rs, func(a, b anarchon.RunRecord) int { return a.Attempt - b.Attempt })
			if len(rs) != 2 || rs[0].Status != anarchon.StatusError || !strings.Contains(rs[0].Error, anarchon.ErrTimeout.Error()) ||
				rs[1].Status != anarchon.StatusSuccess {
				t.Errorf("records %+v, want attempt 1 an error naming the timeout, attempt 2 a success", rs)
			}
		}
	})
}

// Each failed attempt says whether a retry follows: EventRunEnd's Retry,
// RetryIn and Reason, and the "run failed" line's "retry" attribute, name
// the next attempt and its backoff, or say that no retry follows and why
// (the last attempt the limit allows, a permanent error, the next slot).
// A job without retries says nothing of them.
func TestRetryFailureSaysWhatFollows(t *testing.T) {
	type end struct {
		attempt int
		retry   bool
		in      time.Duration
		reason  string
	}
	for _, tc := range []struct {
		name  string
		every time.Duration
		retry anarchon.Retry
		err   error
		want  []end
	}{
		{"LastAttempt", time.Hour, anarchon.Retry{MaxRetries: 2, InitialBackoff: time.Second, Multiplier: 1}, errors.New("always"), []end{
			{1, true, time.Second, "attempt 2 (of at most 3) follows in 1s"},
			{2, true, time.Second, "attempt 3 (of at most 3) follows in 1s"},
			{3, false, 0, "no retry: attempt 3 was the last one the retry limit allows (2 retries)"},
		}},
		{"Permanent", time.Hour, anarchon.Retry{MaxRetries: 2}, anarchon.Permanent(errors.New("bad input")), []end{
			{1, false, 0, "no retry: the error is marked permanent"},
		}},
		// Backoffs 4 s then 8 s: the second would reach the next slot.
		{"NextSlot", 10 * time.Second, anarchon.Retry{MaxRetries: 5, InitialBackoff: 4 * time.Second}, errors.New("always"), []end{
			{1, true, 4 * time.Second, "attempt 2 (of at most 6) follows in 4s"},
			{2, false, 0, "no retry: a retry 8s from now would start at or after the job's next slot 2000-01-01T00:00:20Z (overlap skip)"},
		}},
		{"NoRetries", time.Hour, anarchon.Retry{}, errors.New("always"), []end{{1, false, 0, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var buf logBuffer
				var mu sync.Mutex
				var ends []end
				s := newSched(t, membackend.New(nil), "i0", &anarchon.Options{
					Logger: slog.New(slog.NewJSONHandler(&buf, nil)),
					OnEvent: func(e anarchon.Event) {
						if e.Kind == anarchon.EventRunEnd {
							mu.Lock()
							ends = append(ends, end{e.Attempt, e.Retry, e.RetryIn, e.Reason})
							mu.Unlock()
						}
					},
				})
				first := time.Now().Truncate(tc.every).Add(tc.every)
				h := func(context.Context, *anarchon.Run) error { return tc.err }
				if err := s.Every("flaky", tc.every, h, &anarchon.JobOptions{Retry: tc.retry}); err != nil {
					t.Fatal(err)
				}
				mustStart(t, s)
				// Run until just before the second slot.
				time.Sleep(time.Until(first.Add(tc.every - time.Millisecond)))
				stopAll(t, s)
				mu.Lock()
				defer mu.Unlock()
				if fmt.Sprint(ends) != fmt.Sprint(tc.want) {
					t.Errorf("run ends (attempt, retry, backoff, reason)\n%v\nwant\n%v", ends, tc.want)
				}
				var logged []string
				for _, l := range jsonLines(t, &buf) {
					if l["msg"] == "run failed" {
						r, _ := l["retry"].(string)
						logged = append(logged, r)
					}
				}
				var want []string
				for _, e := range tc.want {
					want = append(want, e.reason)
				}
				if !slices.Equal(logged, want) {
					t.Errorf("\"run failed\" lines' retry attributes %q, want %q", logged, want)
				}
			})
		})
	}
}

// A won claim's event says whether it is the instance's own retry
// (Event.Retry): attempt 2 of a slot whose attempt 1 failed on another
// instance that then stopped is that instance's retry, not this one's
// (Retry false: the daemon reads how attempt 1 ended from the history,
// cmd/anarchon's TestRetryWonByAnotherReplica); attempt 2 of the next
// slot, whose attempt 1 failed on the instance that won it, is its own
// retry (Retry true). First claims never are.
func TestClaimEventRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		type win struct {
			instance string
			slot     int64 // Unix ms
			attempt  int
			retry    bool
		}
		var mu sync.Mutex
		var wins []win
		var ss []*anarchon.Scheduler
		for i := range 2 {
			id := fmt.Sprintf("i%d", i)
			s := newSched(t, store, id, &anarchon.Options{OnEvent: func(e anarchon.Event) {
				if e.Kind == anarchon.EventClaim && e.Outcome == "won" {
					mu.Lock()
					wins = append(wins, win{id, e.Slot.UnixMilli(), e.Attempt, e.Retry})
					mu.Unlock()
				}
			}})
			h := func(_ context.Context, run *anarchon.Run) error {
				if run.Attempt == 1 {
					return errors.New("first attempt fails")
				}
				return nil
			}
			if err := s.Every("flaky", time.Hour, h, &anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 1, InitialBackoff: 10 * time.Second}}); err != nil {
				t.Fatal(err)
			}
			mustStart(t, s)
			ss = append(ss, s)
		}
		first := time.Now().Truncate(time.Hour).Add(time.Hour)
		time.Sleep(time.Until(first.Add(2 * time.Second)))
		mu.Lock()
		failed := wins[0].instance
		mu.Unlock()
		var rest *anarchon.Scheduler
		for _, s := range ss {
			if s.InstanceID() == failed {
				stopAll(t, s) // leaves during the backoff: the other takes attempt 2 over
			} else {
				rest = s
			}
		}
		second := first.Add(time.Hour)
		time.Sleep(time.Until(second.Add(time.Minute)))
		stopAll(t, rest)
		other := rest.InstanceID()
		f, n := first.UnixMilli(), second.UnixMilli()
		want := []win{{failed, f, 1, false}, {other, f, 2, false}, {other, n, 1, false}, {other, n, 2, true}}
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(wins) != fmt.Sprint(want) {
			t.Errorf("won claims (instance, slot, attempt, retry)\n%v\nwant\n%v", wins, want)
		}
	})
}
