package faults_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/faults"
	"github.com/anarchon/anarchon/pgbackend"
)

// The PostgreSQL failover drill: a primary and a streaming standby on
// loopback (the standby replicates through a faults.Proxy, which can make
// it lag), three instance processes on a multi-host URL with
// target_session_attrs=read-write, a 1 s plain job and a 1 s leased job;
// the primary is SIGKILLed mid-run and the standby promoted with
// pg_ctl promote. The ledger then gives lost slots, duplicates, late runs
// and the recovery time.
//
// TestPostgresFailoverSync (synchronous standby) is the CI mode: one
// failover, about a minute, and it fails on any duplicate or late run.
// With ANARCHON_SOAK=<duration> it repeats the drill on a fresh pair of
// servers until the duration has passed. TestPostgresFailoverAsync
// (asynchronous standby) runs only in the soak mode and records what
// happens without failing on duplicates: it is the unsafe topology that
// pgbackend warns about. ANARCHON_FAULTS_REPORT=<dir> appends each
// drill's figures to <dir>/postgres-failover.txt.

// TestPostgresFailoverSync needs ANARCHON_TEST_POSTGRES_URL (the variable
// says PostgreSQL's binaries are installed; the drill starts servers of
// its own from them).
func TestPostgresFailoverSync(t *testing.T) {
	need(t, "ANARCHON_TEST_POSTGRES_URL", "postgres")
	runPGFailover(t, pgbackend.TopologySync)
}

// TestPostgresFailoverAsync runs the drill on an asynchronous standby,
// in the soak mode only (ANARCHON_SOAK).
func TestPostgresFailoverAsync(t *testing.T) {
	need(t, "ANARCHON_TEST_POSTGRES_URL", "postgres")
	if os.Getenv("ANARCHON_SOAK") == "" {
		t.Skip("ANARCHON_SOAK is not set: the asynchronous standby's drill runs in the soak mode only")
	}
	runPGFailover(t, pgbackend.TopologyAsync)
}

// TestPostgresCrashSingle runs the drill on a single server, SIGKILLed
// and started again on its data (crash recovery) instead of a promotion,
// in the soak mode only (ANARCHON_SOAK): the baseline of the table in
// pgbackend's # Guarantees.
func TestPostgresCrashSingle(t *testing.T) {
	need(t, "ANARCHON_TEST_POSTGRES_URL", "postgres")
	if os.Getenv("ANARCHON_SOAK") == "" {
		t.Skip("ANARCHON_SOAK is not set: the single server's crash drill runs in the soak mode only")
	}
	runPGFailover(t, pgbackend.TopologySingle)
}

// pgDrill is the timing of one failover drill.
type pgDrill struct {
	before   time.Duration // healthy running before the lag
	lag      time.Duration // replication delayed by the proxy before the kill
	lagMode  faults.Mode   // what the replication proxy does while lagging: Delay (the default) or Blackhole
	lagDelay time.Duration // the proxy's delay per chunk while lagging (Delay)
	promote  time.Duration // from the kill to pg_ctl promote (failure detection)
	after    time.Duration // running after the promotion
	work     time.Duration // the leased job's work
	lease    time.Duration
	plain    time.Duration // the plain job's work
}

// pgFigures is what the ledger of one drill shows.
type pgFigures struct {
	Topology          string
	Slots             int           // slots of both jobs due between the instances' start and their stop
	Runs              int           // handler starts
	Settled           int           // slots settled without a run (skipped as an overlap, missed): not lost
	LostBefore        int           // slots never started nor settled, due more than an interval before the replication lag began
	LostOutage        int           // slots never started nor settled, due from then to a second after the first start after the kill (claims slowed by the lag or in flight at the kill, the outage)
	LostAfter         int           // slots never started nor settled, due after that
	DupSameAttempt    int           // extra starts of a slot with an attempt number already started
	DupNextAttempt    int           // starts with a higher attempt of a slot whose earlier attempt completed long before the kill, or was not stopped first
	Unconfirmed       int           // takeovers (attempt+1) of a slot whose earlier attempt completed but whose holder logged its Finish as failed: to the store it was a holder that died (at least once, fenced by Attempt)
	Overlaps          int           // starts while another run of the same slot was still going
	RerunsAfterStop   int           // takeovers (attempt+1) after the earlier attempt stopped on a lost lease
	Late              int           // runs started more than MaxLate (1 min) after their slot
	MaxLateness       time.Duration // the latest start after its slot
	Fenced            int           // starts of the leased job with a fencing token (Run.Fence)
	Unfenced          int           // starts of the leased job without one
	FenceTakeovers    int           // later holders of a leased slot whose fence was compared with the earlier holders'
	FenceBackward     int           // later holders of a leased slot whose fence was not above an earlier holder's
	FenceReused       int           // leased starts whose fence another start carried too
	Promotion         time.Duration // kill to promotion done
	Recovery          time.Duration // kill to the first handler start of a slot due after it
	ReplicationBefore string        // pgbackend's report on the primary before the drill
	Lost              []string      // the lost slots: job and due time relative to the kill
	Twice             []string      // the slots started more than once: job, due time relative to the kill, attempts
	FenceViolations   []string      // faults.CheckFences' findings
}

func (f pgFigures) String() string {
	return fmt.Sprintf("%s: %d slots, %d runs, %d settled without a run; lost %d (before the failover %d, during it %d, after %d); "+
		"duplicates: same attempt %d, attempt+1 %d; overlaps %d; reruns after a stop %d, after an unconfirmed finish %d; "+
		"started after MaxLate %d (latest start %v after its slot); fences: %d leased starts fenced, %d without, %d later holders compared, %d not above an earlier holder's, %d carried twice; "+
		"promotion %v, recovery %v after the kill",
		f.Topology, f.Slots, f.Runs, f.Settled, f.LostBefore+f.LostOutage+f.LostAfter, f.LostBefore, f.LostOutage, f.LostAfter,
		f.DupSameAttempt, f.DupNextAttempt, f.Overlaps, f.RerunsAfterStop, f.Unconfirmed, f.Late, f.MaxLateness.Round(time.Millisecond),
		f.Fenced, f.Unfenced, f.FenceTakeovers, f.FenceBackward, f.FenceReused,
		f.Promotion.Round(time.Millisecond), f.Recovery.Round(time.Millisecond))
}

// fenceBroken reports whether the drill's fences broke their promise: a
// leased start without one, a later holder of a slot not above an
// earlier one, or a fence on two starts.
func (f pgFigures) fenceBroken() bool {
	return f.Unfenced != 0 || f.FenceBackward != 0 || f.FenceReused != 0
}

func runPGFailover(t *testing.T, topology pgbackend.Topology) {
	bindir, err := pgBinDir()
	if err != nil {
		t.Fatal(err)
	}
	d := pgDrill{
		before: 12 * time.Second, lag: 3 * time.Second, lagDelay: 200 * time.Millisecond,
		promote: 2 * time.Second, after: 15 * time.Second,
		work: 2500 * time.Millisecond, lease: 2 * time.Second, plain: 100 * time.Millisecond,
	}
	soak := time.Duration(0)
	if v := os.Getenv("ANARCHON_SOAK"); v != "" {
		soak, err = time.ParseDuration(v)
		if err != nil || soak <= 0 {
			t.Fatalf("ANARCHON_SOAK=%q: want a positive duration such as 20m", v)
		}
		d.before, d.lag, d.lagDelay, d.after = 20*time.Second, 5*time.Second, 500*time.Millisecond, 20*time.Second
	}
	end := time.Now().Add(soak)
	if topology == pgbackend.TopologyAsync {
		// The standby gets nothing while lagging, so it lacks every claim
		// of the last d.lag.
		d.lagMode = faults.Blackhole
	}
	for i := 1; ; i++ {
		t.Run(fmt.Sprintf("drill%d", i), func(t *testing.T) {
			pgFailoverOnce(t, bindir, topology, d)
		})
		if t.Failed() || !time.Now().Before(end) {
			return
		}
	}
}

func lagText(d pgDrill, standby bool) string {
	if !standby {
		return "none (no standby)"
	}
	if d.lagMode == faults.Blackhole {
		return "stalled"
	}
	return fmt.Sprintf("delayed %v per chunk", d.lagDelay)
}

// pgCluster is a PostgreSQL data directory and the server running on it.
type pgCluster struct {
	t      *testing.T
	bindir string
	pgdata string
	port   int
	log    string
	opts   string
	dead   bool // crashed: nothing to stop
}

// asPG runs a PostgreSQL program, as the unprivileged anarchon-pg user
// when the tests run as root (PostgreSQL refuses root; postgres.sh
// creates the user).
func asPG(bindir, prog string, args ...string) error {
	argv := append([]string{filepath.Join(bindir, prog)}, args...)
	if os.Getuid() == 0 {
		argv = append([]string{"runuser", "-u", "anarchon-pg", "--"}, argv...)
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", prog, strings.Join(args, " "), err, out)
	}
	return nil
}

func (c *pgCluster) start() error {
	err := asPG(c.bindir, "pg_ctl", "-D", c.pgdata, "-l", c.log, "-w", "-t", "60", "-o", c.opts, "start")
	if err != nil {
		return fmt.Errorf("%w; the end of %s:\n%s", err, c.log, tail(c.log, 10))
	}
	return nil
}

// pids returns the postmaster's pid and its children's.
func (c *pgCluster) pids() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(c.pgdata, "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return nil, err
	}
	out := []int{pm}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		s, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces: read after ')'.
		rest := string(s[strings.LastIndexByte(string(s), ')')+1:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pm) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out, nil
}

// crash SIGKILLs the postmaster and every process of the server at once,
// as a machine's loss would end them.
func (c *pgCluster) crash() error {
	pids, err := c.pids()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	c.dead = true
	return nil
}

// promote makes a standby the primary (pg_ctl promote) and waits until
// it takes writes.
func (c *pgCluster) promote() error {
	return asPG(c.bindir, "pg_ctl", "-D", c.pgdata, "-w", "-t", "60", "promote")
}

func (c *pgCluster) stop() {
	if _, err := os.Stat(filepath.Join(c.pgdata, "postmaster.pid")); err != nil || c.dead {
		return
	}
	if err := asPG(c.bindir, "pg_ctl", "-D", c.pgdata, "-m", "immediate", "-w", "stop"); err != nil {
		c.t.Log(err)
	}
}

// pgPair is a primary and, but for TopologySingle, a standby streaming
// from it through a proxy (repl), which can make it lag.
type pgPair struct {
	dir              string // the servers' directories and the drill's files
	primary, standby *pgCluster
	repl             *faults.Proxy
	storeURL         string                // every server, target_session_attrs=read-write
	rep              pgbackend.Replication // pgbackend's report on the primary once the standby streams
}

// startPGPair starts a primary (and, but for TopologySingle, a standby
// streaming from it, synchronous for TopologySync) on loopback, each with
// its data directory under a new temporary directory, and waits until
// pgbackend reports the standby streaming with the sync state the
// topology wants. The servers are stopped when the test ends.
func startPGPair(t *testing.T, bindir string, topology pgbackend.Topology) *pgPair {
	syncStandby, single := topology == pgbackend.TopologySync, topology == pgbackend.TopologySingle
	// The servers' user must enter the directory: not t.TempDir (0700).
	dir, err := os.MkdirTemp("", "anarchon-pgfailover-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pgDir := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if os.Getuid() == 0 {
			u, err := user.Lookup("anarchon-pg")
			if err != nil {
				t.Fatalf("user anarchon-pg (scripts/services/postgres.sh creates it): %v", err)
			}
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	sockDir := pgDir("sock")
	names := "''"
	if syncStandby {
		names = "'*'"
	}
	// The primary waits for the standby (sync) or not (async). The
	// standby runs without synchronous_standby_names: once promoted it is
	// alone, and would otherwise wait for ever for a standby of its own
	// (a failover manager such as Patroni turns it off likewise until a
	// new standby joins).
	serverOpts := func(port int, names string) string {
		return fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s -c wal_level=replica -c max_wal_senders=5 "+
			"-c synchronous_commit=on -c synchronous_standby_names=%s -c max_connections=200 -c wal_receiver_status_interval=1s",
			port, sockDir, names)
	}
	pair := &pgPair{dir: dir}
	primary := &pgCluster{t: t, bindir: bindir, pgdata: filepath.Join(pgDir("primary"), "data"), port: freePort(t)}
	primary.log, primary.opts = filepath.Join(filepath.Dir(primary.pgdata), "server.log"), serverOpts(primary.port, names)
	if err := asPG(bindir, "initdb", "-D", primary.pgdata, "-U", "anarchon", "--auth=trust", "-E", "UTF8", "--locale=C"); err != nil {
		t.Fatal(err)
	}
	if err := primary.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(primary.stop)
	pair.primary = primary
	primaryAddr := fmt.Sprintf("127.0.0.1:%d", primary.port)

	urlOf := func(hosts ...string) string {
		return "postgres://anarchon@" + strings.Join(hosts, ",") + "/postgres?sslmode=disable&connect_timeout=2&target_session_attrs=read-write"
	}
	if single {
		pair.storeURL = urlOf(primaryAddr)
		return pair
	}

	// The standby streams through a proxy, which delays its bytes to make
	// it lag.
	repl, err := faults.NewProxy(primaryAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repl.Close() })
	pair.repl = repl
	replHost, replPort, _ := strings.Cut(repl.Addr(), ":")
	standby := &pgCluster{t: t, bindir: bindir, pgdata: filepath.Join(pgDir("standby"), "data"), port: freePort(t)}
	standby.log, standby.opts = filepath.Join(filepath.Dir(standby.pgdata), "server.log"), serverOpts(standby.port, "''")
	if err := asPG(bindir, "pg_basebackup", "-D", standby.pgdata, "-R", "-X", "stream", "-c", "fast",
		"-d", fmt.Sprintf("host=%s port=%s user=anarchon application_name=standby1", replHost, replPort)); err != nil {
		t.Fatal(err)
	}
	if err := standby.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(standby.stop)
	pair.standby = standby
	pair.storeURL = urlOf(primaryAddr, fmt.Sprintf("127.0.0.1:%d", standby.port))

	// pgbackend's report on the pair, once the standby streams.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wantSync := map[bool]string{true: "sync", false: "async"}[syncStandby]
	for {
		b, err := pgbackend.Open(ctx, "postgres://anarchon@"+primaryAddr+"/postgres?sslmode=disable", nil)
		if err != nil {
			t.Fatal(err)
		}
		err = b.Init(ctx)
		pair.rep = b.Replication()
		b.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(pair.rep.Standbys) == 1 && pair.rep.Standbys[0].State == "streaming" && pair.rep.Standbys[0].SyncState == wantSync {
			return pair
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the standby does not stream: %s; the end of its log:\n%s", pair.rep, tail(standby.log, 10))
		case <-time.After(200 * time.Millisecond): // waiting for another process
		}
	}
}

func pgFailoverOnce(t *testing.T, bindir string, topology pgbackend.Topology, d pgDrill) {
	syncStandby := topology == pgbackend.TopologySync
	pair := startPGPair(t, bindir, topology)
	if pair.standby == nil {
		f := pgDrillRun(t, pair.dir, d, topology, pair.primary, nil, nil, pair.storeURL)
		if f.DupSameAttempt != 0 || f.DupNextAttempt != 0 || f.Overlaps != 0 || f.Late != 0 || f.LostBefore != 0 || f.fenceBroken() {
			t.Errorf("single server, crash and restart: %s; fences: %q", f, f.FenceViolations)
		}
		return
	}
	// The topology pgbackend reported, and Init refusing the standby on
	// its own.
	rep := pair.rep
	t.Logf("replication before the drill: %s", rep)
	if rep.Topology != topology || rep.Safe != syncStandby || (len(rep.Warnings) > 0) == syncStandby {
		t.Errorf("pgbackend reported %s (warnings %q), want %s", rep, rep.Warnings, topology)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := pgbackend.Open(ctx, fmt.Sprintf("postgres://anarchon@127.0.0.1:%d/postgres?sslmode=disable", pair.standby.port), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Init(ctx); !errors.Is(err, pgbackend.ErrStandby) || anarchon.IsPermanent(err) {
		t.Errorf("Init on the standby: %v, want ErrStandby, not permanent", err)
	}
	sb.Close(ctx)
	f := pgDrillRun(t, pair.dir, d, topology, pair.primary, pair.standby, pair.repl, pair.storeURL)
	f.ReplicationBefore = rep.String()
	if syncStandby {
		// The safe topology: nothing acknowledged is lost, so nothing
		// runs twice, nothing runs late, and every holder's fence is above
		// those of the holders before it.
		if f.DupSameAttempt != 0 || f.DupNextAttempt != 0 || f.Overlaps != 0 || f.Late != 0 || f.fenceBroken() {
			t.Errorf("synchronous standby: %s; fences: %q", f, f.FenceViolations)
		}
		if f.LostBefore != 0 {
			t.Errorf("slots lost before the failover: %s", f)
		}
	}
}

// pgDrillRun starts three instances on storeURL, lets them run, makes the
// standby lag (through repl), SIGKILLs the primary, promotes the standby
// (or, without one, starts the primary again), lets them run again, stops
// them and counts what the ledger shows.
func pgDrillRun(t *testing.T, dir string, d pgDrill, topology pgbackend.Topology, primary, standby *pgCluster, repl *faults.Proxy, storeURL string) pgFigures {
	ctx := context.Background()
	// Three instances on the multi-host URL.
	ledger := filepath.Join(dir, "ledger.jsonl")
	logf, err := os.Create(filepath.Join(dir, "instances.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	var cmds []*exec.Cmd
	for k := 1; k <= 3; k++ {
		cmd := exec.Command(instanceBin, "-store", storeURL, "-id", fmt.Sprintf("i%d", k), "-ledger", ledger,
			"-interval", "1s", "-work", d.work.String(), "-lease", d.lease.String(),
			"-plain-interval", "1s", "-plain-work", d.plain.String(), "-clock-sync", "2s")
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	t.Cleanup(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
	})
	started := time.Now()

	time.Sleep(d.before) // the drill's own pacing: the servers run in other processes
	lagAt := time.Now()
	switch {
	case repl == nil:
	case d.lagMode == faults.Blackhole:
		repl.Set(faults.Blackhole, 0)
	default:
		repl.Set(faults.Delay, d.lagDelay)
	}
	time.Sleep(d.lag)
	killAt := time.Now()
	if err := primary.crash(); err != nil {
		t.Fatal(err)
	}
	t.Logf("primary SIGKILLed at %s", killAt.Format("15:04:05.000"))
	time.Sleep(d.promote)
	survivor := primary
	if standby != nil {
		if err := standby.promote(); err != nil {
			t.Fatal(err)
		}
		survivor = standby
		t.Logf("standby promoted at %s", time.Now().Format("15:04:05.000"))
	} else {
		primary.dead = false
		if err := primary.start(); err != nil {
			t.Fatal(err)
		}
		t.Logf("primary started again at %s", time.Now().Format("15:04:05.000"))
	}
	promoted := time.Now()
	time.Sleep(d.after)

	stopAt := time.Now()
	for _, c := range cmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range cmds {
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("instance %v: %v", c.Args[4], err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("instance %v did not stop within 20 s of SIGTERM", c.Args[4])
			_ = c.Process.Kill()
		}
	}
	entries, err := faults.ReadLedger(ledger)
	if err != nil {
		t.Fatal(err)
	}
	history := map[string]map[int64]anarchon.Status{}
	if hb, err := pgbackend.Open(ctx, fmt.Sprintf("postgres://anarchon@127.0.0.1:%d/postgres?sslmode=disable", survivor.port), nil); err != nil {
		t.Error(err)
	} else {
		hctx, hcancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := hb.Init(hctx); err != nil {
			t.Errorf("the promoted standby: %v", err)
		}
		for _, job := range []string{"plain", "leased"} {
			recs, err := hb.History(hctx, job, 0)
			if err != nil {
				t.Errorf("history of %s: %v", job, err)
			}
			history[job] = map[int64]anarchon.Status{}
			for _, r := range recs {
				history[job][r.Slot.UnixMilli()] = r.Status
			}
		}
		hcancel()
		hb.Close(context.Background())
	}
	// Slots from when every instance has started and measured its clock,
	// to a few seconds before the stop (a slot due then may still be
	// claimed when SIGTERM comes).
	failed, err := failedFinishes(filepath.Join(dir, "instances.log"))
	if err != nil {
		t.Error(err)
	}
	f := countPGFailover(entries, history, failed, started.Add(3*time.Second), stopAt.Add(-3*time.Second), lagAt, killAt)
	f.Topology, f.Promotion = string(topology), promoted.Sub(killAt)
	t.Logf("%s (kill to promote %v; before the kill, replication %s for %v)\n  lost (due relative to the kill): %v\n  started more than once: %v\n  fence violations: %q",
		f, d.promote, lagText(d, standby != nil), d.lag, f.Lost, f.Twice, f.FenceViolations)
	appendReport("postgres-failover", f.String())
	keepFiles("postgres-failover-"+strings.ReplaceAll(string(topology), " ", "-"), dir,
		"ledger.jsonl", "instances.log", "primary/server.log", "standby/server.log")
	if f.Recovery == 0 {
		t.Errorf("no run started after the kill: the instances did not follow the promotion")
	}
	return f
}

func finishKey(inst, job string, slotMs int64) string {
	return inst + " " + job + " " + strconv.FormatInt(slotMs, 10)
}

// failedFinishes reads the instances' log for the Finish and FinishResult
// calls that failed ("store call failed" op=Finish…), by finishKey.
func failedFinishes(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		if !strings.Contains(line, `msg="store call failed"`) || !strings.Contains(line, " op=Finish") {
			continue
		}
		var inst, job string
		var slot time.Time
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "instance":
				inst = v
			case "job":
				job = v
			case "slot":
				slot, _ = time.Parse(time.RFC3339Nano, v)
			}
		}
		if inst != "" && job != "" && !slot.IsZero() {
			out[finishKey(inst, job, slot.UnixMilli())] = true
		}
	}
	return out, nil
}

// countPGFailover counts what the ledger shows for the slots of both jobs
// due in (from, to], with the replication lagging from lagAt and the
// primary killed at kill; history (the
// promoted server's records, by job and slot) says what became of a slot
// that never started, and failedFinish (finishKey) which holders could not
// record their run's end.
func countPGFailover(entries []faults.Entry, history map[string]map[int64]anarchon.Status, failedFinish map[string]bool, from, to, lagAt, kill time.Time) pgFigures {
	type run struct {
		inst       string
		attempt    int
		start, end int64 // µs; end 0 if none
		stopped    bool
	}
	const maxLate = anarchon.DefaultMaxLate
	var f pgFigures
	slots := map[string]map[int64][]*run{"plain": {}, "leased": {}}
	byToken := map[string]*run{}
	recovery := int64(0)
	for _, e := range entries {
		switch e.Ev {
		case faults.EvStart:
			r := &run{inst: e.Inst, attempt: e.Attempt, start: e.T}
			byToken[e.Token] = r
			if m, ok := slots[e.Job]; ok {
				m[e.Slot] = append(m[e.Slot], r)
			}
			f.Runs++
			if late := time.Duration(e.T-e.Slot*1000) * time.Microsecond; late > f.MaxLateness {
				f.MaxLateness = late
			}
			if time.Duration(e.T-e.Slot*1000)*time.Microsecond > maxLate {
				f.Late++
			}
			// A run of a slot due before the kill may start just after it
			// (its claim's answer was on its way): recovery is the first
			// run of a slot due after the kill.
			if e.Slot > kill.UnixMilli() && (recovery == 0 || e.T < recovery) {
				recovery = e.T
			}
		case faults.EvEnd:
			if r := byToken[e.Token]; r != nil {
				r.end, r.stopped = e.T, e.Result == faults.ResultStopped
			}
		}
	}
	if recovery > 0 {
		f.Recovery = time.Duration(recovery-kill.UnixMicro()) * time.Microsecond
	}
	// Fences over the whole ledger: a holder from before the window may be
	// taken over inside it.
	fr := faults.CheckFences(entries, "leased", true)
	f.Fenced, f.Unfenced, f.FenceTakeovers, f.FenceBackward, f.FenceReused, f.FenceViolations =
		fr.Fenced, fr.Unfenced, fr.Takeovers, fr.Backward, fr.Reused, fr.Violations
	for _, job := range []string{"plain", "leased"} {
		m := slots[job]
		for slot := from.Truncate(time.Second).Add(time.Second); !slot.After(to); slot = slot.Add(time.Second) {
			f.Slots++
			rs := m[slot.UnixMilli()]
			rel := slot.Sub(kill).Round(time.Millisecond)
			if len(rs) == 0 {
				st := history[job][slot.UnixMilli()]
				if st == anarchon.StatusSkipped || st == anarchon.StatusMissed {
					f.Settled++
					continue
				}
				if st == "" {
					st = "no record"
				}
				f.Lost = append(f.Lost, fmt.Sprintf("%s@%+v (%s)", job, rel, st))
				switch {
				case slot.Before(lagAt.Add(-time.Second)):
					f.LostBefore++
				case recovery == 0 || slot.UnixMicro() <= recovery+int64(time.Second/time.Microsecond):
					f.LostOutage++
				default:
					f.LostAfter++
				}
				continue
			}
			sort.Slice(rs, func(i, j int) bool { return rs[i].start < rs[j].start })
			if len(rs) > 1 {
				var as []string
				for _, r := range rs {
					as = append(as, strconv.Itoa(r.attempt))
				}
				f.Twice = append(f.Twice, fmt.Sprintf("%s@%+v attempts %s", job, rel, strings.Join(as, ",")))
			}
			seen := map[int]bool{}
			for i, r := range rs {
				if seen[r.attempt] {
					f.DupSameAttempt++
				}
				seen[r.attempt] = true
				if i == 0 {
					continue
				}
				prev := rs[i-1]
				if prev.end == 0 || prev.end > r.start {
					f.Overlaps++
				}
				if r.attempt > prev.attempt {
					switch {
					case prev.stopped && prev.end != 0 && prev.end <= r.start:
						f.RerunsAfterStop++
					case !prev.stopped && prev.end != 0 && prev.end <= r.start && failedFinish[finishKey(prev.inst, job, slot.UnixMilli())]:
						f.Unconfirmed++
					default:
						f.DupNextAttempt++
					}
				}
			}
		}
	}
	return f
}

// TestCountPGFailover checks the drill's counting on a made-up ledger:
// each kind of outcome once.
func TestCountPGFailover(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	kill := base.Add(10*time.Second + 500*time.Millisecond)
	lagAt := kill.Add(-3 * time.Second)
	us := func(d time.Duration) int64 { return base.Add(d).UnixMicro() }
	var entries []faults.Entry
	n := 0
	add := func(inst, job string, slot time.Duration, attempt int, start, end time.Duration, result string) {
		n++
		tok := fmt.Sprintf("t%d", n)
		ms := base.Add(slot).UnixMilli()
		var fence uint64 // leased runs: one above the last, but slot 8's backup reuses slot 7's backup's, below its holder's
		switch {
		case job == "leased" && slot == 8*time.Second && attempt == 2:
			fence = uint64(n) - 3
		case job == "leased":
			fence = uint64(n)
		}
		entries = append(entries, faults.Entry{Ev: faults.EvStart, Inst: inst, Job: job, Slot: ms, Attempt: attempt, Token: tok, T: us(start), Fence: fence})
		if end > 0 {
			entries = append(entries, faults.Entry{Ev: faults.EvEnd, Inst: inst, Job: job, Slot: ms, Attempt: attempt, Token: tok, T: us(end), Result: result})
		}
	}
	s := time.Second
	for i := time.Duration(1); i <= 20; i++ {
		switch i {
		case 2: // lost long before the failover
		case 4: // the same attempt twice, one after the other
			add("i1", "plain", i*s, 1, i*s+10e6, i*s+20e6, faults.ResultCompleted)
			add("i2", "plain", i*s, 1, i*s+30e6, i*s+40e6, faults.ResultCompleted)
		case 11, 12: // lost in the outage
		default:
			add("i1", "plain", i*s, 1, i*s+10e6, i*s+20e6, faults.ResultCompleted)
		}
		switch i {
		case 3: // skipped (history), not lost
		case 5: // a takeover after a stop: a rerun
			add("i1", "leased", i*s, 1, i*s+10e6, i*s+500e6, faults.ResultStopped)
			add("i2", "leased", i*s, 2, i*s+600e6, i*s+700e6, faults.ResultCompleted)
		case 6: // a takeover after a completed attempt whose Finish failed: a rerun
			add("i1", "leased", i*s, 1, i*s+10e6, i*s+500e6, faults.ResultCompleted)
			add("i2", "leased", i*s, 2, i*s+600e6, i*s+700e6, faults.ResultCompleted)
		case 7: // a takeover after a completed, recorded attempt: a duplicate
			add("i1", "leased", i*s, 1, i*s+10e6, i*s+500e6, faults.ResultCompleted)
			add("i2", "leased", i*s, 2, i*s+600e6, i*s+700e6, faults.ResultCompleted)
		case 8: // a backup starting while the holder runs: an overlap and a duplicate
			add("i1", "leased", i*s, 1, i*s+10e6, i*s+900e6, faults.ResultCompleted)
			add("i2", "leased", i*s, 2, i*s+600e6, i*s+700e6, faults.ResultCompleted)
		case 9: // started 2 min late
			add("i1", "leased", i*s, 1, i*s+2*time.Minute, i*s+2*time.Minute+1e6, faults.ResultCompleted)
		case 11, 12:
		default:
			add("i1", "leased", i*s, 1, i*s+10e6, i*s+20e6, faults.ResultCompleted)
		}
	}
	history := map[string]map[int64]anarchon.Status{"leased": {base.Add(3 * s).UnixMilli(): anarchon.StatusSkipped}}
	failed := map[string]bool{finishKey("i1", "leased", base.Add(6*s).UnixMilli()): true}
	f := countPGFailover(entries, history, failed, base.Add(s), base.Add(20*s), lagAt, kill)
	want := pgFigures{Slots: 38, Settled: 1, LostBefore: 1, LostOutage: 4, DupSameAttempt: 1, DupNextAttempt: 2, Overlaps: 1,
		RerunsAfterStop: 1, Unconfirmed: 1, Late: 1, Recovery: 13*s + 10e6 - 10*s - 500e6,
		Fenced: 21, FenceTakeovers: 4, FenceBackward: 1, FenceReused: 1}
	got := f
	got.Runs, got.MaxLateness, got.Lost, got.Twice, got.FenceViolations = 0, 0, nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if len(f.Lost) != 5 || len(f.Twice) != 5 || len(f.FenceViolations) != 2 {
		t.Errorf("lost %v, twice %v, fence violations %q", f.Lost, f.Twice, f.FenceViolations)
	}
}
