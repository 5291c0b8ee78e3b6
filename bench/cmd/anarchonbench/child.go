package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/anarchon/anarchon/bench"
)

// errCollapsed reports a child measurement that did not finish in time:
// the scheduler fell behind and did not stop.
var errCollapsed = errors.New("did not finish in time")

// child runs one measurement in a fresh process (clean heap, RSS and CPU
// counters; a collapse cannot hang the harness) and decodes its JSON
// output into out.
func child(timeout time.Duration, out any, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return errCollapsed
	}
	if err != nil {
		return fmt.Errorf("child %v: %w", args, err)
	}
	return json.Unmarshal(stdout.Bytes(), out)
}

// childMain runs a child part and prints its result as JSON. It reports
// whether part was a child part.
func childMain(ctx context.Context, part string, a childArgs) (bool, error) {
	var res any
	var err error
	switch part {
	case "child-load":
		res, err = bench.MeasureLoad(ctx, a.jobs, a.active, bench.TimingMode(a.mode), a.d)
	case "child-timer":
		res = bench.TimerLateness(a.jobs, time.Second, a.d)
	case "child-lateness":
		res, err = bench.SchedulerLateness(ctx, a.jobs, time.Second, a.d, bench.TimingMode(a.mode))
	case "child-redisload":
		addr, aerr := bench.RedisAddr()
		if aerr != nil {
			return true, aerr
		}
		res, err = bench.MeasureRedisLoad(ctx, addr, a.mode, a.jobs, a.d)
	case "child-jobmem":
		res, err = bench.MeasureJobMemory(ctx, a.jobs)
	case "child-burst", "child-burst-timer":
		return true, burstChildMain(ctx, part, a)
	default:
		return false, nil
	}
	if err != nil {
		return true, err
	}
	return true, json.NewEncoder(os.Stdout).Encode(res)
}

type childArgs struct {
	jobs, active int
	mode         string
	d            time.Duration
	// burst children
	store, ns, workdir, instance string
	bursts                       int
	every                        time.Duration
}

func childFlags(part string, jobs, active int, mode string, d time.Duration) []string {
	return []string{part, "-jobs", fmt.Sprint(jobs), "-active", fmt.Sprint(active), "-mode", mode, "-d", d.String()}
}
