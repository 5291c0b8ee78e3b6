package anarchon_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

var errTableGone = errors.New("relation \"anarchon_results\" does not exist")

// failingResults fails every SaveResult and FinishResult with err, counting
// the calls.
type failingResults struct {
	*membackend.Backend
	err   error
	calls *atomic.Int32
}

func (f failingResults) SaveResult(context.Context, anarchon.SaveResultInput) error {
	f.calls.Add(1)
	return f.err
}

// SaveResults fails each result as SaveResult does (the wrapper must
// override the batch too, or the embedded store's would save them).
func (f failingResults) SaveResults(_ context.Context, in []anarchon.SaveResultInput) ([]error, error) {
	errs := make([]error, len(in))
	for i := range in {
		f.calls.Add(1)
		errs[i] = f.err
	}
	return errs, nil
}

func (f failingResults) Runs() anarchon.RunStore {
	return failingFinish{f.Backend.Runs().(*membackend.RunStore), f}
}

type failingFinish struct {
	*membackend.RunStore
	f failingResults
}

func (r failingFinish) FinishResult(context.Context, anarchon.SaveResultInput) (bool, error) {
	r.f.calls.Add(1)
	return false, r.f.err
}

func (r failingFinish) FinishResults(_ context.Context, in []anarchon.SaveResultInput) ([]anarchon.HeldAnswer, error) {
	out := make([]anarchon.HeldAnswer, len(in))
	for i := range in {
		r.f.calls.Add(1)
		out[i].Err = r.f.err
	}
	return out, nil
}

// A result the store refuses for good is not retried, and Stop does not
// wait on it; one that may go away is retried until Stop's deadline.
func TestPermanentStoreErrorIsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      *anarchon.JobOptions
		err       error
		wantCalls func(int32) bool
	}{
		{"plain/permanent", &anarchon.JobOptions{NoLease: true}, anarchon.Permanent(errTableGone), func(n int32) bool { return n == 1 }},
		// FinishResult fails, then the unconfirmed record's SaveResult.
		{"leased/permanent", nil, anarchon.Permanent(errTableGone), func(n int32) bool { return n == 2 }},
		{"plain/transient", &anarchon.JobOptions{NoLease: true}, errTableGone, func(n int32) bool { return n > 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				s := newSched(t, failingResults{membackend.New(nil), tc.err, &calls}, "i0", nil)
				ran := make(chan struct{}, 1)
				h := func(context.Context, *anarchon.Run) error { ran <- struct{}{}; return nil }
				if err := s.Every("job", time.Hour, h, tc.opts); err != nil {
					t.Fatal(err)
				}
				mustStart(t, s)
				<-ran
				synctest.Wait() // the result's store calls are made, or their retry sleeps
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				err := s.Stop(ctx)
				took := time.Since(start)
				permanent := anarchon.IsPermanent(tc.err)
				if permanent && (err != nil || took >= time.Second) {
					t.Errorf("Stop took %v (error %v); want nil within 1s of a permanent error", took, err)
				}
				if !tc.wantCalls(calls.Load()) {
					t.Errorf("%d result calls", calls.Load())
				}
			})
		})
	}
}

// A store refuses a claim only when its slot is more than EarlyTolerance
// ahead of the store's now.
func TestTooEarlyTolerance(t *testing.T) {
	const now = 1_700_000_000_000
	tol := anarchon.EarlyTolerance.Milliseconds()
	for _, c := range []struct {
		slot int64
		want bool
	}{{now - 1000, false}, {now, false}, {now + tol, false}, {now + tol + 1, true}, {now + 3_600_000, true}} {
		if got := anarchon.TooEarly(c.slot, now); got != c.want {
			t.Errorf("TooEarly(now%+d ms) = %v, want %v", c.slot-now, got, c.want)
		}
	}
}
