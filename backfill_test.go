package anarchon_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// Two callers backfill the same 1,000 slots of a minutely job at once, on
// two schedulers sharing a store, after a first backfill already ran 10 of
// them: every slot runs exactly once, the 10 are skipped, and history has
// one success per slot.
func TestBackfillTwoCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		var mu sync.Mutex
		runs := map[int64]int{}
		h := func(ctx context.Context, run *anarchon.Run) error {
			mu.Lock()
			runs[run.Slot.UnixMilli()]++
			mu.Unlock()
			time.Sleep(time.Second)
			return nil
		}
		to := time.Now().Truncate(time.Minute)
		from := to.Add(-1000 * time.Minute)
		var ss []*anarchon.Scheduler
		for _, id := range []string{"a", "b"} {
			s := newSched(t, store, id, nil)
			if err := s.Every("daily", time.Minute, h, &anarchon.JobOptions{HistorySize: 2000}); err != nil {
				t.Fatal(err)
			}
			ss = append(ss, s)
		}
		first, err := ss[0].Backfill(context.Background(), "daily", from.Add(100*time.Minute), from.Add(110*time.Minute), nil)
		if err != nil || first.Ran != 10 || first.Total != 10 {
			t.Fatalf("first backfill %+v, %v", first, err)
		}

		var wg sync.WaitGroup
		results := make([]anarchon.BackfillResult, 2)
		var progress [2]int
		for i, s := range ss {
			wg.Go(func() {
				var err error
				results[i], err = s.Backfill(context.Background(), "daily", from, to, &anarchon.BackfillOptions{
					Concurrency: 4,
					OnProgress:  func(anarchon.BackfillProgress) { mu.Lock(); progress[i]++; mu.Unlock() },
				})
				if err != nil {
					t.Errorf("caller %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if len(runs) != 1000 {
			t.Fatalf("%d slots ran, want 1000", len(runs))
		}
		for slot, n := range runs {
			if n != 1 {
				t.Errorf("slot %v ran %d times", time.UnixMilli(slot).UTC(), n)
			}
		}
		if ran := results[0].Ran + results[1].Ran; ran != 990 {
			t.Errorf("the callers ran %d slots between them (%+v), want 990", ran, results)
		}
		for i, r := range results {
			if r.Total != 1000 || r.Ran+r.Skipped != 1000 || progress[i] != 1000 {
				t.Errorf("caller %d: %+v, %d progress reports", i, r, progress[i])
			}
		}
		hist, err := ss[1].History(context.Background(), "daily", 0)
		if err != nil {
			t.Fatal(err)
		}
		ok := 0
		for _, r := range hist {
			if r.Status == anarchon.StatusSuccess {
				ok++
			}
		}
		if len(hist) != 1000 || ok != 1000 {
			t.Errorf("history: %d records, %d successes, want 1000 of each", len(hist), ok)
		}
	})
}

func TestBackfillBadInput(t *testing.T) {
	h := func(context.Context, *anarchon.Run) error { return nil }
	now := time.Now().Truncate(time.Minute)
	for _, tc := range []struct {
		name     string
		b        anarchon.Backend
		from, to time.Time
		opts     *anarchon.BackfillOptions
		code     anarchon.Code
	}{
		{"FromNotBeforeTo", membackend.New(nil), now.Add(-time.Hour), now.Add(-time.Hour), nil, anarchon.CodeBadRange},
		{"FromAfterTo", membackend.New(nil), now.Add(-time.Hour), now.Add(-2 * time.Hour), nil, anarchon.CodeBadRange},
		{"Future", membackend.New(nil), now.Add(-time.Hour), now.Add(time.Hour), nil, anarchon.CodeBadRange},
		{"TooMany", membackend.New(nil), now.Add(-1001 * time.Minute), now, nil, anarchon.CodeTooManySlots},
		{"TooManyForMax", membackend.New(nil), now.Add(-11 * time.Minute), now, &anarchon.BackfillOptions{MaxSlots: 10}, anarchon.CodeTooManySlots},
		{"Negative", membackend.New(nil), now.Add(-time.Hour), now, &anarchon.BackfillOptions{Concurrency: -1}, anarchon.CodeBadOption},
		{"NoRunStore", plainOnly{membackend.New(nil)}, now.Add(-time.Hour), now, nil, anarchon.CodeNeedsRunStore},
		{"DedupeWindow", membackend.New(&membackend.Options{DedupeWindow: time.Hour}), now.Add(-2 * time.Hour), now, nil, anarchon.CodeDedupeWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSched(t, tc.b, "i", nil)
			if err := s.Every("j", time.Minute, h, nil); err != nil {
				t.Fatal(err)
			}
			_, err := s.Backfill(context.Background(), "j", tc.from, tc.to, tc.opts)
			var ve *anarchon.ValidationError
			if !errors.As(err, &ve) || ve.Code != tc.code {
				t.Fatalf("got %v, want code %s", err, tc.code)
			}
		})
	}
	s := newSched(t, membackend.New(nil), "i", nil)
	if _, err := s.Backfill(context.Background(), "nope", now.Add(-time.Hour), now, nil); !errors.Is(err, anarchon.ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}
	// Exactly MaxSlots runs; more with Confirm.
	if err := s.Every("j", time.Minute, h, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		slots int
		opts  *anarchon.BackfillOptions
	}{{10, &anarchon.BackfillOptions{MaxSlots: 10}}, {11, &anarchon.BackfillOptions{MaxSlots: 10, Confirm: true}}} {
		res, err := s.Backfill(context.Background(), "j", now.Add(-time.Duration(tc.slots)*time.Minute-2*time.Hour), now.Add(-2*time.Hour), tc.opts)
		if err != nil || res.Total != tc.slots {
			t.Errorf("%d slots with %+v: %+v %v", tc.slots, tc.opts, res, err)
		}
	}
}

// A backfill runs its slots Concurrency at a time whatever the job's
// overlap policy: a BufferOne job's backfilled slots are neither skipped
// nor made to wait for each other.
func TestBackfillIgnoresOverlapPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		ran, running, most := 0, 0, 0
		h := func(ctx context.Context, run *anarchon.Run) error {
			mu.Lock()
			ran++
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(5 * time.Second)
			mu.Lock()
			running--
			mu.Unlock()
			return nil
		}
		s := newSched(t, membackend.New(nil), "i", nil)
		if err := s.Every("buf", time.Minute, h, &anarchon.JobOptions{Overlap: anarchon.OverlapBufferOne}); err != nil {
			t.Fatal(err)
		}
		to := time.Now().Truncate(time.Minute)
		res, err := s.Backfill(context.Background(), "buf", to.Add(-20*time.Minute), to, &anarchon.BackfillOptions{Concurrency: 4})
		if err != nil || res.Ran != 20 || ran != 20 || most != 4 {
			t.Fatalf("%+v %v: %d runs, at most %d at once; want 20 runs, 4 at once", res, err, ran, most)
		}
	})
}
