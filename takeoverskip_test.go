package anarchon_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// gatedStore is one instance's view of a shared membackend in which the
// run of one slot is doomed: every heartbeat of it fails (its holder is
// cut off), and the backups' claims of it made after its first second are
// held until gate closes. Only the RunStore's own methods show, so every
// claim goes through Claim.
type gatedStore struct {
	*membackend.Backend
	slot       int64 // Unix ms
	from       time.Time
	gate       chan struct{}
	failActive bool // Active fails as if the store were unreachable
}

func (g *gatedStore) Runs() anarchon.RunStore { return gatedRuns{g.Backend.Runs(), g} }

type gatedRuns struct {
	anarchon.RunStore
	g *gatedStore
}

func (r gatedRuns) Claim(ctx context.Context, c anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	if c.Slot == r.g.slot && time.Now().After(r.g.from) {
		select {
		case <-r.g.gate:
		case <-ctx.Done():
			return anarchon.ClaimOutcome{}, ctx.Err()
		}
	}
	return r.RunStore.Claim(ctx, c)
}

func (r gatedRuns) Active(ctx context.Context, job string) ([]anarchon.ActiveRun, error) {
	if r.g.failActive {
		return nil, errPartition
	}
	return r.RunStore.Active(ctx, job)
}

func (r gatedRuns) Heartbeat(ctx context.Context, in anarchon.HeartbeatInput) (bool, error) {
	if in.Slot == r.g.slot {
		return false, errPartition
	}
	return r.RunStore.Heartbeat(ctx, in)
}

// A takeover under OverlapSkip that comes after a later slot of the job
// has been claimed is settled skipped, not run beside it (SPEC §6,
// overlap). Two schedulers share a store; a 10 s job with a 3 s lease
// and the default policy. Timeline (seconds after the first slot, T):
//
//	T+0    slot 0 is won; its holder is cut off (every heartbeat fails)
//	T+2.x  its handler is cancelled (lease lost); the lease ends at T+3
//	T+3    the backup's claim of slot 0 is held back (as a slow backup's)
//	T+10   slot 10 is won (slot 0's lease has run out) and runs for 20 s;
//	       the held claim goes on: it takes slot 0 over as attempt 2
//
// Attempt 2 finds slot 10's live run and is settled skipped: no handler
// of slot 0 runs beside slot 10's. Under OverlapLimit 2 one other live
// run is within the limit, and under OverlapAllow nothing is counted:
// attempt 2 runs. Under skip with a store whose Active fails, the failure
// is reported (EventStoreError, op Active) and attempt 2 runs.
func TestTakeoverSkipsWhileLaterSlotRuns(t *testing.T) {
	t.Run("skip", func(t *testing.T) { testTakeoverBesideLaterSlot(t, &anarchon.JobOptions{}, false, false) })
	t.Run("limit1", func(t *testing.T) {
		testTakeoverBesideLaterSlot(t, &anarchon.JobOptions{Overlap: anarchon.OverlapLimit, OverlapLimit: 1}, false, false)
	})
	t.Run("limit2", func(t *testing.T) {
		testTakeoverBesideLaterSlot(t, &anarchon.JobOptions{Overlap: anarchon.OverlapLimit, OverlapLimit: 2}, false, true)
	})
	t.Run("allow", func(t *testing.T) {
		testTakeoverBesideLaterSlot(t, &anarchon.JobOptions{Overlap: anarchon.OverlapAllow}, false, true)
	})
	t.Run("skipActiveFails", func(t *testing.T) { testTakeoverBesideLaterSlot(t, &anarchon.JobOptions{}, true, true) })
}

// testTakeoverBesideLaterSlot plays TestTakeoverSkipsWhileLaterSlotRuns's
// timeline with opts (its Lease is set here), Active failing if
// failActive: attempt 2 of slot 0 runs if runs, and is settled skipped
// otherwise.
func testTakeoverBesideLaterSlot(t *testing.T, opts *anarchon.JobOptions, failActive, runs bool) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		t0 := time.Now().Truncate(10 * time.Second).Add(10 * time.Second).UTC()
		gate := make(chan struct{})
		var mu sync.Mutex
		var starts []anarchon.Run
		var skipped []anarchon.Event
		activeErrs := 0
		h := func(ctx context.Context, run *anarchon.Run) error {
			mu.Lock()
			starts = append(starts, *run)
			mu.Unlock()
			switch {
			case run.Slot.Equal(t0) && run.Attempt == 1:
				<-ctx.Done() // cut off: runs until its lease is lost
				return ctx.Err()
			case run.Slot.Equal(t0.Add(10 * time.Second)):
				close(gate)
				time.Sleep(20 * time.Second)
			}
			return nil
		}
		var ss []*anarchon.Scheduler
		for _, id := range []string{"a", "b"} {
			g := &gatedStore{Backend: store, slot: t0.UnixMilli(), from: t0.Add(time.Second), gate: gate, failActive: failActive}
			s := newSched(t, g, id, &anarchon.Options{OnEvent: func(e anarchon.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case e.Kind == anarchon.EventSlotSkipped:
					skipped = append(skipped, e)
				case e.Kind == anarchon.EventStoreError && e.Op == "Active":
					activeErrs++
				}
			}})
			o := *opts
			o.Lease = 3 * time.Second
			if err := s.Every("job", 10*time.Second, h, &o); err != nil {
				t.Fatal(err)
			}
			mustStart(t, s)
			ss = append(ss, s)
		}
		time.Sleep(time.Until(t0.Add(25 * time.Second)))
		stopAll(t, ss...)

		mu.Lock()
		defer mu.Unlock()
		ran := map[int64][]int{}
		for _, r := range starts {
			ran[r.Slot.UnixMilli()] = append(ran[r.Slot.UnixMilli()], r.Attempt)
		}
		if got := ran[t0.Add(10*time.Second).UnixMilli()]; len(got) != 1 {
			t.Errorf("slot 10 ran attempts %v, want one", got)
		}
		recs := historyBySlot(t, ss[0], "job")[t0.UnixMilli()]
		statuses := map[anarchon.Status]int{}
		for _, r := range recs {
			statuses[r.Status]++
		}
		if failActive != (activeErrs > 0) {
			t.Errorf("%d failed Active calls reported, with Active failing %v", activeErrs, failActive)
		}
		if runs {
			if got := ran[t0.UnixMilli()]; len(got) != 2 || got[0] != 1 || got[1] != 2 {
				t.Errorf("slot 0 ran attempts %v, want 1 then 2", got)
			}
			if statuses[anarchon.StatusLeaseLost] != 1 || statuses[anarchon.StatusSuccess] != 1 || len(recs) != 2 {
				t.Errorf("history of slot 0 %+v, want attempt 1 lease_lost and attempt 2 success", recs)
			}
			return
		}
		if got := ran[t0.UnixMilli()]; len(got) != 1 || got[0] != 1 {
			t.Errorf("slot 0 ran attempts %v, want attempt 1 only (attempt 2 came while slot 10 ran)", got)
		}
		found := false
		for _, e := range skipped {
			if e.Slot.Equal(t0) && e.Attempt == 2 && e.Status == anarchon.StatusSkipped {
				found = true
			}
		}
		if !found {
			t.Errorf("skip events %+v, want slot 0's attempt 2 skipped", skipped)
		}
		if statuses[anarchon.StatusLeaseLost] != 1 || statuses[anarchon.StatusSkipped] != 1 || len(recs) != 2 {
			t.Errorf("history of slot 0 %+v, want attempt 1 lease_lost and attempt 2 skipped", recs)
		}
		for _, r := range recs {
			if r.Status == anarchon.StatusSkipped && !strings.Contains(r.Error, "attempt 2 took over") {
				t.Errorf("skipped record %+v, want its reason", r)
			}
		}
	})
}
