package anarchontest

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// schedWait bounds, in real time, each wait of the scheduler tests for
// slots to run.
const schedWait = 60 * time.Second

// schedTick is the interval of the scheduler tests' jobs.
const schedTick = 500 * time.Millisecond

// ranLedger counts handler runs per job, slot and attempt, as the jobs'
// own evidence. A leased slot may run again under a higher attempt when
// its holder lost the lease (SPEC §6, a takeover fenced by Run.Attempt);
// one attempt of one slot must never run twice. Manual runs (Trigger,
// RunNow) are counted under job+manualRuns.
type ranLedger struct {
	mu   sync.Mutex
	runs map[string]map[[2]int64]int
}

// manualRuns keeps a job's manual runs apart from its scheduled slots in
// a ranLedger: the triggered job's hourly schedule fires a slot of its
// own when a test runs across the top of an hour (a CI run at 17:00 UTC
// did, and counted that slot as a second triggered run).
const manualRuns = " (manual)"

func (l *ranLedger) handler(job string) anarchon.Handler {
	return func(ctx context.Context, run *anarchon.Run) error {
		key := job
		if run.Manual {
			key += manualRuns
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.runs[key] == nil {
			l.runs[key] = map[[2]int64]int{}
		}
		l.runs[key][[2]int64{run.Slot.UnixMilli(), int64(run.Attempt)}]++
		return nil
	}
}

// slots returns how many slots of job ran, and the most runs of one
// attempt of one slot.
func (l *ranLedger) slots(job string) (n, most int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[int64]bool{}
	for k, c := range l.runs[job] {
		if !seen[k[0]] {
			seen[k[0]] = true
			n++
		}
		most = max(most, c)
	}
	return n, most
}

// waitFor polls cond every schedTick until it holds or schedWait passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(schedWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", schedWait, what)
		}
		time.Sleep(schedTick)
	}
}

// testControlSchedulers runs schedulers on the store (SPEC §12's
// acceptance): a job paused through one handle runs no slot on three
// schedulers while another job runs; after the resume it runs each slot
// once; 50 concurrent Trigger calls with one key across the three run
// their job once. Plain and, with a RunStore, leased jobs.
func testControlSchedulers(t *testing.T, h Harness, hasLeases bool) {
	s := open(t, h, 3)
	l := &ranLedger{runs: map[string]map[[2]int64]int{}}
	paused := []string{jobName("sched-paused-plain")}
	opts := map[string]*anarchon.JobOptions{paused[0]: {NoLease: true}}
	if hasLeases {
		paused = append(paused, jobName("sched-paused-lease"))
		opts[paused[1]] = &anarchon.JobOptions{Lease: anarchon.DefaultLease}
	}
	normal, trig := jobName("sched-normal"), jobName("sched-trig")
	for _, j := range paused {
		s.setPaused(0, anarchon.PauseInput{Job: j, Paused: true, By: "suite", Reason: "acceptance"})
	}
	var ss []*anarchon.Scheduler
	for i := range 3 {
		sc := anarchon.New(s.b(i), &anarchon.Options{InstanceID: fmt.Sprintf("sched-%d", i), PollInterval: 100 * time.Millisecond, RegistryTTL: -1, Logger: slog.New(slog.DiscardHandler)})
		for _, j := range paused {
			if err := sc.Every(j, schedTick, l.handler(j), opts[j]); err != nil {
				t.Fatal(err)
			}
		}
		if err := sc.Every(normal, schedTick, l.handler(normal), &anarchon.JobOptions{NoLease: true}); err != nil {
			t.Fatal(err)
		}
		if err := sc.Every(trig, time.Hour, l.handler(trig), nil); err != nil {
			t.Fatal(err)
		}
		if err := sc.Start(s.ctx); err != nil {
			t.Fatalf("Start %d: %v", i, err)
		}
		ss = append(ss, sc)
	}
	defer func() {
		for _, sc := range ss {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = sc.Stop(ctx)
			cancel()
		}
	}()
	waitFor(t, "6 slots of the running job", func() bool { n, _ := l.slots(normal); return n >= 6 })
	for _, j := range paused {
		if n, _ := l.slots(j); n != 0 {
			t.Errorf("%s: %d slots ran while paused", j, n)
		}
		if st, err := ss[2].JobState(s.ctx, j); err != nil || !st.Paused || st.By != "suite" {
			t.Errorf("JobState(%s) = %+v, %v", j, st, err)
		}
		waitFor(t, "paused records in "+j+"'s history", func() bool {
			for _, r := range s.history(1, j, 0) {
				if r.Status == anarchon.StatusPaused {
					return true
				}
			}
			return false
		})
	}
	if _, most := l.slots(normal); most != 1 {
		t.Errorf("an attempt of a slot of the running job ran %d times", most)
	}
	for _, j := range paused {
		if _, err := ss[1].Resume(s.ctx, j, anarchon.ResumeOptions{}); err != nil {
			t.Fatalf("Resume: %v", err)
		}
	}
	for _, j := range paused {
		waitFor(t, "3 slots of "+j+" after the resume", func() bool { n, _ := l.slots(j); return n >= 3 })
		if _, most := l.slots(j); most != 1 {
			t.Errorf("%s: an attempt of a slot ran %d times after the resume", j, most)
		}
	}

	// Trigger: 50 calls, one key, spread over the three schedulers.
	const calls = 50
	recs := make([]anarchon.TriggerRecord, calls)
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(s.ctx, schedWait)
			defer cancel()
			recs[i], errs[i] = ss[i%3].Trigger(ctx, trig, "once")
		})
	}
	wg.Wait()
	for i := range calls {
		if errs[i] != nil {
			t.Fatalf("Trigger %d: %v", i, errs[i])
		}
		if recs[i].Token != recs[0].Token || recs[i].State != anarchon.TriggerDone || recs[i].Status != anarchon.StatusSuccess {
			t.Errorf("Trigger %d = %+v, want %+v", i, recs[i], recs[0])
		}
	}
	if n, most := l.slots(trig + manualRuns); n != 1 || most != 1 {
		t.Errorf("50 triggers with one key ran the job on %d slots (most %d per slot), want once", n, most)
	}
	found := false
	for _, r := range s.history(0, trig, 0) {
		if r.Token == recs[0].Token {
			found = true
			if !r.Manual || r.Status != anarchon.StatusSuccess || r.InstanceID != recs[0].InstanceID {
				t.Errorf("history record of the triggered run = %+v", r)
			}
		}
	}
	if !found {
		t.Errorf("no history record under the trigger's token %s", recs[0].Token)
	}
}
