package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/faults"
)

var instanceBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "anarchon-faults-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	instanceBin = filepath.Join(dir, "instance")
	args := []string{"build", "-o", instanceBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/instance")...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the instance binary:", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// need returns the value of the environment variable that enables a
// backend's test. Without it the test is skipped, or fails under CI=true.
func need(t *testing.T, name, script string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		msg := fmt.Sprintf("%s is not set: start a server with `bash scripts/services/%s.sh <dir>` and export what it prints", name, script)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return v
}

// config is one run of the harness.
type config struct {
	duration      time.Duration // how long faults are injected
	instances     int
	interval      time.Duration // leased job
	work          time.Duration // leased job's work
	lease         time.Duration
	plainInterval time.Duration
	clockSync     time.Duration // the instances' ClockSyncInterval: a stepped clock is measured right again within it
	gapMin        time.Duration // quiet time between faults
	gapMax        time.Duration
	maxLate       time.Duration // both jobs' MaxLate; 0: anarchon's default
	soak          bool
}

// loadConfig is the bounded CI mode (about a minute per backend), or the
// soak mode when ANARCHON_SOAK holds a duration (e.g. ANARCHON_SOAK=20m).
func loadConfig(t *testing.T) config {
	c := config{
		duration: 45 * time.Second, instances: 3,
		interval: 3 * time.Second, work: 2 * time.Second, lease: 1200 * time.Millisecond,
		plainInterval: time.Second, gapMin: 2 * time.Second, gapMax: 3 * time.Second,
		// A clock step is held for a second longer (4 s), so that a
		// stepped instance not measured right again within one sync is
		// seen while the step lasts.
		clockSync: 3 * time.Second,
	}
	if v := os.Getenv("ANARCHON_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("ANARCHON_SOAK=%q: want a positive duration such as 20m", v)
		}
		c.duration, c.soak = d, true
		c.gapMin, c.gapMax = 3*time.Second, 9*time.Second
	}
	return c
}

// store is a store under test, as the harness sees it.
type store struct {
	name string
	// addr is the server's host:port, which proxies forward to; "" for a
	// store without a network (SQLite).
	addr string
	// url returns the store URL an instance uses to reach addr (a proxy's).
	url func(addr string) string
	// restart stops the server, waits down and starts it again on the same
	// port; the outage is [start, end): end is taken just before the new
	// server is started. nil when the store has no server.
	restart func(down time.Duration) (start, end time.Time, err error)
	// lock holds the store's write lock for d (SQLite); the outage is
	// [start, end), end taken just before the lock is let go. nil otherwise.
	lock func(d time.Duration) (start, end time.Time, err error)
}

// proc is one instance slot: a process the harness starts, kills and
// restarts, with its own proxy in front of the store.
type proc struct {
	k     int
	proxy *faults.Proxy

	offsetFile string        // the instance reads a new clock offset from it on SIGUSR1
	base       time.Duration // the clock offset it was started with
	started    time.Time     // when its process was started

	mu      sync.Mutex
	gen     int
	id      string
	cmd     *exec.Cmd
	running bool
	killed  bool
}

type harness struct {
	t      *testing.T
	cfg    config
	st     store
	dir    string
	ledger string
	rngMu  sync.Mutex
	rng    *rand.Rand
	procs  []*proc
	stop   chan struct{}
	wg     sync.WaitGroup
	logf   *os.File

	mu     sync.Mutex
	faults []faults.Fault
	booted time.Time // when every first process had started
}

func newHarness(t *testing.T, cfg config, st store) *harness {
	dir := t.TempDir()
	if keep := os.Getenv("ANARCHON_FAULTS_KEEP"); keep != "" {
		dir = filepath.Join(keep, st.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("%s: seed %d, work dir %s", st.name, seed, dir)
	logf, err := os.Create(filepath.Join(dir, "instances.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	return &harness{
		t: t, cfg: cfg, st: st, dir: dir, ledger: filepath.Join(dir, "ledger.jsonl"),
		rng: rand.New(rand.NewPCG(seed, seed>>1|1)), stop: make(chan struct{}), logf: logf,
	}
}

// intn and dur draw random numbers; the harness's goroutines share rng.
func (h *harness) intn(n int) int {
	h.rngMu.Lock()
	defer h.rngMu.Unlock()
	return h.rng.IntN(n)
}

func (h *harness) dur(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	h.rngMu.Lock()
	defer h.rngMu.Unlock()
	return time.Duration(h.rng.Int64N(int64(d)))
}

func (h *harness) record(f faults.Fault) {
	h.mu.Lock()
	h.faults = append(h.faults, f)
	if b, err := json.Marshal(f); err == nil {
		if fl, err := os.OpenFile(filepath.Join(h.dir, "faults.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			_, _ = fl.Write(append(b, '\n'))
			fl.Close()
		}
	}
	h.mu.Unlock()
	if f.End.IsZero() {
		h.t.Logf("%s fault %s targets=%v at %s", h.st.name, f.Kind, f.Targets, f.Start.Format("15:04:05.000"))
		return
	}
	h.t.Logf("%s fault %s targets=%v %s→%s", h.st.name, f.Kind, f.Targets,
		f.Start.Format("15:04:05.000"), f.End.Format("15:04:05.000"))
}

// offset picks a clock offset for a process: the first two get the
// extremes, ±5 s; the others a random one in between.
func (h *harness) offset(p *proc) time.Duration {
	if p.gen == 1 && p.k == 0 {
		return 5 * time.Second
	}
	if p.gen == 1 && p.k == 1 {
		return -5 * time.Second
	}
	return h.dur(10*time.Second) - 5*time.Second
}

// launch starts the next process of slot p.
func (h *harness) launch(p *proc) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	p.id = fmt.Sprintf("i%d.%d", p.k+1, p.gen)
	addr := h.st.addr
	if p.proxy != nil {
		addr = p.proxy.Addr()
	}
	off := h.offset(p)
	p.base = off
	p.offsetFile = filepath.Join(h.dir, fmt.Sprintf("offset-%d", p.k))
	cmd := exec.Command(instanceBin,
		"-store", h.st.url(addr), "-id", p.id, "-ledger", h.ledger, "-offset", off.String(),
		"-offset-file", p.offsetFile,
		"-interval", h.cfg.interval.String(), "-work", h.cfg.work.String(), "-lease", h.cfg.lease.String(),
		"-plain-interval", h.cfg.plainInterval.String(), "-clock-sync", h.cfg.clockSync.String())
	if h.cfg.maxLate > 0 {
		cmd.Args = append(cmd.Args, "-max-late", h.cfg.maxLate.String())
	}
	cmd.Stdout = h.logf
	cmd.Stderr = h.logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.id, err)
	}
	p.cmd, p.running, p.killed, p.started = cmd, true, false, time.Now()
	return nil
}

// supervise keeps slot p running until the harness stops: a killed process
// is restarted after 1–3 s, one that exited by itself (its Start failed
// while the store was away) after 500 ms.
func (h *harness) supervise(p *proc) {
	defer h.wg.Done()
	for {
		p.mu.Lock()
		cmd := p.cmd
		p.mu.Unlock()
		err := cmd.Wait()
		p.mu.Lock()
		p.running = false
		killed := p.killed
		id := p.id
		p.mu.Unlock()
		wait := 500 * time.Millisecond
		if killed {
			wait = time.Second + h.dur(2*time.Second)
		}
		select {
		case <-h.stop:
			return
		default:
		}
		if !killed {
			h.t.Logf("%s: %s exited by itself (%v); restarting", h.st.name, id, err)
		}
		timer := time.NewTimer(wait)
		select {
		case <-h.stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		if err := h.launch(p); err != nil {
			h.t.Errorf("%s: %v", h.st.name, err)
			return
		}
	}
}

func (h *harness) alive() []*proc {
	var out []*proc
	for _, p := range h.procs {
		p.mu.Lock()
		if p.running && !p.killed {
			out = append(out, p)
		}
		p.mu.Unlock()
	}
	return out
}

// kill sends SIGKILL to p's process and records it.
func (h *harness) kill(p *proc, kind faults.FaultKind) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running || p.killed {
		return
	}
	p.killed = true
	now := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		h.t.Logf("kill %s: %v", p.id, err)
		return
	}
	h.record(faults.Fault{Kind: kind, Targets: []string{p.id}, Start: now})
}

// winner waits (up to two intervals) for a leased run in progress on a live
// process with at least minLeft of its work to go, and returns that
// process.
func (h *harness) winner(tail *ledgerTail, minLeft time.Duration) *proc {
	deadline := time.Now().Add(2 * h.cfg.interval)
	for time.Now().Before(deadline) {
		tail.poll()
		for _, p := range h.alive() {
			p.mu.Lock()
			id := p.id
			p.mu.Unlock()
			if tail.open[id] > 0 && time.Now().Add(minLeft).Before(tail.until(id, h.cfg.work)) {
				return p
			}
		}
		select {
		case <-h.stop:
			return nil
		case <-time.After(20 * time.Millisecond): // polling a file another process writes
		}
	}
	return nil
}

// ledgerTail follows the ledger to know which instance holds a leased run.
type ledgerTail struct {
	path   string
	off    int64
	open   map[string]int              // instance -> leased runs without an end
	starts map[string]map[string]int64 // instance -> token -> start µs
}

func newLedgerTail(path string) *ledgerTail {
	return &ledgerTail{path: path, open: map[string]int{}, starts: map[string]map[string]int64{}}
}

func (l *ledgerTail) poll() {
	f, err := os.Open(l.path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(l.off, io.SeekStart); err != nil {
		return
	}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return // a partial line is read again next time
		}
		l.off += int64(len(line))
		var e faults.Entry
		if json.Unmarshal(line, &e) != nil || e.Job != "leased" {
			continue
		}
		if l.starts[e.Inst] == nil {
			l.starts[e.Inst] = map[string]int64{}
		}
		switch e.Ev {
		case faults.EvStart:
			l.open[e.Inst]++
			l.starts[e.Inst][e.Token] = e.T
		case faults.EvEnd:
			l.open[e.Inst]--
			delete(l.starts[e.Inst], e.Token)
		}
	}
}

// until is when inst's newest open run should end.
func (l *ledgerTail) until(inst string, work time.Duration) time.Time {
	var newest int64
	for _, t := range l.starts[inst] {
		newest = max(newest, t)
	}
	return time.UnixMicro(newest).Add(work)
}

// pause waits d unless the harness stops.
func (h *harness) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-h.stop:
		return false
	case <-t.C:
		return true
	}
}

func (h *harness) proxies(ps []*proc) ([]*faults.Proxy, []string) {
	var px []*faults.Proxy
	var ids []string
	for _, p := range ps {
		if p.proxy != nil {
			px = append(px, p.proxy)
			p.mu.Lock()
			ids = append(ids, p.id)
			p.mu.Unlock()
		}
	}
	return px, ids
}

// inject runs one fault of kind and returns when it has been lifted.
func (h *harness) inject(kind faults.FaultKind, tail *ledgerTail) {
	c := h.cfg
	switch kind {
	case faults.FaultKillWinner:
		if p := h.winner(tail, 200*time.Millisecond); p != nil {
			// Into the middle of the run.
			h.kill(p, faults.FaultKillWinner)
			return
		}
		fallthrough
	case faults.FaultKill:
		if al := h.alive(); len(al) > 1 {
			h.kill(al[h.intn(len(al))], faults.FaultKill)
		}
	case faults.FaultDelay:
		al := h.alive()
		if len(al) == 0 {
			return
		}
		px, ids := h.proxies(al[:1+h.intn(len(al))])
		d := time.Duration(50+h.intn(250)) * time.Millisecond
		start := time.Now()
		for _, x := range px {
			x.Set(faults.Delay, d)
		}
		h.pause(3 * time.Second)
		end := time.Now()
		for _, x := range px {
			x.Set(faults.Pass, 0)
		}
		h.record(faults.Fault{Kind: kind, Targets: ids, Start: start, End: end})
	case faults.FaultBlackhole:
		// Partition the winner of a run away from the store for longer
		// than its lease, early in the run: a backup must take over, and
		// the winner must have stopped first.
		p := h.winner(tail, c.lease+300*time.Millisecond)
		if p == nil || p.proxy == nil {
			return
		}
		px, ids := h.proxies([]*proc{p})
		start := time.Now()
		px[0].Set(faults.Blackhole, 0)
		h.pause(2*c.lease + time.Second)
		end := time.Now()
		px[0].Set(faults.Pass, 0)
		h.record(faults.Fault{Kind: kind, Targets: ids, Start: start, End: end})
	case faults.FaultCut:
		px, _ := h.proxies(h.procs)
		start := time.Now()
		for _, x := range px {
			x.Set(faults.Cut, 0)
		}
		h.pause(2 * time.Second)
		end := time.Now()
		for _, x := range px {
			x.Set(faults.Pass, 0)
		}
		h.record(faults.Fault{Kind: kind, Start: start, End: end})
	case faults.FaultStoreRestart:
		start, end, err := h.st.restart(2 * time.Second)
		if err != nil {
			h.t.Errorf("%s: restart: %v", h.st.name, err)
		}
		h.record(faults.Fault{Kind: kind, Start: start, End: end})
	case faults.FaultClockStep:
		// One instance's clock steps by +30 s, −30 s, +1 h and −1 h in
		// turn, each held for an interval of the leased job (at least one
		// clock sync and a second, so that Check can judge whether the
		// instance was measured right again within one sync) and stepped
		// back for a second before the next, so the bounded CI mode sees
		// all four. Only an instance up for a few seconds is stepped: the
		// signal would kill one that has not set up its handler yet.
		var cands []*proc
		for _, p := range h.alive() {
			p.mu.Lock()
			if time.Since(p.started) > 3*time.Second {
				cands = append(cands, p)
			}
			p.mu.Unlock()
		}
		if len(cands) == 0 || len(h.alive()) < 2 {
			return
		}
		p := cands[h.intn(len(cands))]
		for _, step := range []time.Duration{30 * time.Second, -30 * time.Second, time.Hour, -time.Hour} {
			start := time.Now()
			if !h.stepClock(p, step) {
				return
			}
			ok := h.pause(max(c.interval, c.clockSync+time.Second))
			end := time.Now()
			h.stepClock(p, 0)
			p.mu.Lock()
			id := p.id
			p.mu.Unlock()
			h.t.Logf("%s: clock of %s stepped by %v and back", h.st.name, id, step)
			h.record(faults.Fault{Kind: kind, Targets: []string{id}, Start: start, End: end})
			if !ok || !h.pause(time.Second) {
				return
			}
		}
	case faults.FaultStoreLock:
		start, end, err := h.st.lock(3 * time.Second)
		if err != nil {
			h.t.Errorf("%s: lock: %v", h.st.name, err)
			return
		}
		h.record(faults.Fault{Kind: kind, Start: start, End: end})
	}
}

// stepClock sets p's clock to its start offset plus step (SIGUSR1 after
// writing the offset file); false if p is not running.
func (h *harness) stepClock(p *proc, step time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running || p.killed {
		return false
	}
	if err := os.WriteFile(p.offsetFile, []byte((p.base + step).String()), 0o600); err != nil {
		h.t.Errorf("clock step: %v", err)
		return false
	}
	if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		h.t.Logf("clock step %s: %v", p.id, err)
		return false
	}
	return true
}

// run starts the instances, injects faults for cfg.duration, stops
// everything, reads the store's history and checks the ledger.
func (h *harness) run() faults.Report {
	t, c := h.t, h.cfg
	for k := range c.instances {
		p := &proc{k: k}
		if h.st.addr != "" {
			px, err := faults.NewProxy(h.st.addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { px.Close() })
			p.proxy = px
		}
		if err := h.launch(p); err != nil {
			t.Fatal(err)
		}
		h.procs = append(h.procs, p)
		h.wg.Add(1)
		go h.supervise(p)
	}
	t.Cleanup(func() {
		for _, p := range h.procs {
			p.mu.Lock()
			if p.running {
				_ = p.cmd.Process.Signal(syscall.SIGKILL)
			}
			p.mu.Unlock()
		}
	})
	h.booted = time.Now()
	from := h.booted.Add(2 * c.interval) // every instance has started and measured its offset

	kinds := []faults.FaultKind{faults.FaultKillWinner, faults.FaultKill, faults.FaultClockStep}
	if h.st.addr != "" {
		kinds = append(kinds, faults.FaultDelay, faults.FaultBlackhole, faults.FaultCut)
	}
	if h.st.restart != nil {
		kinds = append(kinds, faults.FaultStoreRestart)
	}
	if h.st.lock != nil {
		kinds = append(kinds, faults.FaultStoreLock)
	}
	// After one of each, kills (of the winner above all) and partitions
	// come more often than store-wide outages, which excuse slots from the
	// settlement check.
	var weighted []faults.FaultKind
	for _, k := range kinds {
		n := 1
		switch k {
		case faults.FaultKillWinner:
			n = 4
		case faults.FaultKill, faults.FaultBlackhole:
			n = 2
		}
		for range n {
			weighted = append(weighted, k)
		}
	}
	tail := newLedgerTail(h.ledger)
	end := time.Now().Add(c.duration)
	h.pause(c.interval + c.gapMin) // let the instances settle
	for i := 0; time.Now().Before(end); i++ {
		// Every kind once in turn, then at random.
		kind := kinds[i%len(kinds)]
		if i >= len(kinds) {
			kind = weighted[h.intn(len(weighted))]
		}
		h.inject(kind, tail)
		gap := c.gapMin + h.dur(c.gapMax-c.gapMin)
		h.pause(gap)
	}

	// Stop: SIGTERM everyone (hand-over), and wait for the processes.
	stopAt := time.Now()
	close(h.stop)
	for _, p := range h.procs {
		p.mu.Lock()
		if p.running {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
		p.mu.Unlock()
	}
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Errorf("%s: instances did not stop within 15 s of SIGTERM", h.st.name)
		for _, p := range h.procs {
			p.mu.Lock()
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			p.mu.Unlock()
		}
		<-done
	}

	entries, err := faults.ReadLedger(h.ledger)
	if err != nil {
		t.Fatal(err)
	}
	history := h.history()
	spec := faults.Spec{
		LeasedJob: "leased", PlainJob: "plain",
		LeasedInterval: c.interval, PlainInterval: c.plainInterval, Lease: c.lease, Work: c.work,
		From: from, To: stopAt.Add(-2 * c.interval),
		ClockSync: c.clockSync,
	}
	h.mu.Lock()
	fs := append([]faults.Fault(nil), h.faults...)
	h.mu.Unlock()
	rep := faults.Check(spec, entries, history, fs)
	rep.Backend = h.st.name
	return rep
}

// history reads both jobs' history straight from the store. It gives up
// after a minute and returns nil, so that a store whose History does not
// return still gets the ledger's checks.
func (h *harness) history() map[string][]anarchon.RunRecord {
	t := h.t
	b, err := faults.Open(h.st.url(h.st.addr))
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		hist map[string][]anarchon.RunRecord
		err  error
	}
	ch := make(chan answer, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		defer b.Close(context.Background())
		// A replicated store may still be electing a leader after the
		// last fault (NATS answers "no responders" meanwhile): each read
		// is asked again until it succeeds or the deadline passes.
		retry := func(f func() error) error {
			for {
				err := f()
				if err == nil || ctx.Err() != nil {
					return err
				}
				select {
				case <-ctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
			}
		}
		if err := retry(func() error { return b.Init(ctx) }); err != nil {
			ch <- answer{err: err}
			return
		}
		out := map[string][]anarchon.RunRecord{}
		for _, job := range []string{"leased", "plain"} {
			var recs []anarchon.RunRecord
			err := retry(func() (err error) {
				recs, err = b.History(ctx, job, 0)
				return err
			})
			if err != nil {
				ch <- answer{err: fmt.Errorf("history of %s: %w", job, err)}
				return
			}
			out[job] = recs
		}
		ch <- answer{hist: out}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Errorf("%s: %v; checking the ledger only", h.st.name, a.err)
		}
		return a.hist
	case <-time.After(time.Minute):
		t.Errorf("%s: History did not return within a minute (its context had a 30 s deadline); checking the ledger only", h.st.name)
		return nil
	}
}

// runStore runs the harness against st and reports.
func runStore(t *testing.T, st store) {
	cfg := loadConfig(t)
	h := newHarness(t, cfg, st)
	rep := h.run()
	text := rep.String()
	t.Logf("%s mode, %v of faults, %d instances, leased every %v (lease %v, work %v), plain every %v\n%s",
		map[bool]string{false: "CI", true: "soak"}[cfg.soak], cfg.duration, cfg.instances,
		cfg.interval, cfg.lease, cfg.work, cfg.plainInterval, text)
	appendReport(st.name, fmt.Sprintf("%s mode %v\n%s\n", map[bool]string{false: "CI", true: "soak"}[cfg.soak], cfg.duration, text))
	failViolations(t, rep)
	if !strings.Contains(text, "backend") {
		t.Fatal("empty report")
	}
}

// appendReport appends a line with the time and text to
// <ANARCHON_FAULTS_REPORT>/<name>.txt, when that variable is set.
func appendReport(name, text string) {
	dir := os.Getenv("ANARCHON_FAULTS_REPORT")
	if dir == "" {
		return
	}
	_ = os.MkdirAll(dir, 0o755)
	f, err := os.OpenFile(filepath.Join(dir, name+".txt"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, _ = fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.RFC3339), strings.TrimRight(text, "\n"))
		f.Close()
	}
}

// keepFiles copies the named files of dir (paths under it; "/" becomes
// "-") to a new directory <ANARCHON_FAULTS_KEEP>/<prefix>-<time>, when
// that variable is set.
func keepFiles(prefix, dir string, names ...string) {
	keep := os.Getenv("ANARCHON_FAULTS_KEEP")
	if keep == "" {
		return
	}
	dst := filepath.Join(keep, prefix+"-"+time.Now().Format("150405"))
	_ = os.MkdirAll(dst, 0o755)
	for _, name := range names {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			_ = os.WriteFile(filepath.Join(dst, strings.ReplaceAll(name, "/", "-")), b, 0o644)
		}
	}
}

// failViolations fails the test with each of the report's violations (the
// first 30, then their count).
func failViolations(t *testing.T, rep faults.Report) {
	t.Helper()
	for i, v := range rep.Violations {
		if i == 30 {
			t.Errorf("… and %d more", len(rep.Violations)-i)
			return
		}
		t.Error(v)
	}
}
