package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anarchon/anarchon/bench"
)

// burstSettings are the burst part's sizes, from the environment:
//
//	ANARCHON_BENCH_BURST_JOBS   jobs per burst, comma-separated (default 1000,10000; -short 1000)
//	ANARCHON_BENCH_BURST_COUNT  measured bursts per row (default 5; -short 2)
//	ANARCHON_BENCH_BURST_EVERY  time between bursts (default 15s; -short 5s)
//	ANARCHON_BENCH_BURST_PROCS  processes per store (default 3)
//	ANARCHON_BENCH_BURST_SCALE  process counts of the scaling table (default 1,3,6; "" skips it)
//	ANARCHON_BENCH_BURST_SCALE_STORE  its store and path, e.g. redis/plain (default redis/plain)
//	ANARCHON_BENCH_BURST_CPUPROFILE   a directory: each instance writes the CPU profile of its
//	                                  measured window there, as <store>-<mode>-<instance>.cpu
//	ANARCHON_BENCH_BURST_TIMELINE     any value: each instance prints on stderr, per measured
//	                                  burst, when its handlers started and when each of its
//	                                  claim batches was sent and answered
type burstSettings struct {
	jobs       []int
	bursts     int
	every      time.Duration
	procs      int
	scale      []int
	scaleStore string
	scaleMode  bench.TimingMode
}

func burstFromEnv(short bool) (burstSettings, error) {
	s := burstSettings{jobs: []int{1000, 10000}, bursts: 5, every: 15 * time.Second, procs: 3, scale: []int{1, 3, 6}, scaleStore: "redis", scaleMode: bench.ModePlain}
	if short {
		s.jobs, s.bursts, s.every = []int{1000}, 2, 5*time.Second
	}
	ints := func(name string, dst *[]int) error {
		v, ok := os.LookupEnv(name)
		if !ok {
			return nil
		}
		*dst = nil
		for _, p := range split(v) {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 {
				return fmt.Errorf("%s: %q is not a positive whole number", name, p)
			}
			*dst = append(*dst, n)
		}
		return nil
	}
	if err := ints("ANARCHON_BENCH_BURST_JOBS", &s.jobs); err != nil {
		return s, err
	}
	if err := ints("ANARCHON_BENCH_BURST_SCALE", &s.scale); err != nil {
		return s, err
	}
	one := []int{s.bursts}
	if err := ints("ANARCHON_BENCH_BURST_COUNT", &one); err != nil || len(one) != 1 {
		return s, fmt.Errorf("ANARCHON_BENCH_BURST_COUNT: want one positive number (%v)", err)
	}
	s.bursts = one[0]
	one = []int{s.procs}
	if err := ints("ANARCHON_BENCH_BURST_PROCS", &one); err != nil || len(one) != 1 {
		return s, fmt.Errorf("ANARCHON_BENCH_BURST_PROCS: want one positive number (%v)", err)
	}
	s.procs = one[0]
	if v := os.Getenv("ANARCHON_BENCH_BURST_EVERY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d%time.Millisecond != 0 {
			return s, fmt.Errorf("ANARCHON_BENCH_BURST_EVERY: %q is not a duration of at least 1s in whole ms", v)
		}
		s.every = d
	}
	if v := os.Getenv("ANARCHON_BENCH_BURST_SCALE_STORE"); v != "" {
		st, mode, _ := strings.Cut(v, "/")
		s.scaleStore, s.scaleMode = st, bench.TimingMode(mode)
		if mode == "" {
			s.scaleMode = bench.ModePlain
		}
		if s.scaleMode != bench.ModePlain && s.scaleMode != bench.ModeLease {
			return s, fmt.Errorf("ANARCHON_BENCH_BURST_SCALE_STORE: path %q is not plain or lease", mode)
		}
	}
	return s, nil
}

func runBurst(ctx context.Context, stores []string, workdir string, short bool) error {
	cfg, err := burstFromEnv(short)
	if err != nil {
		return err
	}
	fmt.Printf("<!-- burst: jobs %v, %d measured bursts %v apart per row, %d processes per store, scaling %v on %s/%s -->\n\n",
		cfg.jobs, cfg.bursts, cfg.every, cfg.procs, cfg.scale, cfg.scaleStore, cfg.scaleMode)
	head := []string{"K", "what", "processes", "p50 ms", "p99 ms", "max ms", "store ops per burst (server's count)", "backend calls per burst (counted)", "CPU ms per instance per burst", "RSS MiB per instance", "starts", "duplicates", "takeovers", "misses", "store errors", "server CPU ms per burst"}
	t := bench.Table{Head: head}
	var notes []string
	for _, k := range cfg.jobs {
		reps, err := burstProcs(ctx, cfg, k, cfg.procs, nil, func(int) []string {
			return []string{"child-burst-timer", "-jobs", fmt.Sprint(k), "-bursts", fmt.Sprint(cfg.bursts), "-every", cfg.every.String()}
		})
		if err != nil {
			t.Add(k, "Go timers (floor)", cfg.procs, "failed: "+err.Error(), "", "", "", "", "", "", "", "", "", "", "")
		} else {
			r := bench.MergeBursts(reps, k, cfg.bursts, false)
			t.Add(k, "Go timers (floor)", r.Procs, bench.Ms(r.P50), bench.Ms(r.P99), bench.Ms(r.Max), "—", "—",
				bench.Ms(r.CPUPerInst/time.Duration(cfg.bursts)), bench.MiB(r.RSSPerInst), r.Starts, "—", "—", "—", "—", "—")
		}
		for _, name := range stores {
			for _, mode := range []bench.TimingMode{bench.ModePlain, bench.ModeLease} {
				procs := cfg.procs
				if name == "memory" {
					procs = 1 // the memory store lives in one process
				}
				note, err := burstRow(ctx, cfg, name, mode, k, procs, workdir, &t)
				notes = addNotes(notes, note)
				if errors.Is(err, bench.ErrNoServer) {
					break
				}
			}
		}
	}
	fmt.Printf("### Bursts: K jobs on one schedule (jitter 0, no-op handlers), %d processes per store\n\n", cfg.procs)
	fmt.Println(t.String())
	for _, n := range notes {
		fmt.Println(n)
		fmt.Println()
	}
	if len(cfg.scale) == 0 {
		return nil
	}
	st := bench.Table{Head: head}
	notes = nil
	for _, n := range cfg.scale {
		note, _ := burstRow(ctx, cfg, cfg.scaleStore, cfg.scaleMode, cfg.jobs[0], n, workdir, &st)
		notes = addNotes(notes, note)
	}
	fmt.Printf("### Burst scaling: K = %d on %s (%s), by processes\n\n", cfg.jobs[0], cfg.scaleStore, cfg.scaleMode)
	fmt.Println(st.String())
	for _, n := range notes {
		fmt.Println(n)
		fmt.Println()
	}
	return nil
}

// addNotes appends the paragraphs of note (separated by blank lines) that
// notes does not have yet.
func addNotes(notes []string, note string) []string {
	for _, p := range strings.Split(note, "\n\n") {
		if p != "" && !slices.Contains(notes, p) {
			notes = append(notes, p)
		}
	}
	return notes
}

// burstRow measures one store and path with procs processes and adds its
// row to t; a failure is a row too. It returns a note on what the store's
// ops column counts, and the error that made the row fail (ErrNoServer:
// the store is not configured).
func burstRow(ctx context.Context, cfg burstSettings, name string, mode bench.TimingMode, k, procs int, workdir string, t *bench.Table) (string, error) {
	what := fmt.Sprintf("%s %s", name, mode)
	st, err := bench.OpenStore(ctx, name, workdir)
	if errors.Is(err, bench.ErrNoServer) {
		t.Add(k, name, procs, "skipped: "+err.Error(), "", "", "", "", "", "", "", "", "", "", "")
		return "", err
	}
	if err != nil {
		t.Add(k, what, procs, "failed: "+err.Error(), "", "", "", "", "", "", "", "", "", "", "")
		return "", err
	}
	defer st.Close()
	note := fmt.Sprintf("_%s: no server statistics; only the counted backend calls are shown._", name)
	var ops [2]int64
	var opsErr error
	var srv [2]time.Duration
	var srvProcs int
	mark := func(i int) {
		srv[i], srvProcs = bench.ServerCPU(st.Server...)
		if st.Ops == nil || opsErr != nil {
			return
		}
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var what string
		ops[i], what, opsErr = st.Ops(octx)
		note = fmt.Sprintf("_%s: store ops are %s._", name, what)
	}
	reps, err := burstProcs(ctx, cfg, k, procs, mark, func(i int) []string {
		return []string{"child-burst", "-store", name, "-ns", st.NS, "-workdir", workdir, "-mode", string(mode),
			"-jobs", fmt.Sprint(k), "-bursts", fmt.Sprint(cfg.bursts), "-every", cfg.every.String(), "-instance", fmt.Sprintf("burst-%d", i)}
	})
	if err != nil {
		t.Add(k, what, procs, "failed: "+err.Error(), "", "", "", "", "", "", "", "", "", "", "")
		fmt.Fprintf(os.Stderr, "burst: K=%d %s, %d processes: %v\n", k, what, procs, err)
		return note, err
	}
	r := bench.MergeBursts(reps, k, cfg.bursts, true)
	opsCell := "—"
	switch {
	case opsErr != nil:
		opsCell = "error: " + opsErr.Error()
	case st.Ops != nil:
		opsCell = fmt.Sprintf("%.0f", float64(ops[1]-ops[0])/float64(cfg.bursts))
	}
	srvCell := "—" // no server, or not on this machine
	if srvProcs > 0 {
		srvCell = bench.Ms((srv[1] - srv[0]) / time.Duration(cfg.bursts))
	}
	t.Add(k, what, r.Procs, bench.Ms(r.P50), bench.Ms(r.P99), bench.Ms(r.Max), opsCell, fmt.Sprintf("%.0f", r.CallsPerBurst),
		bench.Ms(r.CPUPerInst/time.Duration(cfg.bursts)), bench.MiB(r.RSSPerInst), r.Starts, r.Duplicates, r.Takeovers, r.Misses, r.StoreErrors, srvCell)
	fmt.Fprintf(os.Stderr, "burst: K=%d %s, %d processes: p99 %s ms, %d misses, %d duplicates, %d takeovers, %d store errors\n", k, what, procs, bench.Ms(r.P99), r.Misses, r.Duplicates, r.Takeovers, r.StoreErrors)
	names := slices.Sorted(maps.Keys(r.CallsByOp))
	by := make([]string, len(names))
	for i, op := range names {
		by[i] = fmt.Sprintf("%s %.0f", op, r.CallsByOp[op])
	}
	fmt.Fprintf(os.Stderr, "burst: K=%d %s: backend calls per burst by method: %s\n", k, what, strings.Join(by, ", "))
	if r.FirstError != "" {
		note += fmt.Sprintf("\n\n_%s, K = %d, %d processes: the first store error was %q._", what, k, procs, r.FirstError)
	}
	return note, nil
}

// burstChild is one running child process of a burst measurement.
type burstChild struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	done chan error // the decoded report's error, once stdout is read
	rep  bench.BurstReport
}

// burstProcs runs n children (args(i) are child i's arguments), waits
// until all are ready, names them the first measured slot, calls mark(0)
// and mark(1) (if not nil) at the start and end of the measured window,
// and returns their reports.
func burstProcs(ctx context.Context, cfg burstSettings, jobs, n int, mark func(int), args func(i int) []string) ([]bench.BurstReport, error) {
	from0 := time.Now()
	readyBy := 2*time.Minute + time.Duration(jobs)*10*time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, readyBy+time.Duration(cfg.bursts+3)*cfg.every+2*time.Minute)
	defer cancel()
	var kids []*burstChild
	defer func() {
		cancel() // a report read means the child is exiting; others are killed
		for _, c := range kids {
			_ = c.in.Close()
			_ = c.cmd.Wait()
		}
	}()
	for i := range n {
		cmd := exec.CommandContext(ctx, os.Args[0], args(i)...)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		kids = append(kids, &burstChild{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), done: make(chan error, 1)})
	}
	readyCh := make(chan error, n)
	for _, c := range kids {
		go func() {
			line, err := c.out.ReadString('\n')
			if err == nil && strings.TrimSpace(line) != "ready" {
				err = fmt.Errorf("child said %q, want ready", line)
			}
			readyCh <- err
		}()
	}
	timeout := time.After(time.Until(from0.Add(readyBy)))
	for range kids {
		select {
		case err := <-readyCh:
			if err != nil {
				return nil, fmt.Errorf("a process did not get ready: %w", err)
			}
		case <-timeout:
			return nil, fmt.Errorf("processes not ready after %v", readyBy)
		}
	}
	first := bench.NextBurstSlot(time.Now(), cfg.every, cfg.every/2+time.Second)
	for _, c := range kids {
		if _, err := fmt.Fprintln(c.in, first.UnixMilli()); err != nil {
			return nil, err
		}
		go func() {
			body, err := io.ReadAll(c.out)
			if err == nil {
				err = json.Unmarshal(body, &c.rep)
			}
			c.done <- err
		}()
	}
	from, to := bench.BurstWindow(first, cfg.bursts, cfg.every)
	if mark != nil {
		time.Sleep(time.Until(from))
		mark(0)
		time.Sleep(time.Until(to))
		mark(1)
	}
	var reps []bench.BurstReport
	for _, c := range kids {
		select {
		case err := <-c.done:
			if err != nil {
				return nil, fmt.Errorf("reading a process's report: %w", err)
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("processes did not finish: %w", errCollapsed)
		}
		reps = append(reps, c.rep)
	}
	return reps, nil
}

// burstChildMain runs a child-burst or child-burst-timer part: it prints
// "ready" once set up, reads the first measured slot (Unix ms) from
// stdin, and prints its report as JSON.
func burstChildMain(ctx context.Context, part string, a childArgs) error {
	first := make(chan time.Time, 1)
	ready := func() {
		fmt.Println("ready")
		go func() {
			line, err := bufio.NewReader(os.Stdin).ReadString('\n')
			ms, perr := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
			if err != nil || perr != nil {
				fmt.Fprintln(os.Stderr, "anarchonbench: no first slot on stdin:", err, perr)
				os.Exit(1)
			}
			first <- time.UnixMilli(ms)
		}()
	}
	var rep bench.BurstReport
	var err error
	bench.QuietDrivers()
	if part == "child-burst-timer" {
		rep, err = bench.BurstTimers(ctx, a.jobs, a.bursts, a.every, ready, first)
	} else {
		rep, err = bench.BurstInstance(ctx, bench.BurstConfig{
			Store: a.store, NS: a.ns, Workdir: a.workdir, Mode: bench.TimingMode(a.mode),
			Jobs: a.jobs, Bursts: a.bursts, Every: a.every, Instance: a.instance,
			CPUProfile: cpuProfile(a), Timeline: os.Getenv("ANARCHON_BENCH_BURST_TIMELINE") != "",
		}, ready, first)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// cpuProfile is the file an instance's CPU profile goes to, in the
// directory ANARCHON_BENCH_BURST_CPUPROFILE names; "" when it is unset.
func cpuProfile(a childArgs) string {
	dir := os.Getenv("ANARCHON_BENCH_BURST_CPUPROFILE")
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, fmt.Sprintf("%s-%s-%s.cpu", a.store, a.mode, a.instance))
}
