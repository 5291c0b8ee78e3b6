package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchonui"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// metrics are the daemon's Prometheus metrics, fed by the scheduler's
// events (anarchon.Options.OnEvent).
type metrics struct {
	reg       *prometheus.Registry
	claims    *prometheus.CounterVec
	runs      *prometheus.CounterVec
	skipped   *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	lateness  *prometheus.HistogramVec
	storeErrs *prometheus.CounterVec
	offset    prometheus.Gauge
	running   *prometheus.GaugeVec
	lastOK    *prometheus.GaugeVec
	lastFail  *prometheus.GaugeVec
	nextSlot  *prometheus.GaugeVec
	build     *prometheus.GaugeVec

	instances *prometheus.GaugeVec // by state, from the store's registry
	mismatch  prometheus.Gauge     // live instances whose job set differs from the reference
	differs   *prometheus.GaugeVec // by job: 1 if its definition differs between live instances
	seenJobs  map[string]bool      // the job labels of differs, each set at every refresh; used by refreshReplicas only
	kick      chan struct{}        // asks the refresh loop for an early refresh (buffer of one)
}

// newMetrics registers the metrics on a fresh registry, with the Go and
// process collectors.
func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anarchon_claims_total",
			Help: "Claims answered by the store, by job and outcome: won (this instance holds the slot: it runs it, or records it missed when it finds the win past max_late), lost (another instance won a plain claim), " +
				"running (another instance holds a live lease; this one stands by as a backup), done (the slot is already settled: finished or abandoned), " +
				"overlap (a previous slot still runs; this one is skipped), none (the slot was already missed or skipped), late (too late: the slot is now missed), " +
				"paused (the job is paused: the slot is settled paused, not run).",
		}, []string{"job", "outcome"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anarchon_runs_total",
			Help: "Runs this instance executed, by job and status.",
		}, []string{"job", "status"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anarchon_slots_skipped_total",
			Help: "Slots not run, by job and status (missed, skipped, abandoned, paused).",
		}, []string{"job", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "anarchon_run_duration_seconds",
			Help:    "How long a job's command ran, in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10),
		}, []string{"job"}),
		lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "anarchon_slot_lateness_seconds",
			Help:    "How late after its slot a run started (its winning claim was answered), by the store's clock, in seconds.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"job"}),
		storeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anarchon_store_errors_total",
			Help: "Failed store calls, by operation (Claim, SaveResult, Heartbeat, …).",
		}, []string{"op"}),
		offset: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "anarchon_clock_offset_seconds",
			Help: "The store's clock minus this instance's clock, in seconds (positive: the store is ahead).",
		}),
	}
	m.running = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "anarchon_jobs_running",
		Help: "Commands this instance is running now, by job.",
	}, []string{"job"})
	m.lastOK = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "anarchon_job_last_success_timestamp_seconds",
		Help: "When the job's last successful run finished on any instance (Unix seconds, from the store's history; 0: none recorded).",
	}, []string{"job"})
	m.lastFail = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "anarchon_job_last_failure_timestamp_seconds",
		Help: "When the job's last failed run (error, lease_lost, abandoned, unconfirmed) finished on any instance (Unix seconds, from the store's history; 0: none recorded).",
	}, []string{"job"})
	m.nextSlot = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "anarchon_job_next_slot_timestamp_seconds",
		Help: "The job's next scheduled slot (Unix seconds); the same on every instance with the same job file.",
	}, []string{"job"})
	m.build = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "anarchon_build_info",
		Help: "Always 1; the labels say which anarchon build this instance runs.",
	}, []string{"version", "goversion"})
	m.build.WithLabelValues(version(), runtime.Version()).Set(1)
	m.instances = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "anarchon_instances",
		Help: "Instances in the store's registry, by state: live (renewed within its TTL), dead (not renewed within its TTL: killed or cut off), " +
			"stopped (stopped cleanly). Read from the store, so the same on every instance.",
	}, []string{"state"})
	m.mismatch = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "anarchon_job_set_mismatch",
		Help: "How many live instances run another job set than the one most live instances run (0: every live instance runs the same jobs, defined alike).",
	})
	m.differs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "anarchon_job_set_differs",
		Help: "1 if the job is defined differently on some live instances (schedule, command, user, env, options) or missing on some, else 0.",
	}, []string{"job"})
	m.seenJobs = map[string]bool{}
	m.kick = make(chan struct{}, 1)
	for _, st := range []anarchon.InstanceState{anarchon.InstanceLive, anarchon.InstanceDead, anarchon.InstanceStopped} {
		m.instances.WithLabelValues(string(st))
	}
	m.reg.MustRegister(m.claims, m.runs, m.skipped, m.duration, m.lateness, m.storeErrs, m.offset,
		m.running, m.lastOK, m.lastFail, m.nextSlot, m.build, m.instances, m.mismatch, m.differs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Label values every family starts with, at zero, so a rate() or an
// absent() alert works from the first scrape.
var (
	claimOutcomes = []string{"won", "lost", "running", "done", "overlap", "none", "late", "paused"}
	runStatuses   = []string{string(anarchon.StatusSuccess), string(anarchon.StatusError)}
	skipStatuses  = []string{string(anarchon.StatusMissed), string(anarchon.StatusSkipped), string(anarchon.StatusAbandoned), string(anarchon.StatusPaused)}
	storeOps      = []string{"Claim", "RecordClaim", "SaveResult", "Heartbeat", "Release", "RecordManualRun", "PrepareJob", "Init",
		"Instances", "RegisterInstance"}
)

// initJobs creates every labelled series of the jobs at zero.
func (m *metrics) initJobs(jobs []*jobSpec) {
	for _, j := range jobs {
		for _, o := range claimOutcomes {
			m.claims.WithLabelValues(j.Name, o)
		}
		for _, s := range runStatuses {
			m.runs.WithLabelValues(j.Name, s)
		}
		for _, s := range skipStatuses {
			m.skipped.WithLabelValues(j.Name, s)
		}
		m.running.WithLabelValues(j.Name)
		m.lastOK.WithLabelValues(j.Name)
		m.lastFail.WithLabelValues(j.Name)
		m.duration.WithLabelValues(j.Name)
		m.lateness.WithLabelValues(j.Name)
		m.differs.WithLabelValues(j.Name)
		m.seenJobs[j.Name] = true
	}
	for _, op := range storeOps {
		m.storeErrs.WithLabelValues(op)
	}
}

// refreshFromStore sets the last-success and last-failure timestamps of
// each job from the store's history, so every instance reports the same,
// and the next-slot timestamps from the schedule.
func (m *metrics) refreshFromStore(ctx context.Context, d *daemon) {
	for _, j := range d.jobList() {
		if !j.Reboot {
			if next, err := d.sched.NextSlots(j.Name, time.Time{}, 1); err == nil && len(next) == 1 {
				m.nextSlot.WithLabelValues(j.Name).Set(float64(next[0].UnixMilli()) / 1000)
			}
		}
		recs, err := d.backend.History(ctx, j.Name, historyScan)
		if err != nil {
			continue
		}
		var ok, fail time.Time
		for _, r := range recs {
			end := r.FinishedAt
			if end.IsZero() {
				continue
			}
			switch r.Status {
			case anarchon.StatusSuccess:
				if end.After(ok) {
					ok = end
				}
			case anarchon.StatusError, anarchon.StatusLeaseLost, anarchon.StatusAbandoned, anarchon.StatusUnconfirmed:
				if end.After(fail) {
					fail = end
				}
			}
		}
		setMax(m.lastOK.WithLabelValues(j.Name), ok)
		setMax(m.lastFail.WithLabelValues(j.Name), fail)
	}
}

// refreshReplicas sets the registry gauges from the store's list of
// instances. A store without a registry leaves them at zero; a failed read
// leaves them as they were. Called from one goroutine only.
func (m *metrics) refreshReplicas(ctx context.Context, s *anarchon.Scheduler) {
	recs, err := s.Instances(ctx)
	if err != nil {
		return
	}
	count := map[anarchon.InstanceState]int{}
	for _, r := range recs {
		count[r.State]++
	}
	for _, st := range []anarchon.InstanceState{anarchon.InstanceLive, anarchon.InstanceDead, anarchon.InstanceStopped} {
		m.instances.WithLabelValues(string(st)).Set(float64(count[st]))
	}
	rep := replicasOf(recs)
	m.mismatch.Set(float64(rep.Mismatched))
	differ := map[string]bool{}
	for _, j := range rep.Differing {
		differ[j] = true
		m.seenJobs[j] = true
	}
	for j := range m.seenJobs {
		v := 0.0
		if differ[j] {
			v = 1
		}
		m.differs.WithLabelValues(j).Set(v)
	}
}

// historyScan is how many recent records refreshFromStore reads per job.
const historyScan = 50

// setMax raises g to t (Unix seconds) if t is later.
func setMax(g prometheus.Gauge, t time.Time) {
	if t.IsZero() {
		return
	}
	v := float64(t.UnixMilli()) / 1000
	var cur dto.Metric
	if err := g.Write(&cur); err == nil && cur.GetGauge().GetValue() >= v {
		return
	}
	g.Set(v)
}

// observe records one scheduler event. It is quick and never calls back
// into the scheduler, as Options.OnEvent requires.
func (m *metrics) observe(e anarchon.Event) {
	switch e.Kind {
	case anarchon.EventClaim:
		m.claims.WithLabelValues(e.Job, e.Outcome).Inc()
		if e.Outcome == "won" { // when the run started, after any standing by
			m.lateness.WithLabelValues(e.Job).Observe(max(e.Lateness, 0).Seconds())
		}
	case anarchon.EventRunEnd:
		m.runs.WithLabelValues(e.Job, string(e.Status)).Inc()
		m.duration.WithLabelValues(e.Job).Observe(e.Duration.Seconds())
		end := time.Now()
		if e.Status == anarchon.StatusSuccess {
			setMax(m.lastOK.WithLabelValues(e.Job), end)
		} else {
			setMax(m.lastFail.WithLabelValues(e.Job), end)
		}
	case anarchon.EventSlotSkipped:
		m.skipped.WithLabelValues(e.Job, string(e.Status)).Inc()
	case anarchon.EventStoreError:
		m.storeErrs.WithLabelValues(e.Op).Inc()
	case anarchon.EventClockOffset:
		m.offset.Set(e.Offset.Seconds())
	case anarchon.EventJobSetMismatch:
		// The registry gauges compare every live instance, not only this
		// one with the others: read them again now rather than from the
		// event (the scheduler already logged the differences).
		if m.kick != nil {
			select {
			case m.kick <- struct{}{}:
			default: // a refresh is already due
			}
		}
	}
}

// httpAddr turns a --http value into a listen address: a bare port ("9090")
// binds loopback only, ":9090" every interface, "host:port" that host.
func httpAddr(v string) (string, error) {
	if _, err := strconv.Atoi(v); err == nil {
		if !validPort(v) {
			return "", fmt.Errorf("--http %q: a port is 0 to 65535", v)
		}
		return net.JoinHostPort("127.0.0.1", v), nil
	}
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return "", fmt.Errorf("--http %q: want PORT, :PORT or HOST:PORT", v)
	}
	if port == "" {
		// net.Listen would take any free port, but an empty port is
		// rarely meant: "127.0.0.1:$PORT" with PORT unset. A free port
		// is asked for with 0, said on purpose.
		return "", fmt.Errorf("--http %q: the port is empty: want PORT, :PORT or HOST:PORT (0 for any free port)", v)
	}
	if !validPort(port) {
		if strings.Trim(port, "0123456789") != "" {
			// A service name ("http") is what net.Listen would look up;
			// a port given here is a number.
			return "", fmt.Errorf("--http %q: the port %q is not a number (want PORT, :PORT or HOST:PORT)", v, port)
		}
		return "", fmt.Errorf("--http %q: a port is 0 to 65535", v)
	}
	return v, nil
}

// validPort reports whether p is a decimal port number, 0 to 65535 (0:
// any free port).
func validPort(p string) bool {
	n, err := strconv.ParseUint(p, 10, 16)
	return err == nil && n <= 65535
}

// server is the daemon's HTTP endpoint: /healthz, /readyz, /metrics and
// /status.
type server struct {
	d   *daemon
	srv *http.Server
	ln  net.Listener
	cfg httpConfig
}

// httpConfig is what guards the HTTP endpoint: one set of credentials,
// read once, for /status, /metrics and the dashboard.
type httpConfig struct {
	// token is the bearer token for /status and /metrics, and the
	// dashboard's token: --http-token-file's first line, else
	// ANARCHON_UI_TOKEN; "" for none.
	token string
	// user and password open the dashboard with HTTP basic authentication
	// (ANARCHON_UI_USER and ANARCHON_UI_PASSWORD).
	user, password string
	statusOutput   bool // /status includes output tails
	// locked: bound beyond loopback without a token, so /status, /metrics
	// and the dashboard answer 403 (lockedMessage); /healthz and /readyz
	// stay open for probes. The dashboard opens with a password alone.
	locked bool
}

// lockedMessage is the body of the 403 that /status, /metrics and the
// dashboard answer when --http binds beyond loopback without a token.
const lockedMessage = "anarchon: --http binds beyond loopback and no token is set, so /status, /metrics and /ui/ are closed " +
	"(/healthz and /readyz stay open). Set a bearer token of at least 16 characters with --http-token-file FILE " +
	"or the ANARCHON_UI_TOKEN environment variable, or bind 127.0.0.1.\n"

// httpConfigFrom reads the credentials: the token file, else
// ANARCHON_UI_TOKEN, and ANARCHON_UI_USER and ANARCHON_UI_PASSWORD. An
// address beyond loopback without a token is not an error, so that probes
// of /healthz and /readyz work in a container; it closes /status (jobs,
// commands' outcomes and errors), /metrics (the jobs) and the dashboard
// instead, since none of them is for the network to read unasked. A token
// that is present but unreadable or too short is an error.
func httpConfigFrom(rf *runFlags, addr string) (httpConfig, error) {
	env := anarchonui.AuthFromEnv()
	hc := httpConfig{statusOutput: rf.statusOutput, user: env.User, password: env.Password}
	if rf.httpTokenFile != "" {
		data, err := os.ReadFile(rf.httpTokenFile)
		if err != nil {
			return hc, noFile(fmt.Errorf("--http-token-file: %w", err))
		}
		line, _, _ := strings.Cut(string(data), "\n")
		hc.token = strings.TrimSpace(line)
		if len(hc.token) < 16 {
			return hc, fmt.Errorf("--http-token-file %q: the token must be at least 16 characters", rf.httpTokenFile)
		}
	} else if t := strings.TrimSpace(env.Token); t != "" {
		// One credential guards the whole endpoint: the dashboard's token
		// serves /status and /metrics too when no token file is given.
		if len(t) < 16 {
			return hc, errors.New("ANARCHON_UI_TOKEN: the token must be at least 16 characters")
		}
		hc.token = t
	}
	hc.locked = hc.token == "" && !anarchonui.IsLoopback(addr)
	return hc, nil
}

// authorized checks the bearer token, in constant time, and refuses
// every request with 403 when the endpoint is locked.
func (s *server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.locked {
		refuseLocked(w)
		return false
	}
	if s.cfg.token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.token)) == 1 {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="anarchon"`)
	http.Error(w, "unauthorized", http.StatusUnauthorized)
	return false
}

// refuseLocked answers 403 with lockedMessage.
func refuseLocked(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write([]byte(lockedMessage))
}

// listenHTTP binds addr, so that a port in use is found before the
// scheduler starts; serve starts answering. d may be set later, before
// serve.
func listenHTTP(d *daemon, addr string, cfg httpConfig) (*server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &server{d: d, ln: ln, cfg: cfg}, nil
}

// startHTTP listens on addr and serves in the background.
func startHTTP(d *daemon, addr string, cfg httpConfig) (*server, error) {
	s, err := listenHTTP(d, addr, cfg)
	if err != nil {
		return nil, err
	}
	s.serve(addr)
	return s, nil
}

// serve answers on the bound listener in the background.
func (s *server) serve(addr string) {
	d, ln, cfg := s.d, s.ln, s.cfg
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	metrics := promhttp.HandlerFor(d.metrics.reg, promhttp.HandlerOpts{})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if s.authorized(w, r) {
			metrics.ServeHTTP(w, r)
		}
	})
	mux.HandleFunc("GET /status", s.status)
	mountUI(mux, d, addr, cfg)
	// Timeouts, so that slow or idle clients cannot hold connections
	// (and goroutines) open without end.
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("http server stopped", slog.Any("error", err))
		}
	}()
}

// readyz answers 200 when the store answers a cheap read within 2 s: its
// clock where it has one, else Init. A SQLite store whose file was
// replaced under the process fails its clock as it fails its claims
// (sqlbackend.Config.Guard), so the replica is not ready.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := ping(ctx, s.d.backend); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("store unreachable: " + strings.TrimSpace(scrub(err.Error(), s.d.rawStore)) + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// ping checks that the store answers.
func ping(ctx context.Context, b anarchon.Backend) error {
	if c, ok := anarchon.As[anarchon.ServerClock](b); ok {
		_, err := c.ServerTime(ctx)
		return err
	}
	return b.Init(ctx)
}

func (s *server) status(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st := s.d.status(ctx)
	if !s.cfg.statusOutput {
		for _, j := range st.Jobs {
			if j.Last != nil {
				j.Last.Output = ""
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(st)
}

// close stops the server, waiting at most until ctx ends.
func (s *server) close(ctx context.Context) {
	if s.srv == nil {
		_ = s.ln.Close()
		return
	}
	_ = s.srv.Shutdown(ctx)
}
