// Command instance is the process the fault harness starts, kills and
// restarts: one anarchon.Scheduler with two jobs against a store URL, whose
// handlers append every start and end to a shared ledger.
//
//	instance -store redis://127.0.0.1:6390 -id i1.1 -ledger /tmp/ledger.jsonl -offset 3s
//
// Jobs:
//
//   - "leased" runs every -interval under a lease of -lease, works for
//     -work in steps of 10 ms and stops as soon as its context ends (lease
//     lost, stopped): the ledger then shows "stopped" with the cause. With
//     -catchup, a (re)started instance claims the slots of the last
//     -catchup again: the newest is run if nobody settled it, older ones
//     are settled as missed, and runs whose holders all died are taken
//     over.
//   - "plain" runs every -plain-interval with a plain claim (no lease) and
//     works for -plain-work without looking at its context.
//
// -offset sets the instance's clock off the host's, to model a skewed
// machine. With -offset-file, SIGUSR1 makes the instance read a new offset
// (a duration) from that file and step its clock to it at once, as NTP or
// a resumed virtual machine steps a host clock: the clock_step fault. On SIGTERM or SIGINT the scheduler is stopped
// (hand-over after -stop-wait) and the process exits 0. If Start fails (the
// store cannot be reached) it writes a boot_fail line and exits 3.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	_ "time/tzdata"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/faults"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "instance:", err)
		os.Exit(3)
	}
}

func run() error {
	var (
		store         = flag.String("store", "", "store URL (sqlite:/path, redis://host:port, nats://host:port)")
		id            = flag.String("id", "", "instance ID")
		ledgerPath    = flag.String("ledger", "", "ledger file to append to")
		offset        = flag.Duration("offset", 0, "clock offset of this instance (positive: fast)")
		interval      = flag.Duration("interval", 2*time.Second, "interval of the leased job")
		work          = flag.Duration("work", 1200*time.Millisecond, "how long the leased job works")
		lease         = flag.Duration("lease", 1500*time.Millisecond, "lease of the leased job")
		plainInterval = flag.Duration("plain-interval", time.Second, "interval of the plain job")
		plainWork     = flag.Duration("plain-work", 100*time.Millisecond, "how long the plain job works")
		poll          = flag.Duration("poll", 250*time.Millisecond, "poll interval of backups")
		clockSync     = flag.Duration("clock-sync", 5*time.Second, "how often the store clock offset is measured")
		history       = flag.Int("history", 5000, "history records kept per job")
		stopWait      = flag.Duration("stop-wait", 2*time.Second, "how long Stop waits before handing runs over")
		catchUp       = flag.Duration("catchup", 30*time.Second, "catch-up window of the leased job (0: none)")
		offsetFile    = flag.String("offset-file", "", "file holding a new -offset, read on SIGUSR1")
		maxLate       = flag.Duration("max-late", 0, "MaxLate of both jobs (0: anarchon's default)")
	)
	flag.Parse()
	if *store == "" || *id == "" || *ledgerPath == "" {
		return errors.New("-store, -id and -ledger are required")
	}
	if *interval <= 0 || *plainInterval <= 0 || *lease <= 0 || *work < 0 || *plainWork < 0 {
		return errors.New("intervals and the lease must be positive, work durations not negative")
	}
	ledger, err := faults.OpenLedger(*ledgerPath)
	if err != nil {
		return err
	}
	defer ledger.Close()
	clock := &stepClock{}
	clock.off.Store(int64(*offset))
	if *offsetFile != "" {
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		go func() {
			for range usr1 {
				data, err := os.ReadFile(*offsetFile)
				if err == nil {
					var d time.Duration
					if d, err = time.ParseDuration(strings.TrimSpace(string(data))); err == nil {
						clock.off.Store(int64(d))
						// The step's line, its Local read under the new
						// offset: the checker times recovery from it.
						now := time.Now()
						if err = ledger.Append(faults.Entry{Ev: faults.EvStep, Inst: *id, T: now.UnixMicro(), Local: clock.Now().UnixMicro()}); err == nil {
							continue
						}
					}
				}
				fmt.Fprintln(os.Stderr, "instance: clock step:", err)
			}
		}()
	}

	backend, err := faults.Open(*store)
	if err != nil {
		return err
	}
	defer backend.Close(context.Background())

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var s *anarchon.Scheduler
	entry := func(ev string, run *anarchon.Run) faults.Entry {
		now := time.Now()
		e := faults.Entry{
			Ev: ev, Inst: *id, T: now.UnixMicro(), Local: clock.Now().UnixMicro(),
		}
		if s != nil {
			e.OffsetMs = s.ClockOffset().Milliseconds()
		}
		if run != nil {
			e.Job, e.Slot, e.Attempt, e.Token, e.Fence = run.Job, run.Slot.UnixMilli(), run.Attempt, run.Token, run.Fence
		}
		return e
	}
	appendOrDie := func(e faults.Entry) {
		if err := ledger.Append(e); err != nil {
			// A run the ledger cannot see would make every check wrong.
			fmt.Fprintln(os.Stderr, "instance:", err)
			os.Exit(4)
		}
	}

	s = anarchon.New(backend, &anarchon.Options{
		InstanceID: *id, Logger: logger, Clock: clock,
		PollInterval: *poll, ClockSyncInterval: *clockSync,
		OnEvent: func(ev anarchon.Event) {
			// Every measure of the offset, so that the checker sees how
			// soon a stepped clock is measured right again.
			if ev.Kind == anarchon.EventClockOffset {
				e := entry(faults.EvOffset, nil)
				e.OffsetMs, e.Cause = ev.Offset.Milliseconds(), ev.Op
				appendOrDie(e)
			}
		},
	})
	leased := func(ctx context.Context, run *anarchon.Run) error {
		appendOrDie(entry(faults.EvStart, run))
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		deadline := time.Now().Add(*work)
		for time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				e := entry(faults.EvEnd, run)
				e.Result, e.Cause = faults.ResultStopped, fmt.Sprint(context.Cause(ctx))
				appendOrDie(e)
				return context.Cause(ctx)
			case <-t.C:
			}
		}
		e := entry(faults.EvEnd, run)
		e.Result = faults.ResultCompleted
		appendOrDie(e)
		return nil
	}
	plain := func(ctx context.Context, run *anarchon.Run) error {
		appendOrDie(entry(faults.EvStart, run))
		time.Sleep(*plainWork) // the job's work; a plain job has no lease to watch
		e := entry(faults.EvEnd, run)
		e.Result = faults.ResultCompleted
		appendOrDie(e)
		return nil
	}
	if err := s.Every("leased", *interval, leased, &anarchon.JobOptions{
		Lease: *lease, HistorySize: *history, MaxAttempts: 3, MaxLate: *maxLate,
		CatchUp: anarchon.CatchUp{Window: *catchUp, Max: 1},
	}); err != nil {
		return err
	}
	if err := s.Every("plain", *plainInterval, plain, &anarchon.JobOptions{
		NoLease: true, HistorySize: *history, MaxLate: *maxLate,
	}); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = s.Start(startCtx)
	cancel()
	if err != nil {
		e := entry(faults.EvBootFail, nil)
		e.Cause = err.Error()
		appendOrDie(e)
		return fmt.Errorf("start: %w", err)
	}
	e := entry(faults.EvBoot, nil)
	e.PID = os.Getpid()
	appendOrDie(e)

	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), *stopWait)
	defer cancel()
	_ = s.Stop(stopCtx) // a deadline here means runs were handed over, as intended
	appendOrDie(entry(faults.EvStop, nil))
	return nil
}

// stepClock is the host clock moved by an offset that a signal changes at
// once: its wall time jumps, the runtime's timers and monotonic clock do
// not, as on a host whose clock is stepped.
type stepClock struct{ off atomic.Int64 }

// Now returns the host's wall time plus the current offset.
func (c *stepClock) Now() time.Time { return time.Now().Round(0).Add(time.Duration(c.off.Load())) }
