package main

import (
	"context"
	"os"
	"syscall"
	"testing"
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
	sig, err := startScheduler(signalDuringStart{sigs: sigs}, sigs)
	if err != nil || sig != syscall.SIGINT {
		t.Fatalf("startScheduler = %v, %v; want SIGINT and no error: the scheduler started and is to be stopped", sig, err)
	}

	sigs = make(chan os.Signal, 2)
	sig, err = startScheduler(signalDuringStart{sigs: sigs, err: context.Canceled}, sigs)
	if err == nil || err.Error() != "interrupted while starting" || sig != nil {
		t.Fatalf("start cut short: startScheduler = %v, %v; want the error \"interrupted while starting\"", sig, err)
	}
}
