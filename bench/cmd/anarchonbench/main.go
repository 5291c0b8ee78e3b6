// Command anarchonbench runs anarchon's benchmark harness and prints
// Markdown tables. Parts:
//
//	anarchonbench claim    [-stores memory,sqlite,redis,nats,postgres,mysql]
//	anarchonbench calls    [-stores …] (the claim part's second table only)
//	anarchonbench contest  [-stores …]
//	anarchonbench timing
//	anarchonbench scale
//	anarchonbench failover [-stores …]
//	anarchonbench gocron
//	anarchonbench burst    [-stores …] [-short] (sizes from ANARCHON_BENCH_BURST_*; see burst.go)
//
// Server stores read ANARCHON_TEST_REDIS_ADDR, ANARCHON_TEST_NATS_URL,
// ANARCHON_TEST_POSTGRES_URL and ANARCHON_TEST_MYSQL_DSN; a store whose variable is unset is skipped
// with a note. bench/run.sh starts the servers and runs a part.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/anarchon/anarchon/bench"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	part := os.Args[1]
	fs := flag.NewFlagSet(part, flag.ExitOnError)
	stores := fs.String("stores", strings.Join(bench.StoreNames(), ","), "comma-separated stores")
	workdir := fs.String("workdir", os.TempDir(), "directory for store files")
	short := fs.Bool("short", false, "shorter runs (smoke test)")
	jobs := fs.Int("jobs", 10000, "load: registered jobs")
	active := fs.Int("active", 10000, "load: jobs firing every second")
	mode := fs.String("mode", "plain", "load: plain or lease")
	secs := fs.Duration("d", 5*time.Second, "load: measured time")
	mprof := fs.String("profile", "", "load: write mutex and block profiles to this prefix")
	store := fs.String("store", "", "burst child: the store")
	ns := fs.String("ns", "", "burst child: the store's namespace")
	bursts := fs.Int("bursts", 5, "burst child: measured bursts")
	every := fs.Duration("every", 15*time.Second, "burst child: time between bursts")
	instance := fs.String("instance", "", "burst child: instance ID")
	_ = fs.Parse(os.Args[2:])
	ctx := context.Background()

	if ok, err := childMain(ctx, part, childArgs{jobs: *jobs, active: *active, mode: *mode, d: *secs,
		store: *store, ns: *ns, workdir: *workdir, bursts: *bursts, every: *every, instance: *instance}); ok {
		if err != nil {
			fmt.Fprintln(os.Stderr, "anarchonbench:", err)
			os.Exit(1)
		}
		return
	}
	if part == "hog" { // a CPU hog for the timing part: GOMAXPROCS busy loops
		hog()
		return
	}
	if !parts[part] {
		fmt.Fprintf(os.Stderr, "anarchonbench: unknown part %q\n", part)
		usage()
	}
	// A mistyped store is said before any heading is printed.
	for _, n := range split(*stores) {
		if !slices.Contains(bench.StoreNames(), n) {
			fmt.Fprintf(os.Stderr, "anarchonbench: -stores: unknown store %q (known: %s)\n", n, strings.Join(bench.StoreNames(), ", "))
			os.Exit(2)
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("<!-- %s, %s/%s, %d CPUs, %s, load average at start: %s -->\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"),
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), strings.TrimSpace(string(load)))
	var err error
	switch part {
	case "claim":
		err = runClaim(ctx, split(*stores), *workdir, *short)
	case "calls":
		err = runCalls(ctx, split(*stores), *workdir, *short)
	case "load":
		if *mprof != "" {
			if f, err := os.Create(*mprof + ".cpu"); err == nil {
				_ = pprof.StartCPUProfile(f)
				defer pprof.StopCPUProfile()
			}
			runtime.SetMutexProfileFraction(10)
			runtime.SetBlockProfileRate(100000)
			defer writeProfiles(*mprof)
		}
		var l bench.Load
		l, err = bench.MeasureLoad(ctx, *jobs, *active, bench.TimingMode(*mode), *secs)
		fmt.Println(loadLine(l))
	case "timing":
		err = runTiming(ctx, *short)
	case "gocron":
		err = runGocron(ctx, *short)
	case "contest":
		err = runContest(ctx, split(*stores), *workdir, *short)
	case "failover":
		err = runFailover(ctx, split(*stores), *workdir, *short)
	case "scale":
		err = runScale(ctx, *short)
	case "burst":
		err = runBurst(ctx, split(*stores), *workdir, *short)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "anarchonbench:", err)
		os.Exit(1)
	}
}

// parts are the parts main runs (besides the children's and the hog).
var parts = map[string]bool{"claim": true, "calls": true, "load": true, "timing": true, "gocron": true,
	"contest": true, "failover": true, "scale": true, "burst": true}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: anarchonbench claim|calls|contest|timing|scale|failover|gocron|burst [-stores a,b] [-workdir dir] [-short]")
	os.Exit(2)
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// eachStore opens every named store in turn; a store without its server
// variable is noted and skipped.
func eachStore(ctx context.Context, names []string, workdir string, fn func(*bench.Store) error) error {
	for _, n := range names {
		st, err := bench.OpenStore(ctx, n, workdir)
		if errors.Is(err, bench.ErrNoServer) {
			fmt.Printf("_%s skipped: %v_\n\n", n, err)
			continue
		}
		if err != nil {
			return err
		}
		err = fn(st)
		st.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	return nil
}

func hog() {
	n := runtime.GOMAXPROCS(0)
	for range n - 1 {
		go spin()
	}
	spin()
}

func spin() {
	x := 0
	for {
		x++
	}
}

func writeProfiles(prefix string) {
	for _, name := range []string{"mutex", "block"} {
		f, err := os.Create(prefix + "." + name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return
		}
		_ = pprof.Lookup(name).WriteTo(f, 0)
		f.Close()
	}
}

// loadLine is the load part's summary of one measurement. Each time has
// one unit, whatever its size, the unit of the scale part's columns for
// the same quantity (CPU ms per wall second, CPU µs per fired slot; the
// totals in ms and s): a time.Duration's own format moves between ns, µs
// and ms with the value, so that two lines of one field could not be
// compared at a glance.
func loadLine(l bench.Load) string {
	perSec := 0.0
	if l.Wall > 0 {
		perSec = float64(l.Fired) / l.Wall.Seconds()
	}
	return fmt.Sprintf("jobs=%d active=%d mode=%s fired=%d cpu=%sms wall=%.3fs rss=%sMiB goroutines=%d stop_timed_out=%t fired/s=%.0f cpu/s=%sms cpu/fired=%sµs",
		l.Jobs, l.Active, l.Mode, l.Fired, bench.Ms(l.CPU), l.Wall.Seconds(), bench.MiB(l.RSS), l.Goroutines, l.StopTimedOut,
		perSec, bench.Ms(l.CPUPerSecond()), bench.Us(l.CPUPerFired()))
}
