package anarchon_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// opaque wraps a backend the simplest way: embedding the Backend interface
// forwards its methods and hides every optional one. Unwrap lets As see
// through it.
type opaque struct{ anarchon.Backend }

func (o opaque) Unwrap() anarchon.Backend { return o.Backend }

// sealed is the same wrapper without Unwrap: nothing shows through.
type sealed struct{ anarchon.Backend }

func TestAsSeesThroughWrappers(t *testing.T) {
	mem := membackend.New(nil)
	for name, b := range map[string]anarchon.Backend{
		"direct":  mem,
		"wrapped": opaque{mem},
		"twice":   opaque{opaque{mem}},
	} {
		t.Run(name, func(t *testing.T) {
			lb, ok := anarchon.As[anarchon.LeaseBackend](b)
			if !ok || lb.Runs() == nil {
				t.Fatal("LeaseBackend not found")
			}
			rf, ok := anarchon.As[anarchon.ResultFinisher](b)
			if _, isMem := rf.(*membackend.RunStore); !ok || !isMem {
				t.Fatalf("ResultFinisher = %v, %v; want the membackend RunStore", rf, ok)
			}
			w, ok := anarchon.As[anarchon.Watcher](b)
			if _, isMem := w.(*membackend.RunStore); !ok || !isMem {
				t.Fatalf("Watcher = %v, %v; want the RunStore's (found before the Backend's)", w, ok)
			}
			if _, ok := anarchon.As[anarchon.ClaimRecorder](b); !ok {
				t.Fatal("ClaimRecorder not found")
			}
			if _, ok := anarchon.As[anarchon.JobChecker](b); ok {
				t.Fatal("membackend has no JobChecker, As found one")
			}
		})
	}
	if _, ok := anarchon.As[anarchon.ResultFinisher](sealed{mem}); ok {
		t.Fatal("a wrapper without Unwrap exposed the wrapped ResultFinisher")
	}
	if _, ok := anarchon.As[anarchon.ClaimRecorder](nil); ok {
		t.Fatal("As on a nil Backend found an ability")
	}
}

func TestPermanent(t *testing.T) {
	if anarchon.Permanent(nil) != nil {
		t.Fatal("Permanent(nil) != nil")
	}
	base := fmt.Errorf("create table: %w", fs.ErrPermission)
	err := anarchon.Permanent(base)
	if !errors.Is(err, anarchon.ErrPermanent) || !anarchon.IsPermanent(err) {
		t.Fatal("marked error does not match ErrPermanent")
	}
	if !errors.Is(err, fs.ErrPermission) || !errors.Is(err, base) {
		t.Fatal("marked error hides the error it marks")
	}
	var pe *fs.PathError
	pathErr := anarchon.Permanent(&fs.PathError{Op: "open", Path: "x", Err: fs.ErrNotExist})
	if !errors.As(pathErr, &pe) || pe.Path != "x" {
		t.Fatal("errors.As does not reach the marked error")
	}
	if err.Error() != base.Error() {
		t.Fatalf("message = %q, want %q", err.Error(), base.Error())
	}
	if again := anarchon.Permanent(err); again != err {
		t.Fatal("marking twice wrapped again")
	}
	wrapped := fmt.Errorf("save result: %w", err)
	if !anarchon.IsPermanent(wrapped) {
		t.Fatal("IsPermanent does not see through %w")
	}
	if anarchon.IsPermanent(base) || anarchon.IsPermanent(nil) {
		t.Fatal("an unmarked error is permanent")
	}
}

// countedMem is a membackend whose RunStore counts the calls a wrapper
// could hide: Finish, FinishResult and WatchRuns.
type countedMem struct {
	*membackend.Backend
	finish, finishResult, watch *atomic.Int32
}

func (c countedMem) Runs() anarchon.RunStore {
	return countedRuns{c.Backend.Runs().(*membackend.RunStore), c}
}

type countedRuns struct {
	*membackend.RunStore
	c countedMem
}

func (r countedRuns) Finish(ctx context.Context, in anarchon.FinishInput) (bool, error) {
	r.c.finish.Add(1)
	return r.RunStore.Finish(ctx, in)
}

func (r countedRuns) FinishResult(ctx context.Context, in anarchon.SaveResultInput) (bool, error) {
	r.c.finishResult.Add(1)
	return r.RunStore.FinishResult(ctx, in)
}

// FinishResults counts each run it finishes as a FinishResult: the
// batch is the same ability, called for runs that end together.
func (r countedRuns) FinishResults(ctx context.Context, in []anarchon.SaveResultInput) ([]anarchon.HeldAnswer, error) {
	r.c.finishResult.Add(int32(len(in)))
	return r.RunStore.FinishResults(ctx, in)
}

func (r countedRuns) WatchRuns(ctx context.Context) (<-chan anarchon.RunEvent, error) {
	r.c.watch.Add(1)
	return r.RunStore.WatchRuns(ctx)
}

// A scheduler given a wrapper with Unwrap uses the wrapped store's
// ResultFinisher and Watcher; without Unwrap the wrapper hides them (the
// scheduler falls back to Finish + SaveResult, and to polling).
func TestSchedulerSeesThroughWrapper(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wrap   func(anarchon.Backend) anarchon.Backend
		unwrap bool
	}{
		{"Unwrap", func(b anarchon.Backend) anarchon.Backend { return opaque{b} }, true},
		{"sealed", func(b anarchon.Backend) anarchon.Backend { return sealed{b} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var finish, finishResult, watch atomic.Int32
				inner := countedMem{membackend.New(nil), &finish, &finishResult, &watch}
				b := tc.wrap(inner)
				if _, ok := anarchon.As[anarchon.LeaseBackend](b); !ok && tc.unwrap {
					t.Fatal("no LeaseBackend through the wrapper")
				}
				s := newSched(t, b, "i0", nil)
				var ran atomic.Int32
				if err := s.Every("job", time.Second, func(context.Context, *anarchon.Run) error { ran.Add(1); return nil }, nil); err != nil {
					t.Fatal(err)
				}
				if !tc.unwrap {
					// Without leases the job runs plain; nothing to check on the RunStore.
					if infos := s.Jobs(); infos[0].Leased {
						t.Fatal("a sealed wrapper exposed the RunStore")
					}
					return
				}
				mustStart(t, s)
				time.Sleep(3500 * time.Millisecond)
				stopAll(t, s)
				if ran.Load() != 3 || finishResult.Load() != 3 || finish.Load() != 0 || watch.Load() == 0 {
					t.Fatalf("ran %d, FinishResult %d, Finish %d, WatchRuns %d; want 3 runs finished by FinishResult and a watch",
						ran.Load(), finishResult.Load(), finish.Load(), watch.Load())
				}
			})
		})
	}
}
