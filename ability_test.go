package anarchon_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

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
