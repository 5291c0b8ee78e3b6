package anarchon_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// onceCluster registers a one-off job at `at` on n schedulers over b and
// starts them; calls counts the handler's runs.
func onceCluster(t *testing.T, b anarchon.Backend, n int, at time.Time, opts *anarchon.JobOptions, calls *counter) []*anarchon.Scheduler {
	t.Helper()
	var ss []*anarchon.Scheduler
	for i := range n {
		s := newSched(t, b, fmt.Sprintf("i%d-%d", i, time.Now().UnixNano()), nil)
		if err := s.At("once", at, func(ctx context.Context, run *anarchon.Run) error {
			calls.add(run)
			time.Sleep(time.Second)
			return nil
		}, opts); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		ss = append(ss, s)
	}
	return ss
}

type counter struct {
	mu   sync.Mutex
	runs []anarchon.Run
}

func (c *counter) add(r *anarchon.Run) { c.mu.Lock(); c.runs = append(c.runs, *r); c.mu.Unlock() }
func (c *counter) get() []anarchon.Run {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]anarchon.Run(nil), c.runs...)
}

// A one-off job on three schedulers sharing a store runs once, at its
// time; a fourth scheduler started 20 s later (inside MaxLate) does not
// run it again; history holds one record.
func TestOnceRunsOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    func() anarchon.Backend
	}{
		{"lease", func() anarchon.Backend { return membackend.New(nil) }},
		{"plain", func() anarchon.Backend { return plainOnly{membackend.New(nil)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := tc.b()
				at := time.Now().Add(30 * time.Second).Truncate(time.Millisecond)
				var calls counter
				ss := onceCluster(t, b, 3, at, nil, &calls)
				time.Sleep(50 * time.Second) // 20 s after the slot
				ss = append(ss, onceCluster(t, b, 1, at, nil, &calls)...)
				time.Sleep(time.Hour)
				stopAll(t, ss...)
				got := calls.get()
				if len(got) != 1 || !got[0].Slot.Equal(at) {
					t.Fatalf("runs %+v, want one of slot %v", got, at)
				}
				hist, err := ss[3].History(context.Background(), "once", 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(hist) != 1 || hist[0].Status != anarchon.StatusSuccess || !hist[0].Slot.Equal(at) {
					t.Fatalf("history %+v, want one success", hist)
				}
				if next, err := ss[0].NextSlots("once", time.Time{}, 3); err != nil || len(next) != 0 {
					t.Errorf("NextSlots after the slot: %v %v, want none", next, err)
				}
			})
		})
	}
}

// Every instance starts after the slot, inside MaxLate (or, with a
// RunStore, inside the catch-up window): the slot runs once. Past the
// window, registration fails with CodeTooLate.
func TestOnceLateStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		ago  time.Duration
		opts *anarchon.JobOptions
	}{
		{"MaxLate", 40 * time.Second, nil},
		{"CatchUp", 2 * time.Hour, &anarchon.JobOptions{CatchUp: anarchon.CatchUp{Window: 3 * time.Hour}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				at := time.Now().Add(-tc.ago).Truncate(time.Millisecond)
				var calls counter
				ss := onceCluster(t, membackend.New(nil), 3, at, tc.opts, &calls)
				time.Sleep(time.Hour)
				stopAll(t, ss...)
				if got := calls.get(); len(got) != 1 {
					t.Fatalf("%d runs, want 1", len(got))
				}
			})
		})
	}
}

// latestOnce is the latest one-off time At takes: the end of 9999.
var latestOnce = time.Date(9999, time.December, 31, 23, 59, 59, 999_000_000, time.UTC)

func TestOnceBadInput(t *testing.T) {
	h := func(context.Context, *anarchon.Run) error { return nil }
	now := time.Now().Truncate(time.Millisecond)
	for _, tc := range []struct {
		name string
		at   time.Time
		opts *anarchon.JobOptions
		code anarchon.Code
	}{
		{"PastMaxLate", now.Add(-2 * time.Minute), nil, anarchon.CodeTooLate},
		{"PastCatchUp", now.Add(-2 * time.Hour), &anarchon.JobOptions{CatchUp: anarchon.CatchUp{Window: time.Hour}}, anarchon.CodeTooLate},
		{"Zero", time.Time{}, nil, anarchon.CodeBadTime},
		{"SubMillisecond", now.Add(time.Hour).Truncate(time.Millisecond).Add(time.Microsecond), nil, anarchon.CodeBadTime},
		// A past time is too late whatever else is wrong with it.
		{"PastSubMillisecond", now.Add(-time.Hour).Add(time.Microsecond), nil, anarchon.CodeTooLate},
		{"1960", time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), nil, anarchon.CodeTooLate},
		{"Year1", time.Date(1, 1, 1, 0, 0, 0, 1e6, time.UTC), nil, anarchon.CodeTooLate},
		{"AfterLatest", latestOnce.Add(time.Millisecond), nil, anarchon.CodeBadTime},
		// Not too late under a catch-up window of a century, but no slot.
		{"Before1970", time.UnixMilli(-1000), &anarchon.JobOptions{CatchUp: anarchon.CatchUp{Window: 100 * 365 * 24 * time.Hour}}, anarchon.CodeBadTime},
		{"Offset", now.Add(time.Hour), &anarchon.JobOptions{Offset: time.Second}, anarchon.CodeBadOption},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSched(t, membackend.New(nil), "i", nil)
			err := s.At("j", tc.at, h, tc.opts)
			var ve *anarchon.ValidationError
			if !errors.As(err, &ve) || ve.Code != tc.code {
				t.Fatalf("got %v, want code %s", err, tc.code)
			}
			// Bounds are said as dates, not as years of Unix ms.
			if msg := err.Error(); strings.Contains(msg, "73071226") || strings.Contains(msg, "292 years") != (tc.name == "Year1") {
				t.Errorf("message: %s", msg)
			}
			t.Log(err)
		})
	}
	// The latest time allowed is allowed.
	s := newSched(t, membackend.New(nil), "i", nil)
	if err := s.At("latest", latestOnce, h, nil); err != nil {
		t.Errorf("At(%v) = %v", latestOnce, err)
	}
}
