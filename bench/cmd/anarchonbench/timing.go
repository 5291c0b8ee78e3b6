package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/anarchon/anarchon/bench"
)

// startHog starts this program's "hog" part as a separate process: one
// busy loop per CPU.
func startHog() (func(), error) {
	cmd := exec.Command(os.Args[0], "hog")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	time.Sleep(200 * time.Millisecond) // let the loops spin up
	return func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }, nil
}

// cellTimeout bounds a child measurement of d: start-up, the run and Stop.
func cellTimeout(d time.Duration) time.Duration { return 2*d + 30*time.Second }

func runTiming(ctx context.Context, short bool) error {
	d := 10 * time.Second
	if short {
		d = 3 * time.Second
	}
	t := bench.Table{Head: []string{"jobs", "machine", "what", "samples", "p50 ms", "p99 ms", "max ms", "p99 − timer p99 ms"}}
	for _, hog := range []bool{false, true} {
		for _, jobs := range []int{1000, 10000} {
			stop := func() {}
			machine := "idle"
			if hog {
				var err error
				if stop, err = startHog(); err != nil {
					return err
				}
				machine = "CPU hog"
			}
			var timer bench.Summary
			if err := child(cellTimeout(d), &timer, childFlags("child-timer", jobs, 0, "", d)...); err != nil {
				stop()
				return err
			}
			t.Add(jobs, machine, "Go timer (goroutine per job)", timer.N, bench.Ms(timer.P50), bench.Ms(timer.P99), bench.Ms(timer.Max), "—")
			for _, mode := range []bench.TimingMode{bench.ModeNull, bench.ModePlain, bench.ModeLease} {
				var s bench.Summary
				err := child(cellTimeout(d), &s, childFlags("child-lateness", jobs, 0, string(mode), d)...)
				if errors.Is(err, errCollapsed) {
					t.Add(jobs, machine, "anarchon "+string(mode), "—", "fell behind, did not stop", "", "", "")
					continue
				}
				if err != nil {
					stop()
					return err
				}
				t.Add(jobs, machine, "anarchon "+string(mode), s.N, bench.Ms(s.P50), bench.Ms(s.P99), bench.Ms(s.Max), bench.Ms(s.P99-timer.P99))
			}
			stop()
		}
	}
	fmt.Print("### Handler start lateness (memory store, 1 s interval, jitter 0)\n\n")
	fmt.Println(t.String())
	return nil
}

func runScale(ctx context.Context, short bool) error {
	d := 10 * time.Second
	if short {
		d = 3 * time.Second
	}
	steady := bench.Table{Head: []string{"jobs at 1 s", "path", "fired/s", "CPU ms per s", "RSS MiB", "goroutines at end", "Stop done in 10 s"}}
	for _, mode := range []bench.TimingMode{bench.ModeNull, bench.ModePlain, bench.ModeLease} {
		var l bench.Load
		err := child(cellTimeout(d), &l, childFlags("child-load", 10000, 10000, string(mode), d)...)
		if errors.Is(err, errCollapsed) {
			steady.Add(10000, mode, "fell behind, did not stop", "", "", "", "no")
			continue
		}
		if err != nil {
			return err
		}
		steady.Add(l.Jobs, l.Mode, fmt.Sprintf("%.0f", float64(l.Fired)/l.Wall.Seconds()), bench.Ms(l.CPUPerSecond()), bench.MiB(l.RSS), l.Goroutines, yesNo(!l.StopTimedOut))
	}
	fmt.Print("### 10,000 jobs every second, one instance (memory store)\n\n")
	fmt.Println(steady.String())

	var jm bench.JobMemory
	if err := child(2*time.Minute, &jm, childFlags("child-jobmem", 100000, 0, "", 0)...); err != nil {
		return err
	}
	mt := bench.Table{Head: []string{"registered jobs", "heap B/job after Add", "heap B/job after Start (with memory store state)", "goroutines before Start", "goroutines after Start"}}
	mt.Add(jm.Jobs, fmt.Sprintf("%.0f", jm.RegisteredPerJob), fmt.Sprintf("%.0f", jm.StartedPerJob), jm.GoroutinesBefore, jm.GoroutinesAfter)
	fmt.Print("### Memory per registered job (idle jobs, default options)\n\n")
	fmt.Println(mt.String())

	curve := bench.Table{Head: []string{"registered jobs", "firing every 1 s", "path", "fired/s", "CPU µs per fired slot", "goroutines at end"}}
	for _, n := range []int{100, 1000, 10000, 100000} {
		actives := []int{100}
		if n > 100 && n <= 10000 {
			actives = append(actives, n)
		}
		for _, active := range actives {
			var l bench.Load
			err := child(cellTimeout(d), &l, childFlags("child-load", n, active, string(bench.ModePlain), d/2)...)
			if errors.Is(err, errCollapsed) {
				curve.Add(n, active, bench.ModePlain, "fell behind, did not stop", "", "")
				continue
			}
			if err != nil {
				return err
			}
			curve.Add(n, active, l.Mode, fmt.Sprintf("%.0f", float64(l.Fired)/l.Wall.Seconds()), bench.Us(l.CPUPerFired()), l.Goroutines)
		}
	}
	fmt.Print("### CPU per fired slot against registered jobs (plain path, memory store)\n\n")
	fmt.Println(curve.String())
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
