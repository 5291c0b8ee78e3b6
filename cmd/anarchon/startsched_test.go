package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
)

// signalDuringStart is a Start that receives a signal while it works, as
// anarchon.Scheduler.Start does when SIGINT comes during its store calls:
// it sees its context cancelled and returns err.
type signalDuringStart struct {
	sigs chan os.Signal
	err  error
}

func (s signalDuringStart) Start(ctx context.Context) error {
	s.sigs <- syscall.SIGINT
	<-ctx.Done() // the signal reached the start
	return s.err
}

// TestStartSchedulerSignalAfterStarted: a signal that comes while Start
// works but does not stop it (Scheduler.Start returns nil once the store
// took the jobs, whatever its context then does) leaves a started
// scheduler, whose first slots may be being claimed and run. It must be
// stopped like a running daemon (drain, hand over), not dropped as a failed
// start with its runs cut off by the exit.
func TestStartSchedulerSignalAfterStarted(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	sig, err := startScheduler(signalDuringStart{sigs: sigs}, sigs, 0, nil)
	if err != nil || sig != syscall.SIGINT {
		t.Fatalf("startScheduler = %v, %v; want SIGINT and no error: the scheduler started and is to be stopped", sig, err)
	}

	sigs = make(chan os.Signal, 2)
	sig, err = startScheduler(signalDuringStart{sigs: sigs, err: context.Canceled}, sigs, time.Minute, nil)
	if err == nil || err.Error() != "interrupted while starting" || sig != nil {
		t.Fatalf("start cut short: startScheduler = %v, %v; want the error \"interrupted while starting\"", sig, err)
	}
}

// failingStart fails its first fails calls with err, then succeeds; it
// counts the calls.
type failingStart struct {
	fails int
	err   error
	calls int
}

func (s *failingStart) Start(context.Context) error {
	s.calls++
	if s.calls <= s.fails {
		return s.err
	}
	return nil
}

// TestStartSchedulerRetries: a store that is not ready yet (here a
// transient error twice) is started again after 1 s, then 2 s; a
// permanent error fails at once; retries stop before a pause would pass
// --start-timeout; a signal during a pause ends the start.
func TestStartSchedulerRetries(t *testing.T) {
	transient := errors.New("natsbackend: bind stream ANARCHON_HISTORY: context deadline exceeded")
	synctest.Test(t, func(t *testing.T) {
		s := &failingStart{fails: 2, err: transient}
		var waits []time.Duration
		began := time.Now()
		sig, err := startScheduler(s, make(chan os.Signal), time.Minute, func(err error, wait time.Duration) {
			if err != transient {
				t.Errorf("retrying got %v", err)
			}
			waits = append(waits, wait)
		})
		if err != nil || sig != nil || s.calls != 3 {
			t.Fatalf("startScheduler = %v, %v after %d starts; want a start on the third", sig, err, s.calls)
		}
		if !slices.Equal(waits, []time.Duration{time.Second, 2 * time.Second}) || time.Since(began) != 3*time.Second {
			t.Errorf("pauses %v, %v in all; want 1s then 2s", waits, time.Since(began))
		}
	})
	synctest.Test(t, func(t *testing.T) {
		perm := anarchon.Permanent(fmt.Errorf("pgbackend: password authentication failed"))
		s := &failingStart{fails: 5, err: perm}
		_, err := startScheduler(s, make(chan os.Signal), time.Minute, func(error, time.Duration) { t.Error("a permanent error was retried") })
		if !errors.Is(err, perm) || s.calls != 1 {
			t.Errorf("permanent: %v after %d starts; want it at once", err, s.calls)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := &failingStart{fails: 100, err: transient}
		began := time.Now()
		_, err := startScheduler(s, make(chan os.Signal), 10*time.Second, func(error, time.Duration) {})
		// Starts at 0, 1, 3 and 7 s, and a last one at 10 s: the pause
		// before it is cut to what is left of --start-timeout.
		if !errors.Is(err, transient) || s.calls != 5 || time.Since(began) != 10*time.Second {
			t.Errorf("gave up with %v after %d starts and %v; want the store's error after 5 starts and 10s", err, s.calls, time.Since(began))
		}
		s = &failingStart{fails: 100, err: transient}
		if _, err := startScheduler(s, make(chan os.Signal), 0, func(error, time.Duration) { t.Error("retried with --start-timeout 0") }); !errors.Is(err, transient) || s.calls != 1 {
			t.Errorf("--start-timeout 0: %v after %d starts", err, s.calls)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := &failingStart{fails: 100, err: transient}
		sigs := make(chan os.Signal, 1)
		_, err := startScheduler(s, sigs, time.Minute, func(error, time.Duration) { sigs <- syscall.SIGTERM })
		if err == nil || err.Error() != "interrupted while starting" || s.calls != 1 {
			t.Errorf("signal during a pause: %v after %d starts", err, s.calls)
		}
	})
}

// TestSecondSignalIgnoresEcho: the stopping signal received again within
// echoWindow (GNU timeout sends it to the daemon and to its process
// group) is not the second signal that exits at once; the same signal
// later, or another one, is.
func TestSecondSignalIgnoresEcho(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sigs := make(chan os.Signal, 4)
		at := time.Now()
		sigs <- syscall.SIGTERM // the echo, at once
		got := make(chan os.Signal, 1)
		go func() { got <- secondSignal(sigs, syscall.SIGTERM, at) }()
		synctest.Wait()
		select {
		case s := <-got:
			t.Fatalf("the echo was taken as a second signal: %v", s)
		default:
		}
		time.Sleep(echoWindow)
		sigs <- syscall.SIGTERM
		if s := <-got; s != syscall.SIGTERM {
			t.Errorf("second signal %v, want SIGTERM", s)
		}

		at = time.Now()
		go func() { got <- secondSignal(sigs, syscall.SIGTERM, at) }()
		sigs <- syscall.SIGINT // another signal, at once
		if s := <-got; s != syscall.SIGINT {
			t.Errorf("second signal %v, want SIGINT", s)
		}
	})
}
