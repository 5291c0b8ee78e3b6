package natsbackend_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
	"github.com/nats-io/nats.go"
)

// serverBin returns the nats-server binary that scripts/services/nats.sh
// built, from ANARCHON_TEST_NATS_SERVER_BIN, or skips (fails under CI=true).
func serverBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("ANARCHON_TEST_NATS_SERVER_BIN")
	if bin == "" {
		msg := "ANARCHON_TEST_NATS_SERVER_BIN is not set: scripts/services/nats.sh prints it; the restart test starts its own server"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer starts bin with JetStream, file storage in dir, on port.
func startServer(t *testing.T, bin, dir string, port int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "-js", "-sd", dir, "-a", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nats-server: %v", err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// retry repeats op until it succeeds or ctx ends: while the server
// restarts, calls fail with errors and the scheduler would try again.
func retry[T any](ctx context.Context, t *testing.T, what string, op func() (T, error)) T {
	t.Helper()
	for {
		v, err := op()
		if err == nil {
			return v
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: still failing when the test's time ran out: %v", what, err)
		case <-time.After(50 * time.Millisecond): // back off between attempts on a restarting server
		}
	}
}

// TestServerRestartKeepsAnswer claims, stops the server (a crash with
// SIGKILL, or a clean SIGTERM), starts it again on the same store and
// retries: the winning token still wins, with the same attempt, and any
// other token still loses.
func TestServerRestartKeepsAnswer(t *testing.T) {
	bin := serverBin(t)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			port := freePort(t)
			url := "nats://127.0.0.1:" + strconv.Itoa(port)
			srv := startServer(t, bin, dir, port)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()

			reconnected := make(chan struct{}, 1)
			b := retry(ctx, t, "Open", func() (*natsbackend.Backend, error) {
				return natsbackend.Open(url, nil,
					nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
					nats.ReconnectHandler(func(*nats.Conn) {
						select {
						case reconnected <- struct{}{}:
						default:
						}
					}))
			})
			defer b.Close(context.Background())
			retry(ctx, t, "Init", func() (struct{}, error) { return struct{}{}, b.Init(ctx) })

			job, slot, tok := "restart job", int64(1_700_000_000_000), "token-a"
			claim := anarchon.ClaimInput{Job: job, Slot: slot, Token: tok, InstanceID: "a", HistorySize: 10}
			if ok, err := b.Claim(ctx, claim); err != nil || !ok {
				t.Fatalf("Claim = %v, %v", ok, err)
			}
			run := anarchon.RunClaim{ClaimInput: claim, Lease: time.Hour, MaxAttempts: 3}
			run.Job = "restart lease job"
			run.Slot = time.Now().UnixMilli()
			out, err := b.Runs().Claim(ctx, run)
			if err != nil || out.Kind != anarchon.OutcomeWon || out.Attempt != 1 {
				t.Fatalf("RunStore.Claim = %+v, %v; want won, attempt 1", out, err)
			}

			if err := srv.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_ = srv.Wait()
			startServer(t, bin, dir, port)
			select {
			case <-reconnected:
			case <-ctx.Done():
				t.Fatal("the client did not reconnect to the restarted server")
			}

			if ok := retry(ctx, t, "repeat Claim", func() (bool, error) { return b.Claim(ctx, claim) }); !ok {
				t.Error("after the restart, the winning token's repeat lost")
			}
			other := claim
			other.Token, other.InstanceID = "token-b", "b"
			if ok := retry(ctx, t, "other Claim", func() (bool, error) { return b.Claim(ctx, other) }); ok {
				t.Error("after the restart, another token won the claimed slot")
			}
			out = retry(ctx, t, "repeat RunStore.Claim", func() (anarchon.ClaimOutcome, error) { return b.Runs().Claim(ctx, run) })
			if out.Kind != anarchon.OutcomeWon || out.Attempt != 1 {
				t.Errorf("after the restart, the holder's repeat RunStore.Claim = %+v; want won, attempt 1", out)
			}
			run.Token, run.InstanceID = "token-b", "b"
			out = retry(ctx, t, "other RunStore.Claim", func() (anarchon.ClaimOutcome, error) { return b.Runs().Claim(ctx, run) })
			if out.Kind != anarchon.OutcomeRunning || out.Holder != "a" {
				t.Errorf("after the restart, another token's RunStore.Claim = %+v; want running, holder a", out)
			}
			if _, err := b.History(ctx, job, 0); err != nil {
				t.Errorf("History after the restart: %v", err)
			}
		})
	}
}
