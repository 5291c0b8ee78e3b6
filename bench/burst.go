package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon"
)

// BurstConfig describes one process's part of a burst measurement: Jobs
// jobs on one schedule (every Every, jitter 0, no-op handlers) on one
// store, measured over Bursts slots from the first one the harness names.
type BurstConfig struct {
	Store    string // a store name, as OpenStore takes it
	NS       string // the Store's NS (JoinStore); "" for the memory store
	Workdir  string
	Mode     TimingMode // ModePlain or ModeLease
	Jobs     int
	Bursts   int
	Every    time.Duration
	Instance string // the scheduler's InstanceID
	// CPUProfile, if set, is a file the process's CPU profile over the
	// measured window goes to (ANARCHON_BENCH_BURST_CPUPROFILE).
	CPUProfile string
	// Timeline, if set, prints to stderr when each of this process's
	// claim batches of each measured burst was sent and answered, and
	// when its handlers started (ANARCHON_BENCH_BURST_TIMELINE).
	Timeline bool
}

// BurstReport is what one process saw of the measured bursts. Starts[b][j]
// is how late (µs, start − slot) job j's handler first started in burst b
// on this process, or -1 if it did not start here, and Attempts[b][j] the
// Run.Attempt of that start (a backup's takeover of a lost lease is
// attempt 2 or more). A later start of the same job and slot here is not
// recorded: it is counted in Repeats when its attempt was started here
// already (a duplicate), in Takeovers otherwise.
type BurstReport struct {
	Instance  string
	Starts    [][]int32
	Attempts  [][]uint8
	Repeats   int
	Takeovers int
	// CPU is the process's CPU time (user + system, getrusage) from half
	// an interval before the first measured slot to half an interval after
	// the last.
	CPU time.Duration
	// Calls counts backend calls by method (bench's counting wrapper)
	// over the same window; empty for the timer floor.
	Calls      map[string]int64
	RSS        int64 // at the end of the window
	Goroutines int   // at the end of the window
	// StoreErrors counts failed store calls (EventStoreError) in the
	// window; FirstError is the first one's text.
	StoreErrors int64
	FirstError  string
}

// BurstWindow returns the measured window of bursts whose first slot is
// first: from half an interval before it to half an interval after the
// last one. CPU, calls and store errors are counted in it; handler starts
// of the measured slots are recorded until one more interval after it, so
// a (job, slot) counts as missed when no process started it 1.5 intervals
// after the last burst's slot.
func BurstWindow(first time.Time, bursts int, every time.Duration) (from, to time.Time) {
	last := first.Add(time.Duration(bursts-1) * every)
	return first.Add(-every / 2), last.Add(every / 2)
}

// NextBurstSlot returns the first slot of an every grid (aligned to the
// Unix epoch, as Interval schedules are) that leaves at least lead before
// it.
func NextBurstSlot(now time.Time, every, lead time.Duration) time.Time {
	t := now.Add(lead).Truncate(every)
	if t.Before(now.Add(lead)) {
		t = t.Add(every)
	}
	return t
}

// ledger records handler starts of the measured slots.
type ledger struct {
	first     atomic.Int64 // first measured slot, Unix ms; 0 until known
	every     int64        // ms
	starts    [][]atomic.Int32
	mu        sync.Mutex       // guards attempts (rarely contended: a start each)
	attempts  [][]map[int]bool // attempts started here, per burst and job; nil: none
	repeats   atomic.Int64
	takeovers atomic.Int64
}

func newLedger(jobs, bursts int, every time.Duration) *ledger {
	l := &ledger{every: every.Milliseconds(), starts: make([][]atomic.Int32, bursts), attempts: make([][]map[int]bool, bursts)}
	for b := range l.starts {
		l.starts[b] = make([]atomic.Int32, jobs)
		l.attempts[b] = make([]map[int]bool, jobs)
		for j := range l.starts[b] {
			l.starts[b][j].Store(-1)
		}
	}
	return l
}

// add records that attempt of job's slot started at now, if slot is
// measured.
func (l *ledger) add(job int, slot, now time.Time, attempt int) {
	first := l.first.Load()
	ms := slot.UnixMilli()
	if first == 0 || ms < first || (ms-first)%l.every != 0 {
		return
	}
	b := int((ms - first) / l.every)
	if b >= len(l.starts) {
		return
	}
	late := min(now.Sub(slot).Microseconds(), 1<<31-1)
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := l.attempts[b][job]
	switch {
	case seen == nil:
		l.attempts[b][job] = map[int]bool{attempt: true}
		l.starts[b][job].Store(int32(late))
	case seen[attempt]:
		l.repeats.Add(1)
	default:
		seen[attempt] = true
		l.takeovers.Add(1)
	}
}

func (l *ledger) report(instance string) BurstReport {
	r := BurstReport{Instance: instance, Repeats: int(l.repeats.Load()), Takeovers: int(l.takeovers.Load()),
		Starts: make([][]int32, len(l.starts)), Attempts: make([][]uint8, len(l.starts))}
	l.mu.Lock()
	defer l.mu.Unlock()
	for b := range l.starts {
		r.Starts[b] = make([]int32, len(l.starts[b]))
		r.Attempts[b] = make([]uint8, len(l.starts[b]))
		for j := range l.starts[b] {
			r.Starts[b][j] = l.starts[b][j].Load()
			for a := range l.attempts[b][j] {
				if r.Attempts[b][j] == 0 || int(r.Attempts[b][j]) > a {
					r.Attempts[b][j] = uint8(min(a, 255)) // the first attempt started here
				}
			}
		}
	}
	return r
}

// BurstJobName is the name of job j of a burst measurement.
func BurstJobName(j int) string { return fmt.Sprintf("burst-%06d", j) }

// BurstInstance runs one scheduler instance of a burst measurement: it
// joins the store (or opens the memory store), registers cfg.Jobs jobs on
// one schedule and starts; then it calls ready, waits for the first
// measured slot from first, and records handler starts until the window
// (see BurstWindow) ends. It stops the scheduler before it returns.
func BurstInstance(ctx context.Context, cfg BurstConfig, ready func(), first <-chan time.Time) (BurstReport, error) {
	var st *Store
	var err error
	if cfg.Store == "memory" {
		st, err = OpenStore(ctx, cfg.Store, cfg.Workdir)
	} else {
		st, err = JoinStore(ctx, cfg.Store, cfg.Workdir, cfg.NS)
	}
	if err != nil {
		return BurstReport{}, err
	}
	defer st.Close()
	be, err := st.Open(ctx)
	if err != nil {
		return BurstReport{}, err
	}
	w, sb := Wrap(be, false)
	var claims ClaimLog
	if cfg.Timeline {
		w.LogClaims(&claims)
	}
	var storeErrs atomic.Int64
	var firstErr atomic.Pointer[string]
	onEvent := func(ev anarchon.Event) {
		if ev.Kind == anarchon.EventStoreError {
			storeErrs.Add(1)
			if ev.Err != nil {
				msg := ev.Op + ": " + ev.Err.Error()
				firstErr.CompareAndSwap(nil, &msg)
			}
		}
	}
	s := anarchon.New(sb, &anarchon.Options{InstanceID: cfg.Instance, Logger: quietLogger(), OnEvent: onEvent})
	led := newLedger(cfg.Jobs, cfg.Bursts, cfg.Every)
	opts := &anarchon.JobOptions{NoLease: cfg.Mode == ModePlain}
	for j := range cfg.Jobs {
		h := func(_ context.Context, run *anarchon.Run) error {
			led.add(j, run.Slot, time.Now(), run.Attempt)
			return nil
		}
		if err := s.Every(BurstJobName(j), cfg.Every, h, opts); err != nil {
			return BurstReport{}, err
		}
	}
	if err := s.Start(ctx); err != nil {
		return BurstReport{}, err
	}
	stopped := false
	defer func() {
		if !stopped {
			sctx, cancel := deadline(30 * time.Second)
			_ = s.Stop(sctx)
			cancel()
		}
	}()
	ready()
	var f time.Time
	select {
	case f = <-first:
	case <-ctx.Done():
		return BurstReport{}, ctx.Err()
	}
	led.first.Store(f.UnixMilli())
	from, to := BurstWindow(f, cfg.Bursts, cfg.Every)
	time.Sleep(time.Until(from))
	firstErr.Store(nil)
	if cfg.CPUProfile != "" {
		if f, err := os.Create(cfg.CPUProfile); err == nil && pprof.StartCPUProfile(f) == nil {
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	cpu0, calls0, errs0 := CPUTime(), w.Counts(), storeErrs.Load()
	time.Sleep(time.Until(to))
	cpu1, calls1, errs1 := CPUTime(), w.Counts(), storeErrs.Load()
	rss, gs := RSS(), runtime.NumGoroutine()
	var msg *string
	if errs1 > errs0 {
		msg = firstErr.Load()
	}
	time.Sleep(cfg.Every) // late starts of the last bursts still count
	rep := led.report(cfg.Instance)
	if cfg.Timeline {
		printTimeline(os.Stderr, cfg.Instance, f, cfg.Every, rep.Starts, &claims)
	}
	rep.CPU = cpu1 - cpu0
	rep.StoreErrors = errs1 - errs0
	if msg != nil {
		rep.FirstError = *msg
	}
	rep.Calls = map[string]int64{}
	for op := range calls1 {
		if d := calls1[op] - calls0[op]; d > 0 {
			rep.Calls[Op(op).String()] = d
		}
	}
	rep.RSS, rep.Goroutines = rss, gs
	stopped = true
	sctx, cancel := deadline(30 * time.Second)
	defer cancel()
	if err := s.Stop(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return rep, err
	}
	return rep, nil
}

// BurstTimers is the floor of a burst measurement: jobs goroutines, each
// waiting on its own Go timer for every measured slot in turn (the
// deadlines a scheduler's slots have), in one process, with the same ready
// and first protocol as BurstInstance.
func BurstTimers(ctx context.Context, jobs, bursts int, every time.Duration, ready func(), first <-chan time.Time) (BurstReport, error) {
	led := newLedger(jobs, bursts, every)
	ready()
	var f time.Time
	select {
	case f = <-first:
	case <-ctx.Done():
		return BurstReport{}, ctx.Err()
	}
	led.first.Store(f.UnixMilli())
	from, to := BurstWindow(f, bursts, every)
	time.Sleep(time.Until(from))
	cpu0 := CPUTime()
	var wg sync.WaitGroup
	for j := range jobs {
		wg.Go(func() {
			for b := range bursts {
				slot := f.Add(time.Duration(b) * every)
				t := time.NewTimer(time.Until(slot))
				<-t.C
				led.add(j, slot, time.Now(), 1)
			}
		})
	}
	wg.Wait()
	time.Sleep(time.Until(to))
	rep := led.report("timers")
	rep.CPU = CPUTime() - cpu0
	rep.RSS, rep.Goroutines = RSS(), runtime.NumGoroutine()
	return rep, nil
}

// BurstRow is the merged result of one burst measurement over all its
// processes.
type BurstRow struct {
	Procs, Jobs, Bursts int
	// P50, P99: the median over the bursts of each burst's p50 and p99
	// start lateness (all starts of the burst, every process); Max: the
	// latest start of any burst.
	P50, P99, Max time.Duration
	Starts        int // handler starts recorded, all bursts and processes
	Duplicates    int // starts beyond the first of a (job, slot, attempt)
	Takeovers     int // starts of a (job, slot) under a further attempt (a lease taken over)
	Misses        int // (job, slot) pairs no process started
	CPUPerInst    time.Duration
	RSSPerInst    int64
	CallsPerBurst float64 // backend calls per burst, all processes (counted)
	// CallsByOp is CallsPerBurst by method (Op's names), for finding
	// which calls a row's count is made of.
	CallsByOp   map[string]float64
	StoreErrors int64  // failed store calls in the window, all processes
	FirstError  string // one of them
}

// MergeBursts merges the reports of one measurement's processes. With
// exclusive false (the timer floor: every process fires every deadline)
// duplicates and misses are not counted.
func MergeBursts(reps []BurstReport, jobs, bursts int, exclusive bool) BurstRow {
	row := BurstRow{Procs: len(reps), Jobs: jobs, Bursts: bursts}
	var p50s, p99s []time.Duration
	for b := range bursts {
		var late []time.Duration
		for j := range jobs {
			n := 0
			attempts := map[uint8]int{}
			for _, r := range reps {
				if b >= len(r.Starts) || j >= len(r.Starts[b]) || r.Starts[b][j] < 0 {
					continue
				}
				n++
				late = append(late, time.Duration(r.Starts[b][j])*time.Microsecond)
				a := uint8(1)
				if b < len(r.Attempts) && j < len(r.Attempts[b]) {
					a = r.Attempts[b][j]
				}
				attempts[a]++
			}
			if exclusive {
				if n == 0 {
					row.Misses++
				}
				for _, c := range attempts {
					row.Duplicates += c - 1
				}
				row.Takeovers += max(len(attempts)-1, 0)
			}
		}
		row.Starts += len(late)
		if len(late) > 0 {
			s := Summarize(late)
			p50s, p99s = append(p50s, s.P50), append(p99s, s.P99)
			row.Max = max(row.Max, s.Max)
		}
	}
	var calls int64
	row.CallsByOp = map[string]float64{}
	for _, r := range reps {
		if exclusive {
			row.Duplicates += r.Repeats
			row.Takeovers += r.Takeovers
		}
		row.CPUPerInst += r.CPU
		row.StoreErrors += r.StoreErrors
		if row.FirstError == "" {
			row.FirstError = r.FirstError
		}
		row.RSSPerInst += r.RSS
		for op, n := range r.Calls {
			calls += n
			row.CallsByOp[op] += float64(n) / float64(bursts)
		}
	}
	if len(reps) > 0 {
		row.CPUPerInst /= time.Duration(len(reps))
		row.RSSPerInst /= int64(len(reps))
	}
	row.CallsPerBurst = float64(calls) / float64(bursts)
	if len(p50s) > 0 {
		slices.Sort(p50s)
		slices.Sort(p99s)
		row.P50, row.P99 = p50s[len(p50s)/2], p99s[len(p99s)/2]
	}
	return row
}

// printTimeline writes, for each measured burst, when this instance's
// handlers started (min, p50, p99, max of start − slot) and when each of
// its claim batches was sent and answered, in ms after the slot.
func printTimeline(out io.Writer, inst string, first time.Time, every time.Duration, starts [][]int32, claims *ClaimLog) {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) }
	for b := range starts {
		slot := first.Add(time.Duration(b) * every)
		var late []time.Duration
		for _, us := range starts[b] {
			if us >= 0 {
				late = append(late, time.Duration(us)*time.Microsecond)
			}
		}
		slices.Sort(late)
		at := func(q float64) string {
			if len(late) == 0 {
				return "-"
			}
			return ms(late[int(q*float64(len(late)-1))])
		}
		fmt.Fprintf(out, "timeline %s burst %d: %d starts, min %s p50 %s p99 %s max %s ms\n", inst, b, len(late), at(0), at(0.5), at(0.99), at(1))
		for _, c := range claims.Calls(slot.UnixMilli()) {
			fmt.Fprintf(out, "timeline %s burst %d: %s of %d sent %s answered %s ms, %d won\n", inst, b, c.Op, c.N, ms(c.Sent.Sub(slot)), ms(c.Done.Sub(slot)), c.Won)
		}
	}
}
