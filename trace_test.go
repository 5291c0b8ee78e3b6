package anarchon_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// recTracer records the claims and runs a Tracer is told of.
type recTracer struct {
	mu     sync.Mutex
	claims []*recClaim
	runs   []*recRun
}

type recClaim struct {
	t     *recTracer
	start anarchon.ClaimStart
	end   *anarchon.ClaimEnd
	ends  int
}

type recRun struct {
	claim *recClaim
	run   anarchon.Run
	end   *anarchon.RunEnd
	ends  int
}

type spanKey struct{}

func (t *recTracer) StartClaim(ctx context.Context, c anarchon.ClaimStart) (context.Context, anarchon.ClaimSpan) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rc := &recClaim{t: t, start: c}
	t.claims = append(t.claims, rc)
	return context.WithValue(ctx, spanKey{}, rc), rc
}

func (c *recClaim) End(e anarchon.ClaimEnd) {
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	c.end = &e
	c.ends++
}

func (c *recClaim) StartRun(ctx context.Context, run *anarchon.Run) (context.Context, anarchon.RunSpan) {
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	rr := &recRun{claim: c, run: *run}
	c.t.runs = append(c.t.runs, rr)
	return context.WithValue(ctx, spanKey{}, rr), rr
}

func (r *recRun) End(e anarchon.RunEnd) {
	r.claim.t.mu.Lock()
	defer r.claim.t.mu.Unlock()
	r.end = &e
	r.ends++
}

// Three schedulers on one memory store, with a Tracer each: every run is
// reported once, under the won claim of its slot, and the handler's
// context is the one the run span returned.
func TestTracerThreeInstances(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts anarchon.JobOptions
	}{
		{"plain", anarchon.JobOptions{NoLease: true}},
		{"leased", anarchon.JobOptions{Lease: 3 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := membackend.New(nil)
				tr := &recTracer{}
				var ss []*anarchon.Scheduler
				var mu sync.Mutex
				handled := map[*recRun]int{}
				for i := range 3 {
					s := newSched(t, b, fmt.Sprintf("inst-%d", i), &anarchon.Options{Tracer: tr})
					opts := tc.opts
					h := func(ctx context.Context, run *anarchon.Run) error {
						rr, _ := ctx.Value(spanKey{}).(*recRun)
						mu.Lock()
						handled[rr]++
						mu.Unlock()
						if run.Slot.Unix()%3 == 0 {
							return fmt.Errorf("slot %v fails", run.Slot)
						}
						return nil
					}
					if err := s.Every("tick", time.Second, h, &opts); err != nil {
						t.Fatal(err)
					}
					mustStart(t, s)
					ss = append(ss, s)
				}
				time.Sleep(10 * time.Second)
				end := time.Now() // a slot due now may be claimed by some instances only, as Stop begins
				if _, err := ss[1].RunNow(context.Background(), "tick"); err != nil {
					t.Fatal(err)
				}
				stopAll(t, ss...)
				synctest.Wait()

				tr.mu.Lock()
				defer tr.mu.Unlock()
				if len(tr.runs) < 10 {
					t.Fatalf("%d runs traced, want at least 10", len(tr.runs))
				}
				bySlot := map[time.Time]int{}
				manual := 0
				for _, rr := range tr.runs {
					c := rr.claim
					if handled[rr] != 1 {
						t.Errorf("run %v: the handler saw the run's context %d times, want 1", rr.run.Slot, handled[rr])
					}
					if rr.ends != 1 || c.ends != 1 {
						t.Errorf("run %v: run ended %d times, claim %d times", rr.run.Slot, rr.ends, c.ends)
						continue
					}
					if rr.run.Manual {
						manual++
						if !c.start.Manual || c.end.Outcome != "manual" || rr.run.InstanceID != "inst-1" {
							t.Errorf("RunNow traced as claim %+v %+v, run by %s", c.start, c.end, rr.run.InstanceID)
						}
						continue
					}
					bySlot[rr.run.Slot]++
					if c.end.Outcome != "won" || c.end.Attempt != rr.run.Attempt || c.start.Job != "tick" ||
						!c.start.Slot.Equal(rr.run.Slot) || c.start.InstanceID != rr.run.InstanceID || c.start.Leased == tc.opts.NoLease {
						t.Errorf("run %+v under claim %+v → %+v", rr.run, c.start, c.end)
					}
					want := anarchon.StatusSuccess
					if rr.run.Slot.Unix()%3 == 0 {
						want = anarchon.StatusError
					}
					if rr.end.Status != want || (want == anarchon.StatusError) != (rr.end.Err != nil) {
						t.Errorf("run %v ended %s (%v), want %s", rr.run.Slot, rr.end.Status, rr.end.Err, want)
					}
					if rr.end.Lateness < 0 || rr.end.Lateness != rr.end.StartedAt.Sub(rr.run.Slot) {
						t.Errorf("run %v lateness %v, started %v", rr.run.Slot, rr.end.Lateness, rr.end.StartedAt)
					}
				}
				for slot, n := range bySlot {
					if n != 1 {
						t.Errorf("slot %v: %d runs traced", slot, n)
					}
				}
				if manual != 1 {
					t.Errorf("%d RunNow runs traced, want 1", manual)
				}
				// Every slot was claimed by all three instances, and every
				// claim ended once.
				claims := map[time.Time]int{}
				for _, c := range tr.claims {
					if c.ends != 1 {
						t.Errorf("claim %+v ended %d times", c.start, c.ends)
					}
					if !c.start.Manual {
						claims[c.start.Slot]++
					}
				}
				for slot := range bySlot {
					if slot.Before(end) && claims[slot] < 3 {
						t.Errorf("slot %v: %d claims traced, want at least 3", slot, claims[slot])
					}
				}
			})
		})
	}
}
