package anarchon_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// slowAnswers is a store whose claims (plain and lease) are decided at
// once but answered after delay, as by a store failing over or a server
// that froze after it wrote.
type slowAnswers struct {
	*membackend.Backend
	delay time.Duration
}

func (s slowAnswers) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	won, err := s.Backend.Claim(ctx, in)
	time.Sleep(s.delay)
	return won, err
}

func (s slowAnswers) Runs() anarchon.RunStore { return slowRuns{s.Backend.Runs(), s.delay} }

type slowRuns struct {
	anarchon.RunStore
	delay time.Duration
}

func (s slowRuns) Claim(ctx context.Context, c anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	out, err := s.RunStore.Claim(ctx, c)
	time.Sleep(s.delay)
	return out, err
}

// A claim won in time but answered after the slot's MaxLate never starts
// the handler, on the plain path and the leased one: the slot is recorded
// missed. An answer inside MaxLate runs as usual.
func TestClaimAnsweredAfterMaxLateDoesNotRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noLease bool
		delay   time.Duration
		runs    bool
	}{
		{"plain late", true, 8 * time.Second, false},
		{"leased late", false, 8 * time.Second, false},
		{"plain in time", true, 2 * time.Second, true},
		{"leased in time", false, 2 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := slowAnswers{membackend.New(nil), tc.delay}
				s := anarchon.New(store, &anarchon.Options{InstanceID: "a"})
				var ran atomic.Int32
				opts := &anarchon.JobOptions{NoLease: tc.noLease, MaxLate: 5 * time.Second}
				if !tc.noLease {
					opts.Lease = time.Minute // the answer is well inside the lease's safe end
				}
				if err := s.Every("job", time.Hour, func(context.Context, *anarchon.Run) error {
					ran.Add(1)
					return nil
				}, opts); err != nil {
					t.Fatal(err)
				}
				mustStart(t, s)
				time.Sleep(time.Hour + time.Minute)
				stopAll(t, s)
				slot := time.Now().Truncate(time.Hour)
				if got := ran.Load(); (got == 1) != tc.runs || got > 1 {
					t.Errorf("handler ran %d times, want %v", got, map[bool]int{true: 1, false: 0}[tc.runs])
				}
				recs, err := s.History(context.Background(), "job", 0)
				if err != nil {
					t.Fatal(err)
				}
				want := anarchon.StatusSuccess
				if !tc.runs {
					want = anarchon.StatusMissed
				}
				var found bool
				for _, r := range recs {
					if r.Slot.Equal(slot) {
						found = true
						if r.Status != want {
							t.Errorf("slot %v recorded %s, want %s", slot, r.Status, want)
						}
					}
				}
				if !found {
					t.Errorf("no history record of slot %v: %+v", slot, recs)
				}
			})
		})
	}
}
