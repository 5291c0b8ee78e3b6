package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon"
)

// ContestResult is one row of the contested-claims table.
type ContestResult struct {
	Store     string
	Kind      string // KindClaim or KindLease
	Instances int
	Slots     int           // slots raced for
	Wall      time.Duration // time for all of them
	BadSlots  int           // slots whose winner count was not exactly one
	Errors    int64
}

// SlotsPerSec is decided slots per second.
func (r ContestResult) SlotsPerSec() float64 { return float64(r.Slots) / r.Wall.Seconds() }

// ClaimsPerSec is claim calls per second, all instances together.
func (r ContestResult) ClaimsPerSec() float64 {
	return float64(r.Slots*r.Instances) / r.Wall.Seconds()
}

// Contest makes n instances, each with its own backend (own connection),
// race for the same slots for about d: for every slot all n claim at once
// (the next slot starts when all have answered), and the winners of every
// slot are counted. kind is KindClaim (Backend.Claim) or KindLease
// (RunStore.Claim, 30 s lease, overlap allowed).
func Contest(ctx context.Context, st *Store, kind string, n int, d time.Duration) (ContestResult, error) {
	if n <= 0 {
		return ContestResult{}, fmt.Errorf("bench: %d instances", n)
	}
	bes := make([]anarchon.Backend, n)
	runs := make([]anarchon.RunStore, n)
	for i := range n {
		b, err := st.Open(ctx)
		if err != nil {
			return ContestResult{}, err
		}
		if err := b.Init(ctx); err != nil {
			return ContestResult{}, err
		}
		bes[i] = b
		if lb, ok := anarchon.As[anarchon.LeaseBackend](b); ok {
			runs[i] = lb.Runs()
		} else if kind == KindLease {
			return ContestResult{}, fmt.Errorf("bench: %s has no RunStore", st.Name)
		}
	}
	job := fmt.Sprintf("contest-%s-%d-%d", kind, n, uniq())
	if err := bes[0].PrepareJob(ctx, anarchon.PrepareJobInput{Job: job, HistorySize: 100}); err != nil {
		return ContestResult{}, err
	}
	res := ContestResult{Store: st.Name, Kind: kind, Instances: n}
	var errs atomic.Int64
	start := time.Now()
	for slot := int64(1); time.Since(start) < d || slot <= 20; slot++ {
		var winners atomic.Int32
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := anarchon.ClaimInput{Job: job, Slot: slot, Token: rand.Text(), InstanceID: fmt.Sprintf("i%d", i), HistorySize: 100}
				<-gate
				var won bool
				var err error
				if kind == KindLease {
					var o anarchon.ClaimOutcome
					o, err = runs[i].Claim(ctx, anarchon.RunClaim{ClaimInput: in, Lease: 30 * time.Second, AllowOverlap: true, MaxAttempts: 3})
					won = o.Kind == anarchon.OutcomeWon
				} else {
					won, err = bes[i].Claim(ctx, in)
				}
				if err != nil {
					errs.Add(1)
				}
				if won {
					winners.Add(1)
				}
			}()
		}
		close(gate)
		wg.Wait()
		res.Slots++
		if winners.Load() != 1 {
			res.BadSlots++
		}
	}
	res.Wall = time.Since(start)
	res.Errors = errs.Load()
	return res, nil
}
