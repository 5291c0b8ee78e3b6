package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon"
)

// Failover scenarios.
const (
	ScenarioCrash    = "crash"    // the holder stops heartbeating (every store call fails)
	ScenarioHandOver = "handover" // the holder calls Stop with an expired context
)

// FailoverTrial is one measured takeover.
type FailoverTrial struct {
	Gap         time.Duration // crash or Stop call → the backup's handler start
	AfterExpiry time.Duration // crash only: backup start − (last good heartbeat + lease)
	Watched     bool          // the backup's scheduler saw a Watcher
	// Redone counts the trials run again before this one because the
	// takeover was settled skipped: a later slot of the job, won after
	// the crashed run's lease ran out, held a live lease when the
	// backup took over (the default overlap policy, SPEC §6).
	Redone int
}

// FailoverConfig sets the lease and the trials of [Failover].
type FailoverConfig struct {
	Lease  time.Duration // the job's lease; heartbeats every Lease/3
	Trials int
	Watch  bool // false hides the backend's Watcher: the backup polls
}

// ErrNoTakeover is returned when the backup did not start the run in time.
var ErrNoTakeover = errors.New("bench: backup did not take the run over")

// failoverPeriod is the interval of Failover's job. It is not the poll
// interval (1 s): a backup that polls asks again one PollInterval after
// its stand-by answer, which comes just after a slot, so with a job every
// second each poll met the next slot's run, live for the few ms its
// instant handler took, and the takeover was skipped beside it (SPEC §6,
// overlap) in trial after trial on the memory store.
const failoverPeriod = 2 * time.Second

// Failover runs two instances A and B, each on its own backend, with a
// leased job every failoverPeriod under the default overlap policy (skip). The
// first slot's first handler blocks (the later slots' return at once);
// then the holder crashes (scenario crash: after a successful heartbeat
// every call of its backend fails, as if the process died) or stops
// (scenario handover: Stop with an expired context, which releases the
// lease), and the time until the other instance's handler starts is
// measured. The backup polls every PollInterval (1 s, the default) or is
// woken by the store's Watcher. A trial whose takeover was settled
// skipped (a later slot's run held a live lease then) is run again, at
// most Trials times in a row, and counted in FailoverTrial.Redone.
func Failover(ctx context.Context, st *Store, scenario string, cfg FailoverConfig) ([]FailoverTrial, error) {
	var out []FailoverTrial
	redone := 0
	for len(out) < cfg.Trials {
		t, err := failoverTrial(ctx, st, scenario, cfg)
		if errors.Is(err, errTakeoverSkipped) && redone < cfg.Trials {
			redone++
			continue
		}
		if err != nil {
			return out, err
		}
		t.Redone, redone = redone, 0
		out = append(out, t)
	}
	return out, nil
}

// errTakeoverSkipped: the backup won the slot but settled it skipped.
var errTakeoverSkipped = errors.New("bench: the takeover was skipped beside a later slot's run")

type started struct {
	instance string
	attempt  int
	slot     time.Time
	at       time.Time
}

func failoverTrial(ctx context.Context, st *Store, scenario string, cfg FailoverConfig) (FailoverTrial, error) {
	job := fmt.Sprintf("failover-%d", uniq())
	starts := make(chan started, 64)
	skips := make(chan time.Time, 64) // slots whose takeover was settled skipped
	var firstSlot atomic.Int64
	h := func(hctx context.Context, run *anarchon.Run) error {
		select {
		case starts <- started{run.InstanceID, run.Attempt, run.Slot, time.Now()}:
		default: // later slots, once the trial has its takeover
		}
		ms := run.Slot.UnixMilli()
		if run.Attempt == 1 && (firstSlot.CompareAndSwap(0, ms) || firstSlot.Load() == ms) {
			<-hctx.Done() // the holder is busy until it loses the run
		}
		return nil
	}
	onEvent := func(e anarchon.Event) {
		if e.Kind == anarchon.EventSlotSkipped && e.Attempt > 1 {
			select {
			case skips <- e.Slot:
			default:
			}
		}
	}
	wraps := map[string]*Wrapped{}
	scheds := map[string]*anarchon.Scheduler{}
	for _, id := range []string{"A", "B"} {
		be, err := st.Open(ctx)
		if err != nil {
			return FailoverTrial{}, err
		}
		w, sb := Wrap(be, !cfg.Watch)
		s := anarchon.New(sb, &anarchon.Options{InstanceID: id, Logger: quietLogger(), OnEvent: onEvent})
		if err := s.Every(job, failoverPeriod, h, &anarchon.JobOptions{Lease: cfg.Lease}); err != nil {
			return FailoverTrial{}, err
		}
		wraps[id], scheds[id] = w, s
	}
	for _, s := range scheds {
		if err := s.Start(ctx); err != nil {
			return FailoverTrial{}, err
		}
	}
	defer func() {
		for _, s := range scheds {
			sctx, cancel := deadline(5 * time.Second)
			_ = s.Stop(sctx)
			cancel()
		}
	}()
	var first started
	select {
	case first = <-starts:
	case <-time.After(5 * time.Second):
		return FailoverTrial{}, errors.New("bench: no first run")
	}
	holder := wraps[first.instance]
	backup := wraps["A"]
	if first.instance == "A" {
		backup = wraps["B"]
	}
	// Act only once the backup stands by (its claim was answered
	// "running"), so the measurement starts from a waiting backup.
	for waitUntil := time.Now().Add(cfg.Lease); backup.StandingBy() == 0; {
		if time.Now().After(waitUntil) {
			return FailoverTrial{}, errors.New("bench: the backup never stood by")
		}
		time.Sleep(time.Millisecond)
	}
	var t0 time.Time
	var expiry time.Time
	switch scenario {
	case ScenarioCrash:
		// Crash just after a good heartbeat, so the lease has its full
		// length left, as when a process dies at a random moment.
		deadlineAt := time.Now().Add(cfg.Lease)
		for holder.LastHeartbeat().IsZero() && time.Now().Before(deadlineAt) {
			time.Sleep(time.Millisecond)
		}
		holder.Crash()
		t0 = time.Now()
		if hb := holder.LastHeartbeat(); !hb.IsZero() {
			expiry = hb.Add(cfg.Lease)
		}
	case ScenarioHandOver:
		sctx, cancel := context.WithCancel(ctx)
		cancel()
		t0 = time.Now()
		go func() { _ = scheds[first.instance].Stop(sctx) }()
	default:
		return FailoverTrial{}, fmt.Errorf("bench: unknown scenario %q", scenario)
	}
	timeout := time.After(cfg.Lease + 5*time.Second)
	for {
		select {
		case s := <-starts:
			if s.slot.Equal(first.slot) && s.instance != first.instance {
				tr := FailoverTrial{Gap: s.at.Sub(t0), Watched: backup.HasWatcher()}
				if !expiry.IsZero() {
					tr.AfterExpiry = s.at.Sub(expiry)
				}
				return tr, nil
			}
		case slot := <-skips:
			if slot.Equal(first.slot) {
				return FailoverTrial{}, errTakeoverSkipped
			}
		case <-timeout:
			return FailoverTrial{}, fmt.Errorf("%w (%s, %s, watch %v)", ErrNoTakeover, st.Name, scenario, cfg.Watch)
		}
	}
}
