package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/anarchon/anarchon"
)

// runFlags are the flags of "anarchon run".
type runFlags struct {
	http         string
	stopTimeout  time.Duration
	startTimeout time.Duration
	killGrace    time.Duration
	clockOffset  string
	poll         time.Duration
	subreaper    bool
	registryTTL  time.Duration
	watch        time.Duration // --watch: reload when the job files change, checked this often; 0 off

	statusOutput  bool   // --status-output: /status includes output tails
	httpTokenFile string // --http-token-file: bearer token for /status and /metrics
}

// daemon is a scheduler with its store, jobs and metrics.
type daemon struct {
	log      *slog.Logger
	backend  anarchon.Backend
	sched    *anarchon.Scheduler
	reboot   *anarchon.Scheduler // @reboot jobs: never started, RunNow runs each once at start
	jobs     []*jobSpec
	metrics  *metrics
	exec     *executor
	store    string // redacted store URL
	rawStore string // the store URL as given, only to scrub error texts of it
	instance string
	outcomes *outcomes

	rebootWG     sync.WaitGroup
	rebootCancel context.CancelFunc

	jobsMu sync.Mutex // guards jobs, which a reload replaces
	reload sync.Mutex // one reload at a time
}

// jobList returns the current job specs (a reload replaces the list).
func (d *daemon) jobList() []*jobSpec {
	d.jobsMu.Lock()
	defer d.jobsMu.Unlock()
	return d.jobs
}

// observe is the schedulers' OnEvent: metrics and outcome logs. A run's
// end is counted last, after its outcome line, for stop's wait.
func (d *daemon) observe(e anarchon.Event) {
	d.metrics.observe(e)
	if d.outcomes != nil {
		d.outcomes.observe(e)
	}
	if e.Kind == anarchon.EventRunEnd && d.exec != nil {
		d.exec.settled()
	}
}

// schedFor returns the scheduler that holds the named job.
func (d *daemon) schedFor(name string) *anarchon.Scheduler {
	for _, j := range d.jobList() {
		if j.Name == name && j.Reboot {
			return d.reboot
		}
	}
	return d.sched
}

// startReboot runs every @reboot job once, now, on this replica (SPEC:
// @reboot is per replica start; the run is recorded as a manual run).
func (d *daemon) startReboot() {
	ctx, cancel := context.WithCancel(context.Background())
	d.rebootCancel = cancel
	for _, j := range d.jobList() {
		if !j.Reboot {
			continue
		}
		d.rebootWG.Add(1)
		go func() {
			defer d.rebootWG.Done()
			if _, err := d.reboot.RunNow(ctx, j.Name); err != nil {
				d.log.Error("@reboot job not run", slog.String("job", j.Name), slog.Any("error", err))
			}
		}()
	}
}

// stopReboot waits for @reboot jobs until ctx ends, then stops them.
func (d *daemon) stopReboot(ctx context.Context) {
	if d.rebootCancel == nil {
		return
	}
	done := make(chan struct{})
	go func() { d.rebootWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		d.rebootCancel()
		<-done
	}
	d.rebootCancel()
}

// openDaemon loads the jobs, opens the store and registers every job on a
// new scheduler. Job mistakes come back as one error listing them all.
func openDaemon(g *globalFlags, log *slog.Logger, warnAt slog.Level, clock anarchon.Clock, poll, grace, registryTTL time.Duration) (*daemon, error) {
	src := g.sources()
	if src.empty() {
		return nil, usageError{codeBadFlag, errors.New("no jobs: give --crontab FILE, --crontab-dir DIR or --config FILE")}
	}
	jobs, all, _ := src.load()
	errs, warns := splitWarnings(all)
	// Warnings first, also when mistakes stop the start: a file skipped
	// for its name may be why a job is missing or defined twice. They
	// are logged at warnAt: WARN for "run"; DEBUG for the commands that
	// read the files only to know the jobs (history, status, run-now,
	// pause, resume, trigger, backfill), which would repeat them at every
	// call.
	for _, w := range warns {
		log.Log(context.Background(), warnAt, w.Error())
	}
	if len(errs) > 0 {
		// Every mistake at once, as validate lists them: those of the
		// lines that parsed (a duplicate name, a bad duration) too.
		more, _ := splitWarnings(checkJobs(jobs))
		errs = append(errs, more...)
		sortByPosition(errs)
		return nil, joinErrors(errs)
	}
	if len(jobs) == 0 {
		return nil, errNoJobs
	}
	// Jobs the scheduler refuses leave no new SQLite file behind.
	undo := sqliteUndo(storeOrDefault(g.store))
	backend, err := openStoreMode(g.store, g.mustExist)
	if err != nil {
		return nil, err
	}
	instance := g.instance
	if instance == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "anarchon"
		}
		instance = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	d := &daemon{
		log:      log,
		backend:  backend,
		metrics:  newMetrics(),
		store:    redact(storeOrDefault(g.store)),
		rawStore: g.store,
		instance: instance,
	}
	d.exec = &executor{log: log, instance: instance, grace: grace, out: g.output, passSecrets: g.passSecrets, maxLogBytes: g.maxLogBytes}
	d.outcomes = newOutcomes(log, instance, d.exec)
	d.outcomes.history = backend.History
	d.exec.running = func(job string, delta float64) { d.metrics.running.WithLabelValues(job).Add(delta) }
	opts := &anarchon.Options{
		InstanceID:   instance,
		Logger:       slog.New(withoutEventLines{log.Handler()}),
		Clock:        clock,
		PollInterval: poll,
		RegistryTTL:  registryTTL,
		OnEvent:      d.observe,
		Tracer:       otelTracer(log, instance),
	}
	d.sched = anarchon.New(backend, opts)
	d.reboot = anarchon.New(backend, opts)
	// A warning (a one-off job whose time has passed) leaves its job out
	// and the others run: the file stays loadable, as validate says.
	errs, warns = splitWarnings(register(d.sched, d.reboot, jobs, d.exec.handler))
	if len(errs) > 0 {
		_ = backend.Close(context.Background())
		undo()
		return nil, joinErrors(errs)
	}
	for _, w := range warns {
		log.Warn(w.Error())
	}
	d.jobs = withoutUnscheduled(jobs, warns)
	d.metrics.initJobs(d.jobs)
	return d, nil
}

func storeOrDefault(s string) string {
	if s == "" {
		return defaultStore
	}
	return s
}

// close closes the store.
func (d *daemon) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.backend.Close(ctx); err != nil {
		d.log.Warn("closing the store", slog.Any("error", err))
	}
}

// joinErrors makes one error of job mistakes, one per line.
func joinErrors(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return &listError{errs: errs, msg: strings.Join(msgs, "\n")}
}

// listError is several mistakes, one per line.
type listError struct {
	errs []error
	msg  string
}

func (e *listError) Error() string   { return e.msg }
func (e *listError) Unwrap() []error { return e.errs }

// checkRunFlags refuses, as a usage error (exit 2) naming the flag, a
// duration or size "run" cannot mean: a negative one, and a zero one
// where 0 has no meaning (--poll, --registry-ttl). A zero --stop-timeout
// hands running jobs over at once, a zero --kill-grace sends SIGKILL
// with SIGTERM, a zero --watch reloads only on SIGHUP and a zero
// --max-log-bytes logs all output, as the README says. The HTTP
// endpoint's own flags (--http-token-file, --status-output) without
// --http are refused too.
func checkRunFlags(g *globalFlags, rf *runFlags) error {
	for _, d := range []struct {
		name     string
		v        time.Duration
		positive bool
	}{
		{"--stop-timeout", rf.stopTimeout, false},
		{"--start-timeout", rf.startTimeout, false},
		{"--kill-grace", rf.killGrace, false},
		{"--poll", rf.poll, true},
		{"--registry-ttl", rf.registryTTL, true},
		{"--watch", rf.watch, false},
	} {
		switch {
		case d.positive && d.v <= 0:
			return usageError{codeBadFlag, fmt.Errorf("%s %v: must be positive", d.name, d.v)}
		case d.v < 0:
			return usageError{codeBadFlag, fmt.Errorf("%s %v: must not be negative", d.name, d.v)}
		}
	}
	if g.maxLogBytes < 0 {
		return usageError{codeBadFlag, fmt.Errorf("--max-log-bytes %d: must not be negative (0: no bound)", g.maxLogBytes)}
	}
	// Flags of the HTTP endpoint without the endpoint would be dropped
	// unread: an operator who set a token believes /status is guarded
	// somewhere, so the line is refused instead.
	if rf.http == "" {
		switch {
		case rf.httpTokenFile != "":
			return usageError{codeBadFlag, errors.New("--http-token-file has no effect without --http ADDR")}
		case rf.statusOutput:
			return usageError{codeBadFlag, errors.New("--status-output has no effect without --http ADDR")}
		}
	}
	return nil
}

// run is "anarchon run": start, print the summary, serve HTTP, and stop
// gracefully on SIGTERM or SIGINT (a second signal exits at once).
func run(g *globalFlags, rf *runFlags, stdout io.Writer, log *slog.Logger) error {
	if err := checkRunFlags(g, rf); err != nil {
		return err
	}
	var clock anarchon.Clock = anarchon.SystemClock{}
	if offset := rf.clockOffset; offset != "" { // --clock-offset or ANARCHON_CLOCK_OFFSET (applyEnv)
		off, err := time.ParseDuration(offset)
		if err != nil {
			return fmt.Errorf("clock offset %q is not a Go duration", offset)
		}
		clock = anarchon.OffsetClock{Offset: off}
		log.Warn("clock shifted for fault injection", slog.Duration("offset", off))
	}
	// The HTTP configuration is checked, and its port bound, before the
	// scheduler starts: a mistake there must not leave an instance record
	// in the store or @reboot jobs run.
	var addr string
	var hc httpConfig
	if rf.http != "" {
		a, err := httpAddr(rf.http)
		if err != nil {
			return usageError{codeBadFlag, err}
		}
		addr = a
		if hc, err = httpConfigFrom(rf, addr); err != nil {
			if isNoFile(err) {
				return err // a file that cannot be read, as --crontab's
			}
			return usageError{codeBadFlag, err}
		}
		if hc.locked {
			log.Warn("--http binds beyond loopback without a token: /status, /metrics and /ui/ answer 403; /healthz and /readyz stay open. "+
				"Set --http-token-file or ANARCHON_UI_TOKEN (at least 16 characters) to open them", slog.String("addr", addr))
		}
	}

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP) // reload the job files
	defer signal.Stop(hups)

	waitForStore.Store(rf.startTimeout > 0)
	defer waitForStore.Store(false)
	// The clients' lines wait for the start's outcome: a failed start's
	// error (or WARN before a retry) says what they would.
	endHold := holdClientLines()
	started := false
	defer func() {
		if !started {
			endHold(false)
		}
	}()
	// The address is bound before the store is opened: a port in use
	// ends the command before it creates a store (an SQLite file).
	var srv *server
	if addr != "" {
		var err error
		if srv, err = listenHTTP(nil, addr, hc); err != nil {
			return codedError{codeListenFailed, fmt.Errorf("--http %q: %w", rf.http, err)}
		}
		// Closed by srv.close at the end of a clean run; this closes the
		// listener on every earlier return.
		defer func() { _ = srv.ln.Close() }()
	}
	// --start-timeout counts from the store's open: a NATS client that
	// keeps connecting in the background spends its first attempt there
	// (seconds against a port that never greets it), which a count from
	// the first start would add to the timeout.
	opened := time.Now()
	d, err := openDaemon(g, log, slog.LevelWarn, clock, rf.poll, rf.killGrace, rf.registryTTL)
	if err != nil {
		return err
	}
	defer d.close()
	if srv != nil {
		srv.d = d
	}
	stopReaper, err := startReaper(log, rf.subreaper)
	if err != nil {
		return err
	}
	if stopReaper != nil {
		defer stopReaper()
	}
	defer otelShutdown()

	sig, err := startScheduler(d.sched, sigs, max(rf.startTimeout-time.Since(opened), 0), func(err error, wait time.Duration) {
		clientLines.discard()
		log.Warn("the store is not ready; starting again", slog.String("error", scrub(err.Error(), storeOrDefault(g.store))),
			slog.Duration("retry_in", wait), slog.Duration("start_timeout", rf.startTimeout))
	})
	if err != nil {
		if errors.Is(err, errInterrupted) {
			return err
		}
		// The store's failure, coded open_failed as the other commands
		// report it, the URL redacted and the text scrubbed.
		return storeErrorFor(err, storeOrDefault(g.store), false)
	}
	endHold(true)
	started = true
	if sig != nil {
		// The signal came as the start ended: stop as below, without
		// starting what a running daemon would.
		log.Info("stopping", slog.String("signal", sig.String()), slog.Duration("stop_timeout", rf.stopTimeout))
		go d.exitOnSignal(sigs, sig, time.Now())
		d.stop(rf.stopTimeout)
		log.Info("stopped")
		return nil
	}
	d.metrics.offset.Set(d.sched.ClockOffset().Seconds())
	d.startReboot()
	refreshDone := make(chan struct{})
	defer close(refreshDone)
	go d.refreshMetrics(refreshDone)

	if srv != nil {
		srv.serve(addr)
		log.Info("http listening", slog.String("addr", srv.ln.Addr().String()))
	}
	if strings.EqualFold(g.logFormat, "json") {
		d.logSummary(srv)
	} else {
		// Below INFO the header stays (its "jobs:" line says the start
		// is done) and the jobs' lines go, as the JSON summary, an INFO
		// record, goes whole.
		d.summary(stdout, srv, d.log.Enabled(context.Background(), slog.LevelInfo))
	}

	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	if rf.watch > 0 {
		go d.watchFiles(watchCtx, g.sources(), rf.watch)
	}
	for sig == nil {
		select {
		case sig = <-sigs:
		case <-hups:
			res, err := d.reloadFrom(g.sources())
			d.logReload("SIGHUP", res, err)
		}
	}
	stopWatch()
	log.Info("stopping", slog.String("signal", sig.String()), slog.Duration("stop_timeout", rf.stopTimeout))
	go d.exitOnSignal(sigs, sig, time.Now())
	d.stop(rf.stopTimeout)
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		srv.close(ctx)
		cancel()
	}
	log.Info("stopped")
	return nil
}

// echoWindow is how soon after the signal that stops the daemon the same
// signal again is taken as the same one: GNU timeout, and other tools
// that stop a command, send it to the command and then to its process
// group, which the command is in, so the daemon may receive it twice
// within microseconds. A person's second Ctrl-C comes later.
const echoWindow = 250 * time.Millisecond

// secondSignal returns the first signal from sigs that is not first's
// echo.
func secondSignal(sigs <-chan os.Signal, first os.Signal, at time.Time) os.Signal {
	for {
		if s := <-sigs; !echo(s, first, at) {
			return s
		}
	}
}

// echo reports whether s is first again within echoWindow of at, when
// first came.
func echo(s, first os.Signal, at time.Time) bool {
	return s == first && time.Since(at) < echoWindow
}

// exitOnSignal waits for a second signal while the daemon stops, then
// kills the running commands and exits at once.
func (d *daemon) exitOnSignal(sigs <-chan os.Signal, first os.Signal, at time.Time) {
	s := secondSignal(sigs, first, at)
	d.log.Error("second signal: killing running commands and exiting at once", slog.String("signal", s.String()))
	d.exec.killAll()
	os.Exit(128 + int(s.(syscall.Signal)))
}

// starter is the part of *anarchon.Scheduler that startScheduler uses.
type starter interface {
	Start(ctx context.Context) error
}

// startScheduler starts s; a signal from sigs during the start cancels its
// context. A start that failed with a transient error (the store
// unreachable, a replicated bucket still being created, a leader being
// elected: anything not marked anarchon.Permanent) is made again after a
// pause, 1 s doubling to startRetryMax, until retryFor has passed (the
// last start made at retryFor), retrying called before each pause; 0 gives up at the first error. A
// start that failed, cut short or not, is an error. A start that succeeded
// all the same (Scheduler.Start returns nil once the store took the jobs)
// returns the signal: the scheduler runs, its first slots may be being
// claimed and started, and the caller must stop it as on any shutdown,
// draining them, not exit past them.
func startScheduler(s starter, sigs <-chan os.Signal, retryFor time.Duration, retrying func(err error, wait time.Duration)) (os.Signal, error) {
	startCtx, cancelStart := context.WithCancel(context.Background())
	got := make(chan os.Signal, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case sig := <-sigs:
			got <- sig
			cancelStart()
		case <-startCtx.Done():
		}
	}()
	err := startRetrying(startCtx, s, retryFor, retrying)
	cancelStart()
	<-done // got holds the signal if the goroutine took one
	var sig os.Signal
	select {
	case sig = <-got:
	default:
	}
	switch {
	case err != nil && sig != nil:
		return nil, errInterrupted
	case err != nil:
		return nil, fmt.Errorf("start: %w", err)
	}
	return sig, nil
}

// errInterrupted is startScheduler's error for a start that a signal cut
// short.
var errInterrupted = errors.New("interrupted while starting")

// startRetryMax is the longest pause between two starts.
const startRetryMax = 8 * time.Second

// startRetrying is startScheduler's loop: Start until it succeeds, fails
// permanently, ctx ends, or retryFor has passed; the last pause is cut
// short so that the last start is made at retryFor. Scheduler.Start may
// be called again after its store calls failed.
func startRetrying(ctx context.Context, s starter, retryFor time.Duration, retrying func(err error, wait time.Duration)) error {
	giveUp := time.Now().Add(retryFor)
	wait := time.Second
	for {
		err := s.Start(ctx)
		left := time.Until(giveUp)
		if err == nil || anarchon.IsPermanent(err) || errors.Is(err, anarchon.ErrStarted) || ctx.Err() != nil || left <= 0 {
			return err
		}
		pause := min(wait, left)
		retrying(err, pause)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, startRetryMax)
	}
}

// metricsRefresh is how often the job timestamps and the registry gauges
// in /metrics are read again from the store.
const metricsRefresh = 15 * time.Second

// refreshMetrics reads the per-job timestamps and the registry of
// instances from the store now and every metricsRefresh until done is
// closed; the registry also at once when the scheduler reports a change of
// job-set differences.
func (d *daemon) refreshMetrics(done <-chan struct{}) {
	t := time.NewTicker(metricsRefresh)
	defer t.Stop()
	all := true
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if all {
			d.metrics.refreshFromStore(ctx, d)
		}
		d.metrics.refreshReplicas(ctx, d.sched)
		cancel()
		select {
		case <-done:
			return
		case <-t.C:
			all = true
		case <-d.metrics.kick:
			all = false
		}
	}
}

// stop stops the scheduler with a grace period, then waits for the
// commands it had to cancel to be killed and their ends logged.
func (d *daemon) stop(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := d.sched.Stop(ctx); err != nil {
		d.log.Warn("stop deadline passed: running jobs were stopped, leased ones handed over to standing-by replicas and manual ones recorded as errors", slog.Any("error", err))
	}
	d.stopReboot(ctx)
	d.exec.wait(d.exec.grace + 2*time.Second)
}

// summary prints the store, the instance and, with perJob, each job with
// its next slots.
func (d *daemon) summary(w io.Writer, srv *server, perJob bool) {
	fmt.Fprintf(w, "anarchon %s\n", version())
	// The values start in one column, after the longest label present
	// ("replication:" only for a store that reports it).
	hw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(hw, "store:\t%s (%s)\n", d.store, d.backend.Name())
	if r := storeReplication(d.backend); r != "" {
		fmt.Fprintf(hw, "replication:\t%s\n", r)
	}
	fmt.Fprintf(hw, "instance:\t%s\n", d.instance)
	if srv != nil {
		fmt.Fprintf(hw, "http:\thttp://%s\n", srv.ln.Addr())
	}
	fmt.Fprintf(hw, "jobs:\t%d\n", len(d.jobList()))
	_ = hw.Flush()
	if !perJob {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, j := range d.jobList() {
		next := "at start"
		if !j.Reboot {
			slots, _ := d.sched.NextSlots(j.Name, time.Time{}, 3)
			next = strings.Join(formatIn(slots, j.Zone), ", ")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\tnext: %s\n", shortCell(j.Name), shortCell(j.Schedule), zoneName(j.Zone), next)
	}
	_ = tw.Flush()
}

// summaryCell is the widest name or schedule the start summary prints
// whole, in runes: a longer one would widen every row of the table.
const summaryCell = 48

// shortCell cuts s to summaryCell runes, the last an ellipsis, for the
// start summary; status and --json print it whole.
func shortCell(s string) string {
	if utf8.RuneCountInString(s) <= summaryCell {
		return s
	}
	r := []rune(s)
	return string(r[:summaryCell-1]) + "…"
}

// logSummary is the summary as one log record, for --log-format json.
func (d *daemon) logSummary(srv *server) {
	type jobJSON struct {
		Name     string   `json:"name"`
		Schedule string   `json:"schedule"`
		Zone     string   `json:"zone"`
		User     string   `json:"user,omitempty"`
		Next     []string `json:"next"`
	}
	jobs := make([]jobJSON, 0, len(d.jobList()))
	for _, j := range d.jobList() {
		jj := jobJSON{Name: j.Name, Schedule: j.Schedule, Zone: zoneName(j.Zone), User: j.User, Next: []string{}}
		if !j.Reboot {
			slots, _ := d.sched.NextSlots(j.Name, time.Time{}, 3)
			jj.Next = formatIn(slots, j.Zone)
		}
		jobs = append(jobs, jj)
	}
	attrs := []any{slog.String("version", version()), slog.String("store", d.store), slog.String("backend", d.backend.Name()),
		slog.String("instance", d.instance)}
	if r := storeReplication(d.backend); r != "" {
		attrs = append(attrs, slog.String("replication", r))
	}
	if srv != nil {
		attrs = append(attrs, slog.String("http", "http://"+srv.ln.Addr().String()))
	}
	d.log.Info("started", append(attrs, slog.Any("jobs", jobs))...)
}

func zoneName(z string) string {
	if z == "" {
		return "UTC"
	}
	return z
}

// formatIn renders instants as RFC 3339 in zone (UTC if "" or unknown).
func formatIn(ts []time.Time, zone string) []string {
	loc, err := anarchon.LoadLocation(zoneName(zone))
	if err != nil {
		loc = time.UTC
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.In(loc).Format(time.RFC3339Nano)
	}
	return out
}

// statusReport is what "anarchon status --json" and /status return.
type statusReport struct {
	Store    string `json:"store"`
	Backend  string `json:"backend"`
	Instance string `json:"instance,omitempty"`
	Time     string `json:"time"`
	// Replication describes the store's replication as the backend found
	// it at Init (PostgreSQL: topology, synchronous_commit, standbys,
	// "unsafe" when a failover can lose claims); "" when the store does
	// not report it.
	Replication string      `json:"replication,omitempty"`
	Jobs        []jobStatus `json:"jobs"`
	// Replicas are the instances of the store's registry, live, dead and
	// stopped; DifferingJobs names the jobs whose definitions differ
	// between live replicas. ReplicasError says why the registry could
	// not be read.
	Replicas      []replicaJSON `json:"replicas"`
	DifferingJobs []string      `json:"differing_jobs"`
	ReplicasError string        `json:"replicas_error,omitempty"`
	// Paused lists the jobs paused in the store, with who paused them,
	// when and why (every job of the store, not only the given files').
	Paused      []stateJSON `json:"paused"`
	PausedError string      `json:"paused_error,omitempty"`
	// PendingTriggers lists the trigger requests no replica has taken yet
	// (every job of the store), oldest first; a stuck one names a job no
	// live replica has. TriggersError says why they could not be read.
	PendingTriggers []pendingTriggerJSON `json:"pending_triggers"`
	TriggersError   string               `json:"triggers_error,omitempty"`
}

// pendingTriggerJSON is a trigger request no replica has taken yet.
type pendingTriggerJSON struct {
	Job         string `json:"job"`
	Key         string `json:"key"`
	By          string `json:"by"`
	RequestedAt string `json:"requested_at"`
}

type jobStatus struct {
	Name     string       `json:"name"`
	Schedule string       `json:"schedule"`
	Zone     string       `json:"zone"`
	Next     []string     `json:"next"`
	Active   []activeJSON `json:"active"`
	Last     *recordJSON  `json:"last"`
	// LastRun is the newest record of a slot that ran (or runs), when
	// Last is one not run (missed, skipped, paused): among the newest
	// statusRecords, read only then; absent when Last ran or none of
	// those did.
	LastRun *recordJSON `json:"last_run,omitempty"`
	Error   string      `json:"error,omitempty"`
}

// statusRecords is how many of a job's newest records status reads to
// find its last run behind slots not run.
const statusRecords = 20

type activeJSON struct {
	Slot       string `json:"slot"`
	Instance   string `json:"instance"`
	Attempt    int    `json:"attempt"`
	State      string `json:"state"`
	LeaseUntil string `json:"lease_until"`
	Live       bool   `json:"live"`
	// HolderState is the holder's state in the instance registry (live,
	// dead or stopped); "" when the registry does not list it. A live
	// lease with a dead holder is one a backup will take over once it
	// expires.
	HolderState string `json:"holder_state,omitempty"`
	// RetryDue is, for State stateRetryWait, when the next attempt is
	// due: the end of the lease the failed attempt kept for its backoff
	// (store clock), from which any replica's claim takes the slot.
	RetryDue string `json:"retry_due,omitempty"`
}

// stateRetryWait is the State status gives an active run that waits out
// its retry backoff: its attempt failed and a further attempt is to run
// (retry:). The store holds it as running, under the failed attempt's
// token, until the backoff ends, so that no claim takes the slot before;
// the history tells it apart, with the attempt's error stored under that
// token.
const stateRetryWait = "retry_wait"

// retryWait reports whether the active run a waits for its retry: its
// token's record among recs is the failed attempt's error. A run whose
// failure is not retried is settled before its error is stored, or in the
// same step, and is no longer active.
func retryWait(a anarchon.ActiveRun, recs []anarchon.RunRecord) bool {
	if a.State != anarchon.RunStateRunning {
		return false
	}
	for _, r := range recs {
		if r.Token == a.Token {
			return r.Status == anarchon.StatusError
		}
	}
	return false
}

// status reads the replicas from the store's instance registry, and each
// job's next slots, active leases (when the store has a RunStore) and last
// result.
func (d *daemon) status(ctx context.Context) statusReport {
	rep := statusReport{Store: d.store, Backend: d.backend.Name(), Instance: d.instance, Time: formatTime(time.Now()),
		Replication: storeReplication(d.backend), Replicas: []replicaJSON{}, DifferingJobs: []string{}, Jobs: []jobStatus{}}
	replicas := addReplicas(ctx, d.backend, &rep)
	rep.Paused = []stateJSON{}
	if jc, ok := anarchon.As[anarchon.JobControl](d.backend); ok {
		states, err := jc.JobStates(ctx)
		if err != nil {
			rep.PausedError = err.Error()
		}
		for _, st := range states {
			if st.Paused {
				rep.Paused = append(rep.Paused, toStateJSON(st))
			}
		}
	}
	rep.PendingTriggers = []pendingTriggerJSON{}
	if ts, ok := anarchon.As[anarchon.TriggerStore](d.backend); ok {
		pending, err := ts.PendingTriggers(ctx)
		if err != nil {
			rep.TriggersError = err.Error()
		}
		for _, p := range pending {
			rep.PendingTriggers = append(rep.PendingTriggers, pendingTriggerJSON{Job: p.Job, Key: p.Key, By: p.By, RequestedAt: formatTime(p.RequestedAt)})
		}
	}
	var runs anarchon.RunStore
	if lb, ok := anarchon.As[anarchon.LeaseBackend](d.backend); ok {
		runs = lb.Runs()
	}
	for _, j := range d.jobList() {
		js := jobStatus{Name: j.Name, Schedule: j.Schedule, Zone: zoneName(j.Zone), Active: []activeJSON{}}
		js.Next = []string{}
		if !j.Reboot {
			next, _ := d.sched.NextSlots(j.Name, time.Time{}, 3)
			js.Next = formatIn(next, j.Zone)
		}
		var errs []string
		var act []anarchon.ActiveRun
		if runs != nil {
			var err error
			if act, err = runs.Active(ctx, j.Name); err != nil {
				errs = append(errs, "active: "+err.Error())
			}
		}
		// A running lease may be a failed attempt's, kept for its retry
		// backoff: its record tells (retryWait), so the newest records
		// are read then.
		limit := 1
		if slices.ContainsFunc(act, func(a anarchon.ActiveRun) bool { return a.State == anarchon.RunStateRunning }) {
			limit = statusRecords
		}
		recs, err := d.backend.History(ctx, j.Name, limit)
		if err == nil && limit == 1 && len(recs) == 1 && recs[0].Status.NotRun() {
			// Only then are older records read, for the last run.
			recs, err = d.backend.History(ctx, j.Name, statusRecords)
		}
		for _, a := range act {
			aj := activeJSON{
				Slot: formatTime(time.UnixMilli(a.Slot)), Instance: a.InstanceID, Attempt: a.Attempt,
				State: string(a.State), LeaseUntil: formatTime(a.LeaseUntil), Live: a.Live,
				HolderState: replicas.holderState(a.InstanceID),
			}
			if err == nil && retryWait(a, recs) {
				aj.State, aj.RetryDue = stateRetryWait, aj.LeaseUntil
			}
			js.Active = append(js.Active, aj)
		}
		if err != nil {
			errs = append(errs, "history: "+err.Error())
		} else if len(recs) > 0 {
			r := toJSON(recs[0])
			r.InstanceGone = replicas.runGone(recs[0])
			js.Last = &r
			for _, rec := range recs[1:] {
				if recs[0].Status.NotRun() && !rec.Status.NotRun() {
					lr := toJSON(rec)
					lr.InstanceGone = replicas.runGone(rec)
					js.LastRun = &lr
					break
				}
			}
		}
		js.Error = strings.Join(errs, "; ")
		rep.Jobs = append(rep.Jobs, js)
	}
	return rep
}

// recordJSON is one history record as "history --json" prints it.
type recordJSON struct {
	Job        string  `json:"job"`
	Slot       string  `json:"slot"`
	Instance   string  `json:"instance"`
	Attempt    int     `json:"attempt"`
	Status     string  `json:"status"`
	StartedAt  *string `json:"started_at"`
	FinishedAt *string `json:"finished_at"`
	ClaimedAt  *string `json:"claimed_at"`
	Error      string  `json:"error"`
	Manual     bool    `json:"manual"`
	Output     string  `json:"output,omitempty"`
	// InstanceGone (history and status) says why a running record's
	// instance, gone by the registry, will not record its end (runGone).
	InstanceGone string `json:"instance_gone,omitempty"`
}

func toJSON(r anarchon.RunRecord) recordJSON {
	opt := func(t time.Time) *string {
		if t.IsZero() {
			return nil
		}
		s := formatTime(t)
		return &s
	}
	return recordJSON{
		Job: r.Job, Slot: formatTime(r.Slot), Instance: r.InstanceID, Attempt: r.Attempt,
		Status: string(r.Status), ClaimedAt: opt(r.ClaimedAt), StartedAt: opt(r.StartedAt), FinishedAt: opt(r.FinishedAt),
		Error: r.Error, Manual: r.Manual, Output: r.Output,
	}
}

// timeLayout is RFC 3339 in UTC with exactly three fraction digits.
const timeLayout = "2006-01-02T15:04:05.000Z"

// formatTime is how history, status (and /status), pause and resume show
// an instant, a slot included: RFC 3339 in UTC to the millisecond with
// exactly three fraction digits, zeros kept (2026-12-02T09:18:59.000Z),
// so that the strings sort in time order; "" for the zero time. Stores
// keep times to the millisecond (SQL) or to the nanosecond (NATS, Redis
// for a run's start): they are shown alike, the rest cut off.
// ANARCHON_SLOT and log lines give a slot as formatSlot does.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}
