package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/anarchon/anarchon/bench"
)

func runGocron(ctx context.Context, short bool) error {
	addr, err := bench.RedisAddr()
	if err != nil {
		return err
	}
	d := 10 * time.Second
	cfg := bench.DupConfig{Jobs: 50, Instances: 3, Stagger: 20 * time.Second, Window: 20 * time.Second}
	if short {
		d = 3 * time.Second
		cfg.Stagger, cfg.Window = 3*time.Second, 4*time.Second
	}
	load := bench.Table{Head: []string{"scheduler", "jobs at 1 s", "fired/s", "CPU ms per s", "RSS MiB", "goroutines",
		"slots of the window run (runs)", "p99 start lateness ms, each second of the window"}}
	for _, which := range []string{"anarchon", "gocron"} {
		var l bench.RedisLoad
		err := child(cellTimeout(d), &l, childFlags("child-redisload", 10000, 0, which, d)...)
		if errors.Is(err, errCollapsed) {
			load.Add(which, 10000, "fell behind, did not stop", "", "", "", "", "")
			continue
		}
		if err != nil {
			return err
		}
		slots, late := "—", "—" // gocron's runs carry no slot
		if l.Slots > 0 {
			slots = fmt.Sprintf("%d of %d (%d)", l.SlotsRun, l.Slots, l.SlotRuns)
			ms := make([]string, len(l.LateP99))
			for i, p := range l.LateP99 {
				ms[i] = fmt.Sprintf("%.0f", float64(p)/float64(time.Millisecond))
			}
			late = strings.Join(ms, " ")
		}
		load.Add(which, l.Jobs, fmt.Sprintf("%.0f", float64(l.Fired)/l.Wall.Seconds()),
			bench.Ms(time.Duration(float64(l.CPU)/l.Wall.Seconds())), bench.MiB(l.RSS), l.Goroutines, slots, late)
	}
	fmt.Print("### One instance, 10,000 jobs every second, Redis (anarchon: Redis backend, default options; gocron: per-second cron, Redis lock)\n\n")
	fmt.Println(load.String())

	dup := bench.Table{Head: []string{"scheduler", "last instance's clock", "slots in window", "runs", "duplicate runs", "duplicates per 1,000 slots"}}
	for _, off := range []time.Duration{0, 2 * time.Second} {
		cfg.Offset = off
		res, err := bench.Duplicates(ctx, addr, cfg)
		if err != nil {
			return err
		}
		for _, r := range res {
			dup.Add(r.Scheduler, "+"+r.Offset.String(), r.Slots, r.Runs, r.Duplicates, fmt.Sprintf("%.1f", r.Per1000()))
		}
	}
	fmt.Printf("### Duplicate runs: %d jobs every second, %d instances started %v apart, counted for %v after the last start (Redis)\n\n",
		cfg.Jobs, cfg.Instances, cfg.Stagger, cfg.Window)
	fmt.Println(dup.String())
	return nil
}
