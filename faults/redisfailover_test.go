package faults_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/faults"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

// The Redis failover drills: a primary, two replicas and three Sentinels
// (TestSentinelFailoverDrill), or three masters and three replicas
// (TestClusterFailoverDrill), on loopback (launchers in redisha_test.go);
// three schedulers in this process, each on a client of its own (the
// first opened from the URL form the daemon takes), a 1 s plain job and
// a 1 s leased job, every handler start in a ledger; the primary (the
// master of the leased job's keys) is SIGKILLed mid-run. The drill counts
// lost slots, duplicates (two starts of a slot with the same attempt, or
// with the next one), starts after MaxLate, and the recovery time (from
// the kill to the first start of a slot due after it); it checks the
// leased job's fencing tokens (Run.Fence) too: every later holder of a
// slot carries a larger one, and no two starts share one.
//
// In CI each runs one kill (about a minute). ANARCHON_REDIS_FAILOVER_SOAK=D
// (a Go duration) runs Sentinel kills for D: each round kills the current
// primary, waits for the failover and starts the killed node again as a
// replica. ANARCHON_REDIS_FAILOVER_WAIT=0 runs the Sentinel drill without
// WAIT (the unsafe topology: acknowledged claims can be lost), to measure
// what it does; duplicates are then reported, not failed on.
// ANARCHON_REDIS_FAILOVER_LAG=stall makes the promoted replica lag: the
// replicas replicate through a faults.Proxy (see startSentinelSet), which
// black-holes their replication for drillStall before the first kill of
// the primary and cuts it at the kill, so the promoted replica lacks the
// writes of the stall. With WAIT the claims of the stall fail closed (no
// replica acknowledges them); without WAIT they are acknowledged and
// lost. The later rounds of a soak replicate directly, without a stall.
// ANARCHON_REDIS_CLUSTER_NO_RELOAD=1 runs the Cluster drill on go-redis
// alone, without the backend's slot-map reload.

const (
	drillMaxLate = 5 * time.Second
	drillStall   = 3 * time.Second        // replication stalled before the kill (ANARCHON_REDIS_FAILOVER_LAG=stall)
	drillWork    = 300 * time.Millisecond // each handler's run
	// drillSpawn is how long after the daemon starts a job the job's
	// shell may stamp its start in the ledger: fork and exec of sh, then
	// of date(1), on a loaded 2-core machine. The daemon's lateness check
	// is before them (faults.Spec.Spawn).
	drillSpawn = 200 * time.Millisecond
)

// drillStart is one handler start of the ledger.
type drillStart struct {
	job      string
	slot     time.Time
	attempt  int
	fence    uint64 // Run.Fence: 0 for the plain job
	instance string
	at       time.Time
	end      time.Time // when the handler returned; zero if it did not
}

type drillLedger struct {
	mu     sync.Mutex
	starts []drillStart
}

func (l *drillLedger) add(s drillStart) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts = append(l.starts, s)
	return len(l.starts) - 1
}

func (l *drillLedger) end(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts[i].end = time.Now()
}

func (l *drillLedger) snapshot() []drillStart {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]drillStart(nil), l.starts...)
}

// startDrillSchedulers starts three schedulers, backend(i, logger) each,
// with the drill's two jobs writing to ledger, and returns their stop
// (also run when the test ends).
func startDrillSchedulers(t *testing.T, ledger *drillLedger, backend func(i int, log *slog.Logger) (*redisbackend.Backend, error)) (stop func()) {
	handler := func(ctx context.Context, run *anarchon.Run) error {
		i := ledger.add(drillStart{job: run.Job, slot: run.Slot, attempt: run.Attempt, fence: run.Fence, instance: run.InstanceID, at: time.Now()})
		defer ledger.end(i)
		select {
		case <-time.After(drillWork):
		case <-ctx.Done():
		}
		return nil
	}
	logs := io.Discard
	if testing.Verbose() {
		logs = os.Stderr
	}
	var scheds []*anarchon.Scheduler
	for i := range 3 {
		log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})).With("instance", i)
		b, err := backend(i, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close(context.Background()) })
		s := anarchon.New(b, &anarchon.Options{InstanceID: "i" + strconv.Itoa(i), Logger: log, PollInterval: 250 * time.Millisecond})
		if err := s.Every("plain", time.Second, handler, &anarchon.JobOptions{NoLease: true, MaxLate: drillMaxLate}); err != nil {
			t.Fatal(err)
		}
		if err := s.Every("leased", time.Second, handler, &anarchon.JobOptions{Lease: 3 * time.Second, MaxLate: drillMaxLate}); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		scheds = append(scheds, s)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, s := range scheds {
				_ = s.Stop(sctx)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// drillClientTimeouts are the clients' timeouts, as URL parameters (for
// the scheduler opened from a URL) and as go-redis options.
const drillClientTimeouts = "dial_timeout=500ms&read_timeout=2s&write_timeout=2s&max_retries=1"

func TestSentinelFailoverDrill(t *testing.T) {
	soak := time.Duration(0)
	if v := os.Getenv("ANARCHON_REDIS_FAILOVER_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("ANARCHON_REDIS_FAILOVER_SOAK=%q: %v", v, err)
		}
		soak = d
	}
	wait := 1
	if v := os.Getenv("ANARCHON_REDIS_FAILOVER_WAIT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("ANARCHON_REDIS_FAILOVER_WAIT=%q: %v", v, err)
		}
		wait = n
	}
	stall := false
	switch v := os.Getenv("ANARCHON_REDIS_FAILOVER_LAG"); v {
	case "":
	case "stall":
		stall = true
	default:
		t.Fatalf("ANARCHON_REDIS_FAILOVER_LAG=%q: want stall or nothing", v)
	}
	set := startSentinelSet(t, wait, stall)

	// Three schedulers, each on a client of its own.
	var ledger drillLedger
	stop := startDrillSchedulers(t, &ledger, func(i int, log *slog.Logger) (*redisbackend.Backend, error) {
		if i == 0 { // the first through the URL form the daemon takes
			return redisbackend.Open("redis+sentinel://"+strings.Join(set.sentinels, ",")+"/?master="+sentinelMaster+
				"&wait="+strconv.Itoa(wait)+"&wait_timeout=500ms&prefix=drill&"+drillClientTimeouts, &redisbackend.Options{Logger: log})
		}
		client := redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: sentinelMaster, SentinelAddrs: set.sentinels,
			DialTimeout: 500 * time.Millisecond, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
			MaxRetries: 1,
		})
		t.Cleanup(func() { _ = client.Close() })
		return redisbackend.New(client, &redisbackend.Options{Prefix: "drill", Replicas: wait, ReplicaTimeout: 500 * time.Millisecond, Logger: log})
	})

	// The rounds: settle, kill the primary, wait for the failover, start
	// the killed node again as a replica of the new primary.
	start := time.Now()
	time.Sleep(8 * time.Second) // steady state before the first fault
	var rounds []drillRound
	current := set.primary
	for {
		var stalledAt time.Time
		if stall && len(rounds) == 0 {
			// The replicas' last acknowledged offset, then the stall:
			// the proxy holds every byte both ways, so the replicas
			// neither receive the writes nor acknowledge them.
			for a := range set.nodes {
				if a != current {
					info := redisInfo(t.Context(), a, "replication")
					off, _ := infoValue(info, "slave_repl_offset")
					t.Logf("replica %s at offset %s before the stall", a, off)
				}
			}
			stalledAt = time.Now()
			set.repl.Set(faults.Blackhole, 0)
			time.Sleep(drillStall)
		}
		r := drillRound{killed: current, kill: time.Now(), stalled: stalledAt}
		r.newPrimary = set.killPrimary(current)
		r.promoted = time.Now()
		rounds = append(rounds, r)
		time.Sleep(15 * time.Second) // runs on the new primary, without the killed node
		current = set.rejoin(r.killed, r.newPrimary)
		if current != r.newPrimary {
			t.Logf("round %d: the Sentinel named %s, but %s is the primary now", len(rounds), r.newPrimary, current)
		}
		if time.Since(start) > soak {
			break
		}
		time.Sleep(5 * time.Second)
	}
	time.Sleep(5 * time.Second)
	end := time.Now()
	stop()

	report, failed := drillFigures(t, ledger.snapshot(), start, end, rounds, wait, wait > 0)
	lag := "replicas caught up"
	if stall {
		lag = fmt.Sprintf("replication stalled %v before the first kill (from %s)", rounds[0].kill.Sub(rounds[0].stalled).Round(100*time.Millisecond), rounds[0].stalled.Format("15:04:05.000"))
	}
	t.Logf("Sentinel failover drill, WAIT %d, %s, %d kill(s) of the primary in %v:\n%s", wait, lag, len(rounds), end.Sub(start).Round(time.Second), report)
	if failed {
		t.Errorf("duplicates, starts after MaxLate, or no recovery with WAIT %d (see above)", wait)
	}
}

// drillRound is one kill of a drill.
type drillRound struct {
	killed     string
	kill       time.Time
	promoted   time.Time // the servers named the new primary
	newPrimary string
	stalled    time.Time // the replication stall began (zero: none)
}

// drillFigures counts, per job, the slots due from start to end (less
// MaxLate and a margin at both ends) that never started, the duplicates
// (two starts with the same attempt, or with attempt and attempt+1), the
// first attempts started after MaxLate, and the recovery after each kill
// (to the first start of a slot due after it). failed: a duplicate or late
// start with WAIT, or no recovery; with fences, also a fault of the leased
// job's fencing tokens (see fenceFaults). A takeover (attempt 2 on) has no
// lateness limit: it continues a run that began in time (SPEC §3, step 5),
// and a failover that outlasts the lease delays it by as long as the
// clients need to find the new primary, so it is logged, not counted.
func drillFigures(t *testing.T, starts []drillStart, start, end time.Time, rounds []drillRound, wait int, fences bool) (string, bool) {
	type key struct {
		job  string
		slot time.Time
	}
	bySlot := map[key][]drillStart{}
	for _, s := range starts {
		k := key{s.job, s.slot}
		bySlot[k] = append(bySlot[k], s)
	}
	first := start.Truncate(time.Second).Add(2 * time.Second)
	last := end.Add(-drillMaxLate - 2*time.Second).Truncate(time.Second)
	var report strings.Builder
	failed := false
	for _, job := range []string{"plain", "leased"} {
		var lost []string
		sameAttempt, nextAttempt, late, lateTakeovers := 0, 0, 0, 0
		for slot := first; !slot.After(last); slot = slot.Add(time.Second) {
			ss := bySlot[key{job, slot.UTC()}]
			if len(ss) == 0 {
				lost = append(lost, slot.UTC().Format("15:04:05"))
			}
		}
		for k, ss := range bySlot {
			if k.job != job {
				continue
			}
			seen := map[int]int{}
			for _, s := range ss {
				seen[s.attempt]++
				if s.at.Sub(s.slot) > drillMaxLate && s.attempt > 1 {
					lateTakeovers++
					t.Logf("%s slot %s: takeover, attempt %d on %s, started %v after its slot (no lateness limit: SPEC §3, step 5)", job, k.slot.Format("15:04:05"), s.attempt, s.instance, s.at.Sub(s.slot).Round(time.Millisecond))
				} else if s.at.Sub(s.slot) > drillMaxLate {
					late++
					t.Logf("%s slot %s: attempt %d on %s started %v after its slot, beyond MaxLate %v", job, k.slot.Format("15:04:05"), s.attempt, s.instance, s.at.Sub(s.slot).Round(time.Millisecond), drillMaxLate)
				}
			}
			for att, n := range seen {
				if n > 1 {
					sameAttempt += n - 1
					t.Logf("%s slot %s: attempt %d started %d times", job, k.slot.Format("15:04:05"), att, n)
				}
				if seen[att+1] > 0 {
					nextAttempt++
					var a, b drillStart
					for _, s := range ss {
						switch s.attempt {
						case att:
							a = s
						case att + 1:
							b = s
						}
					}
					how := "after the first had returned (a rerun)"
					if a.end.IsZero() || b.at.Before(a.end) {
						how = "while the first still ran (an overlap)"
					}
					t.Logf("%s slot %s: attempt %d on %s at %s, attempt %d on %s at %s, %s", job, k.slot.Format("15:04:05"),
						att, a.instance, a.at.Format("15:04:05.000"), att+1, b.instance, b.at.Format("15:04:05.000"), how)
				}
			}
		}
		var recovery []string
		for _, r := range rounds {
			firstAfter := time.Time{}
			for _, s := range starts {
				if s.job == job && s.slot.After(r.kill) && (firstAfter.IsZero() || s.at.Before(firstAfter)) {
					firstAfter = s.at
				}
			}
			if firstAfter.IsZero() {
				recovery = append(recovery, "never")
				failed = true
				continue
			}
			recovery = append(recovery, fmt.Sprintf("%v (promotion %v)", firstAfter.Sub(r.kill).Round(100*time.Millisecond), r.promoted.Sub(r.kill).Round(100*time.Millisecond)))
		}
		sort.Strings(lost)
		fmt.Fprintf(&report, "%s: slots %d, lost %d %v, duplicates same attempt %d, attempt+1 %d, first attempts started after MaxLate %d (takeovers %d), recovery after each kill: %s\n",
			job, int(last.Sub(first)/time.Second)+1, len(lost), lost, sameAttempt, nextAttempt, late, lateTakeovers, strings.Join(recovery, ", "))
		if wait > 0 && (sameAttempt > 0 || nextAttempt > 0 || late > 0) {
			failed = true
		}
		if job == "leased" {
			var ss []drillStart
			for _, s := range starts {
				if s.job == job {
					ss = append(ss, s)
				}
			}
			line, bad := fenceFaults(t, ss)
			fmt.Fprintf(&report, "%s: %s\n", job, line)
			if fences && bad {
				failed = true
			}
		}
	}
	per := map[string]int{}
	for _, s := range starts {
		per[s.instance]++
	}
	fmt.Fprintf(&report, "handler starts per instance: %v\n", per)
	return report.String(), failed
}

// fenceFaults checks the fencing tokens of one leased job's starts
// (SPEC §6, "Fencing"): every start carries one (not 0); a later holder
// of a slot (a higher attempt) carries a larger fence than every earlier
// holder of it; and no two starts share a fence. bad reports any fault;
// line is the figures.
func fenceFaults(t *testing.T, starts []drillStart) (line string, bad bool) {
	none, back, shared := 0, 0, 0
	bySlot := map[time.Time][]drillStart{}
	byFence := map[uint64][]drillStart{}
	var low, high uint64
	for _, s := range starts {
		if s.fence == 0 {
			none++
			t.Logf("leased slot %s: attempt %d on %s started without a fence", s.slot.Format("15:04:05"), s.attempt, s.instance)
			continue
		}
		bySlot[s.slot] = append(bySlot[s.slot], s)
		byFence[s.fence] = append(byFence[s.fence], s)
		if low == 0 || s.fence < low {
			low = s.fence
		}
		high = max(high, s.fence)
	}
	for slot, ss := range bySlot {
		for _, a := range ss {
			for _, b := range ss {
				if a.attempt < b.attempt && b.fence <= a.fence {
					back++
					t.Logf("leased slot %s: attempt %d on %s has fence %d, not above attempt %d's %d on %s",
						slot.Format("15:04:05"), b.attempt, b.instance, b.fence, a.attempt, a.fence, a.instance)
				}
			}
		}
	}
	for f, ss := range byFence {
		if len(ss) > 1 {
			shared += len(ss) - 1
			for _, s := range ss {
				t.Logf("fence %d: leased slot %s, attempt %d on %s", f, s.slot.Format("15:04:05"), s.attempt, s.instance)
			}
		}
	}
	line = fmt.Sprintf("fences %d–%d on %d starts, without a fence %d, later attempt not above an earlier one %d, shared by two starts %d",
		low, high, len(starts)-none, none, back, shared)
	return line, none > 0 || back > 0 || shared > 0
}

// noReload hides a cluster client's type from the backend, which then
// cannot ask it to reload its slot map after a failover error: go-redis
// alone. Without WAIT the backend treats the client as any
// redis.UniversalClient; only its start-up topology log differs (one
// node's INFO instead of every master's).
type noReload struct{ *redis.ClusterClient }

// The Cluster drill: the master holding the leased job's keys is
// SIGKILLed. The recovery of the leased job is compared with the
// cluster's own promotion time (the kill until a surviving node names the
// replica as the slot's master): go-redis alone kept dialling the dead
// master until its next periodic reload (redis/go-redis#3979); the
// backend reloads the slot map on the errors a failover causes. It runs
// without WAIT (each master has one replica: WAIT 1 would stop the
// shard's claims until the killed node is back), so it measures recovery,
// not the loss of unreplicated claims.
func TestClusterFailoverDrill(t *testing.T) {
	reload := os.Getenv("ANARCHON_REDIS_CLUSTER_NO_RELOAD") != "1"
	cl := startRedisCluster(t, 1)
	const prefix = "drill"
	keySlot := cl.keySlot("{" + prefix + ":leased}:run")
	var ledger drillLedger
	stop := startDrillSchedulers(t, &ledger, func(i int, log *slog.Logger) (*redisbackend.Backend, error) {
		if i == 0 && reload { // the first through the URL form the daemon takes
			return redisbackend.Open("redis://"+strings.Join(cl.addrs, ",")+"?cluster=true&prefix="+prefix+"&"+drillClientTimeouts,
				&redisbackend.Options{Logger: log})
		}
		client := redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:       cl.addrs,
			DialTimeout: 500 * time.Millisecond, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
			MaxRetries: 1,
		})
		t.Cleanup(func() { _ = client.Close() })
		var uc redis.UniversalClient = client
		if !reload {
			uc = noReload{client}
		}
		return redisbackend.New(uc, &redisbackend.Options{Prefix: prefix, Logger: log})
	})

	start := time.Now()
	time.Sleep(8 * time.Second) // steady state before the fault
	r := drillRound{kill: time.Now()}
	r.killed, r.newPrimary = cl.killMasterOf(keySlot)
	r.promoted = time.Now()
	time.Sleep(20 * time.Second) // runs on the promoted replica
	end := time.Now()
	stop()
	// Without WAIT a claim the promoted replica missed can be lost with
	// its fence; the replicas are caught up here, so a fence that goes
	// back is a fault all the same.
	report, failed := drillFigures(t, ledger.snapshot(), start, end, []drillRound{r}, 0, true)
	t.Logf("Cluster failover drill (3 masters, 3 replicas, no WAIT, slot-map reload on errors %v): kill of the leased job's master in %v:\n%s",
		reload, end.Sub(start).Round(time.Second), report)
	if failed {
		t.Errorf("no recovery (see above)")
	}
}

// TestSentinelUnknownMaster: a redis+sentinel URL whose master= no
// Sentinel monitors fails Init at once with ErrInvalidInput naming the
// name (go-redis reports it as "all sentinels … are unreachable: redis:
// nil"), a permanent error the daemon does not retry; with one Sentinel
// that cannot be reached beside it the error stays transient (that one may
// know the name); the right name binds.
func TestSentinelUnknownMaster(t *testing.T) {
	bin := redisBin(t)
	primary := startRedisNode(t, bin, "")
	host, port, _ := strings.Cut(primary.addr, ":")
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("sentinel monitor %s %s %s 1\n", sentinelMaster, host, port)), 0o600); err != nil {
		t.Fatal(err)
	}
	sn := startRedisNode(t, bin, conf, "--sentinel")
	closed := fmt.Sprintf("127.0.0.1:%d", freePortPlus(t, 0))
	init := func(sentinels, master string) error {
		b, err := redisbackend.Open("redis+sentinel://"+sentinels+"/?master="+master+"&dial_timeout=500ms", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return b.Init(ctx)
	}
	err := init(sn.addr, "nosuchmaster")
	if !errors.Is(err, redisbackend.ErrInvalidInput) || !anarchon.IsPermanent(err) || !strings.Contains(err.Error(), `"nosuchmaster"`) {
		t.Errorf("unknown master: %v; want a permanent ErrInvalidInput naming it", err)
	}
	err = init(sn.addr+","+closed, "nosuchmaster")
	if err == nil || errors.Is(err, redisbackend.ErrInvalidInput) || anarchon.IsPermanent(err) {
		t.Errorf("unknown master, one Sentinel unreachable: %v; want a transient error", err)
	}
	if err := init(sn.addr, sentinelMaster); err != nil {
		t.Errorf("the right master: %v", err)
	}
}
