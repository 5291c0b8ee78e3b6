//go:build unix

package natsbackend_test

import (
	"context"
	"errors"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
	"github.com/nats-io/nats.go"
)

// TestFrozenServerTimesOut freezes the server (SIGSTOP: the connection stays
// open, nothing answers) and claims with a context whose deadline is far
// off, as the scheduler's 30 s store deadline is: every call must fail by
// Options.Timeout, not wait for the caller's deadline.
func TestFrozenServerTimesOut(t *testing.T) {
	bin := serverBin(t)
	port := freePort(t)
	srv := startServer(t, bin, t.TempDir(), port)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	b := retry(ctx, t, "Open", func() (*natsbackend.Backend, error) {
		return natsbackend.Open("nats://127.0.0.1:"+strconv.Itoa(port), &natsbackend.Options{Timeout: 300 * time.Millisecond})
	})
	defer b.Close(context.Background())
	retry(ctx, t, "Init", func() (struct{}, error) { return struct{}{}, b.Init(ctx) })

	freeze(t, srv.Process)
	defer func() { _ = srv.Process.Signal(syscall.SIGCONT) }()

	in := anarchon.ClaimInput{Job: "frozen", Slot: time.Now().UnixMilli(), Token: "t1", InstanceID: "a"}
	calls := map[string]func() error{
		"Claim": func() error { _, err := b.Claim(ctx, in); return err },
		"RunStore.Claim": func() error {
			_, err := b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: in, Lease: time.Minute, MaxAttempts: 1})
			return err
		},
		"Heartbeat": func() error {
			_, err := b.Runs().Heartbeat(ctx, anarchon.HeartbeatInput{Job: "frozen", Slot: in.Slot, Token: "t1", Lease: time.Minute})
			return err
		},
		"RecordClaim": func() error { return b.RecordClaim(ctx, in) },
	}
	for name, call := range calls {
		err := call()
		if err == nil {
			t.Errorf("%s on a frozen server succeeded", name)
			continue
		}
		if ctx.Err() != nil {
			t.Fatalf("%s returned only when the caller's deadline ended: %v", name, err)
		}
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
			t.Errorf("%s = %v; want a timeout", name, err)
		}
		if natsbackend.IsPermanent(err) {
			t.Errorf("%s: a timeout is marked permanent: %v", name, err)
		}
	}
}
