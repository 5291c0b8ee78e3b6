//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// sigRaceHelperEnv makes the test binary run startSignalHelper instead of
// its tests: a process that leads a process group of its own, as a daemon
// started from a shell does.
const sigRaceHelperEnv = "ANARCHON_TEST_SIGRACE_HELPER"

// sigRaceReport is what the helper prints.
type sigRaceReport struct {
	Runs     int      `json:"runs"`
	Failed   []string `json:"failed"`   // errors of the runs that failed
	Signals  int64    `json:"signals"`  // SIGINTs sent to the group
	Received int64    `json:"received"` // SIGINTs the helper itself was notified of
}

// TestStartSurvivesGroupSignal is the shutdown race of a daemon stopped by
// Ctrl-C (the terminal signals the whole foreground process group): a
// command forked at that moment is still in the daemon's group until it
// moves to a group of its own, gets the SIGINT then, and dies before it
// runs. The daemon survives the signal (it handles it, and drains its
// running jobs); the command it was starting must too.
//
// A helper process of its own group starts /bin/true over and over with
// the executor while another goroutine sends SIGINT to the group without
// pause; every run must succeed. The outcome is counted: before the
// executor checked for it, 264 of 400 runs ended "signal: interrupt" on a
// 2-core machine.
func TestStartSurvivesGroupSignal(t *testing.T) {
	if _, err := os.Stat("/bin/true"); err != nil {
		t.Skip("no /bin/true")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStartSurvivesGroupSignal$")
	cmd.Env = append(os.Environ(), sigRaceHelperEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group: the SIGINTs stay there
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var rep sigRaceReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	t.Logf("%d runs, %d SIGINTs sent to the group, %d received by the daemon, %d runs failed", rep.Runs, rep.Signals, rep.Received, len(rep.Failed))
	if rep.Received == 0 {
		t.Fatal("no SIGINT reached the helper: the race was not exercised")
	}
	if len(rep.Failed) > 0 {
		t.Errorf("%d of %d commands started while the group was signalled failed; first: %s", len(rep.Failed), rep.Runs, rep.Failed[0])
	}
}

func init() {
	if os.Getenv(sigRaceHelperEnv) == "1" {
		os.Exit(startSignalHelper())
	}
}

// startSignalHelper runs in the helper process; see
// TestStartSurvivesGroupSignal.
func startSignalHelper() int {
	const runs = 400
	var rep sigRaceReport
	// Notified, as the daemon is: SIGINT does not end this process.
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, syscall.SIGINT)
	var received atomic.Int64
	go func() {
		for range sigs {
			received.Add(1)
		}
	}()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := &executor{log: log, instance: "race", grace: time.Second}
	h := e.handler(&jobSpec{Name: "true", Schedule: "@daily", Argv: []string{"/bin/true"}})

	stop := make(chan struct{})
	var sent atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if syscall.Kill(0, syscall.SIGINT) == nil { // 0: this process's group
				sent.Add(1)
			}
		}
	})
	for i := range runs {
		run := &anarchon.Run{Job: "true", Slot: time.Unix(int64(i), 0), Attempt: 1, InstanceID: "race"}
		if err := h(context.Background(), run); err != nil {
			rep.Failed = append(rep.Failed, strconv.Itoa(i)+": "+err.Error())
		}
	}
	close(stop)
	wg.Wait()
	signal.Stop(sigs)
	rep.Runs, rep.Signals, rep.Received = runs, sent.Load(), received.Load()
	b, err := json.Marshal(rep)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(string(b))
	return 0
}
