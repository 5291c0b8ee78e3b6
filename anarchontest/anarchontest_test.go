package anarchontest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
	"github.com/anarchon/anarchon/membackend"
)

// plainOnly hides every optional interface of the memory store: the suite
// must run its plain-claim and history tests and skip the rest.
type plainOnly struct{ b *membackend.Backend }

func (p plainOnly) Name() string                    { return p.b.Name() }
func (p plainOnly) DedupeWindow() time.Duration     { return p.b.DedupeWindow() }
func (p plainOnly) Init(ctx context.Context) error  { return p.b.Init(ctx) }
func (p plainOnly) Close(ctx context.Context) error { return p.b.Close(ctx) }
func (p plainOnly) PrepareJob(ctx context.Context, in anarchon.PrepareJobInput) error {
	return p.b.PrepareJob(ctx, in)
}
func (p plainOnly) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	return p.b.Claim(ctx, in)
}
func (p plainOnly) RecordManualRun(ctx context.Context, in anarchon.ClaimInput) (int64, error) {
	return p.b.RecordManualRun(ctx, in)
}
func (p plainOnly) SaveResult(ctx context.Context, in anarchon.SaveResultInput) error {
	return p.b.SaveResult(ctx, in)
}
func (p plainOnly) History(ctx context.Context, job string, limit int) ([]anarchon.RunRecord, error) {
	return p.b.History(ctx, job, limit)
}

func TestPlainBackend(t *testing.T) {
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			b := plainOnly{membackend.New(nil)}
			bs := make([]anarchon.Backend, n)
			for i := range bs {
				bs[i] = b
			}
			return bs
		},
		Lease:  50 * time.Millisecond,
		Racers: 4,
		Rounds: 20,
	})
}

// hanging is a memory store whose Claim never answers: it waits for its
// context, or, with ignoreCtx, for good.
type hanging struct {
	plainOnly
	ignoreCtx bool
}

func (h hanging) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	if h.ignoreCtx {
		select {} // a call stuck on a dead connection without a deadline
	}
	<-ctx.Done()
	return false, ctx.Err()
}

// TestHangChild runs the suite on a hanging store when the environment
// asks for it: TestWatchdog runs it in a child process.
func TestHangChild(t *testing.T) {
	mode := os.Getenv("ANARCHONTEST_HANG")
	if mode == "" {
		t.Skip("run by TestWatchdog in a child process")
	}
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			b := hanging{plainOnly{membackend.New(nil)}, mode == "ignore"}
			bs := make([]anarchon.Backend, n)
			for i := range bs {
				bs[i] = b
			}
			return bs
		},
		Timeout: 300 * time.Millisecond,
	})
}

// TestWatchdog: a backend that never answers fails its subtest with a
// message naming it, instead of hanging the test binary. A call that
// honours its context fails when the watchdog cancels it; one that ignores
// it ends the process with a panic that names the subtest.
func TestWatchdog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	const sub = "TestHangChild/Claim/RepeatSafety"
	for _, tc := range []struct {
		mode string
		want []string
	}{
		{"ctx", []string{"--- FAIL: " + sub, "anarchontest: " + sub + " ran for 300ms (Harness.Timeout)", "Claim("}},
		{"ignore", []string{"panic: anarchontest: " + sub + " did not end within 300ms", "goroutines after"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+sub+"$", "-test.v", "-test.timeout=60s")
			cmd.Env = append(os.Environ(), "ANARCHONTEST_HANG="+tc.mode)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the child passed on a hanging backend:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the child's output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(string(out), "test timed out") {
				t.Errorf("the child ran into go test's -timeout instead of the watchdog:\n%s", out)
			}
		})
	}
}
