package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

var (
	errLost     = errors.New("lost")
	errStopped  = errors.New("stopped")
	errReplaced = errors.New("replaced")
)

type job struct{}

// fakeHost is a Host whose claims all win at once. Renew records each
// renewal's slot, time and context error and answers renewOK (true when
// nil); Execute calls exec.
type fakeHost struct {
	mu         sync.Mutex
	renews     map[int64][]time.Time
	renewCtx   []error
	exec       func(ctx context.Context, a *Attempt[job]) Result
	renewOK    func(a *Leased[job]) bool
	lostCauses atomic.Int64
}

func (h *fakeHost) Now() time.Time   { return time.Now() }
func (h *fakeHost) NewToken() string { return fmt.Sprint(rand.Int64()) }
func (h *fakeHost) Claim(context.Context, *Attempt[job]) (bool, error) {
	return true, nil
}
func (h *fakeHost) ClaimBatch(context.Context, []*Attempt[job]) []PlainAnswer { return nil }
func (h *fakeHost) ClaimLeaseBatch(ctx context.Context, as []*Leased[job]) []LeaseAnswer {
	out := make([]LeaseAnswer, len(as))
	for i := range as {
		out[i].Outcome = Outcome{Kind: KindWon, Attempt: 1}
	}
	return out
}
func (h *fakeHost) RecordClaim(context.Context, *Attempt[job]) error              { return nil }
func (h *fakeHost) RecordClaims(context.Context, []*Attempt[job]) ([]error, bool) { return nil, false }
func (h *fakeHost) ClaimLease(context.Context, *Leased[job]) (Outcome, error) {
	return Outcome{Kind: KindWon, Attempt: 1}, nil
}
func (h *fakeHost) Reclaim(ctx context.Context, a *Leased[job]) (Outcome, error) {
	return h.ClaimLease(ctx, a)
}
func (h *fakeHost) LeaseAnswered(context.Context, *Leased[job], Outcome) {}
func (h *fakeHost) Heartbeat(context.Context, *Leased[job], time.Duration) (bool, error) {
	return true, nil
}
func (h *fakeHost) Renew(ctx context.Context, a *Leased[job]) (bool, error) {
	h.mu.Lock()
	if h.renews == nil {
		h.renews = map[int64][]time.Time{}
	}
	h.renews[a.Slot] = append(h.renews[a.Slot], time.Now())
	h.renewCtx = append(h.renewCtx, ctx.Err())
	h.mu.Unlock()
	if h.renewOK != nil {
		return h.renewOK(a), nil
	}
	return true, nil
}
func (h *fakeHost) LostCause(context.Context, *Leased[job]) error {
	h.lostCauses.Add(1)
	return errReplaced
}
func (h *fakeHost) Release(context.Context, *Attempt[job]) error { return nil }
func (h *fakeHost) Finish(context.Context, *Attempt[job], Status) (bool, error) {
	return true, nil
}
func (h *fakeHost) CanFinishResult() bool                                      { return true }
func (h *fakeHost) FinishResult(context.Context, *Attempt[job], *Result) error { return nil }
func (h *fakeHost) SaveResult(context.Context, *Attempt[job], *Result) error   { return nil }
func (h *fakeHost) SaveEnd(context.Context, *Attempt[job], *Result) error      { return nil }
func (h *fakeHost) Execute(ctx context.Context, a *Attempt[job]) Result {
	return h.exec(ctx, a)
}
func (h *fakeHost) Settled(context.Context, *Attempt[job], Status, string)   {}
func (h *fakeHost) Retrying(context.Context, *Leased[job], *Result)          {}
func (h *fakeHost) StoreError(context.Context, string, *Attempt[job], error) {}

func newTestRunner(h *fakeHost, watch bool) (*Runner[job], context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	r := New[job](h, ctx, Config{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: time.Second, Watch: watch,
		ErrLeaseLost: errLost, ErrReplaced: errReplaced,
	})
	return r, cancel
}

// TestBeatsStress runs 300 leased runs with random start times and
// handler lengths (0–40 s, lease 30 s) beside 2,000 random store events on
// their slots and flaps of the watch, with and without a watch: every run
// whose handler still runs at its first renewal (claim + Lease/3) renews by
// then; none renews after its handler returned; afterwards the starter's
// queue is empty, its goroutine gone and no waiter left (synctest also
// fails the test on a deadlock or a leaked goroutine).
func TestBeatsStress(t *testing.T) {
	for _, watch := range []bool{false, true} {
		t.Run(fmt.Sprint("watch=", watch), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const lease = 30 * time.Second
				h := &fakeHost{}
				var mu sync.Mutex
				ended := map[int64]time.Time{}
				started := map[int64]time.Time{}
				h.exec = func(ctx context.Context, a *Attempt[job]) Result {
					d := time.Duration(rand.IntN(40000)) * time.Millisecond
					mu.Lock()
					started[a.Slot] = time.Now()
					mu.Unlock()
					select {
					case <-time.After(d):
					case <-ctx.Done():
					}
					mu.Lock()
					ended[a.Slot] = time.Now()
					mu.Unlock()
					return Result{}
				}
				r, stop := newTestRunner(h, watch)
				defer stop(nil)
				var wg sync.WaitGroup
				const runs = 300
				for i := range runs {
					a := r.Lease(job{}, "j", time.UnixMilli(int64(i)), lease, 0)
					wg.Go(func() {
						time.Sleep(time.Duration(rand.IntN(20000)) * time.Millisecond)
						a.Run(context.Background())
					})
				}
				evDone := make(chan struct{})
				go func() {
					defer close(evDone)
					for range 2000 {
						time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
						if rand.IntN(50) == 0 {
							r.WatchUp(true)
							r.WatchUp(false)
						}
						r.Notify("j", int64(rand.IntN(runs)), false)
					}
				}()
				wg.Wait()
				<-evDone
				synctest.Wait()
				h.mu.Lock()
				defer h.mu.Unlock()
				for i := range runs {
					s := int64(i)
					st, en := started[s], ended[s]
					due := st.Add(lease / 3) // claim answers at once in the fake
					rs := h.renews[s]
					if en.After(due.Add(10 * time.Millisecond)) {
						ok := false
						for _, x := range rs {
							if !x.After(due.Add(10 * time.Millisecond)) {
								ok = true
							}
						}
						if !ok {
							t.Errorf("slot %d: handler ran %v, first renewal late: %v", s, en.Sub(st), rs)
						}
					}
					for _, x := range rs {
						if x.After(en) {
							t.Errorf("slot %d: renewal at %v after the handler ended at %v", s, x.Sub(st), en.Sub(st))
						}
					}
				}
				r.starter.mu.Lock()
				if len(r.starter.q) != 0 || r.starter.running {
					t.Errorf("starter: %d queued, running %v after every run ended", len(r.starter.q), r.starter.running)
				}
				r.starter.mu.Unlock()
				r.waiters.mu.Lock()
				if len(r.waiters.m) != 0 {
					t.Errorf("waiters left: %v", r.waiters.m)
				}
				r.waiters.mu.Unlock()
			})
		})
	}
}

// TestNoRenewAfterCancel: a run cancelled before its first renewal (Stop's
// deadline cancelling the runner's context), whose handler ignores the
// cancellation and runs past that renewal's time, renews nothing, as a
// heartbeat that was already waiting returned at the cancellation. (When
// the starter started such a heartbeat anyway, about half the runs sent a
// renewal with a cancelled context.)
func TestNoRenewAfterCancel(t *testing.T) {
	var renewed, withDeadCtx, lostCause int
	const n = 50
	for range n {
		synctest.Test(t, func(t *testing.T) {
			const lease = 30 * time.Second
			h := &fakeHost{}
			h.renewOK = func(*Leased[job]) bool { return false } // released: the store says no
			h.exec = func(ctx context.Context, a *Attempt[job]) Result {
				time.Sleep(lease / 2) // ignores its context
				return Result{}
			}
			r, stop := newTestRunner(h, false)
			a := r.Lease(job{}, "j", time.UnixMilli(0), lease, 0)
			done := make(chan struct{})
			go func() { defer close(done); a.Run(context.Background()) }()
			time.Sleep(time.Second)
			stop(errStopped) // Stop's deadline: runCtx cancelled
			<-done
			h.mu.Lock()
			if len(h.renewCtx) > 0 {
				renewed++
				if h.renewCtx[0] != nil {
					withDeadCtx++
				}
			}
			h.mu.Unlock()
			if h.lostCauses.Load() > 0 {
				lostCause++
			}
		})
	}
	t.Logf("of %d runs cancelled before their first renewal: %d sent a Renew (%d with a cancelled context), %d asked LostCause", n, renewed, withDeadCtx, lostCause)
	if renewed > 0 {
		t.Errorf("%d of %d cancelled runs renewed after their cancellation", renewed, n)
	}
}
