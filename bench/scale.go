package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// idleInterval is the interval of jobs that must not fire during a
// measurement: slots are aligned to the epoch, 1000 h apart.
const idleInterval = 1000 * time.Hour

// Load is a steady-state measurement of one scheduler.
type Load struct {
	Jobs, Active int
	Mode         TimingMode
	Fired        int64         // handlers run during the measurement
	CPU          time.Duration // process CPU (user+system) during the measurement
	Wall         time.Duration
	RSS          int64 // at the end, bytes
	Goroutines   int   // at the end
	StopTimedOut bool  // Stop's 10 s deadline passed with handlers still queued
}

// CPUPerSecond is CPU time per wall second.
func (l Load) CPUPerSecond() time.Duration {
	return time.Duration(float64(l.CPU) / l.Wall.Seconds())
}

// CPUPerFired is CPU time per fired slot.
func (l Load) CPUPerFired() time.Duration {
	if l.Fired == 0 {
		return 0
	}
	return l.CPU / time.Duration(l.Fired)
}

// MeasureLoad registers jobs jobs on a scheduler over the memory store,
// active of them every second and the rest idle, warms up for two seconds
// and then measures CPU and fired slots for d. The store forgets claims
// after 2 minutes and keeps one history record per job, so its own growth
// stays small.
//
// Mode ModeNull uses [NullBackend] instead of the memory store (plain
// path), to separate the scheduler's cost from the store's. The
// measurement starts half a second after a whole second and lasts whole
// seconds, so every second's slots are counted once.
func MeasureLoad(ctx context.Context, jobs, active int, mode TimingMode, d time.Duration) (Load, error) {
	var be anarchon.Backend = NullBackend{}
	if mode != ModeNull {
		mem := membackend.New(&membackend.Options{DedupeWindow: 2 * time.Minute})
		defer mem.Close(context.Background())
		be = mem
	}
	d = max(d.Round(time.Second), time.Second)
	s := anarchon.New(be, &anarchon.Options{InstanceID: "load", Logger: quietLogger()})
	var fired atomic.Int64
	h := func(context.Context, *anarchon.Run) error { fired.Add(1); return nil }
	opts := &anarchon.JobOptions{NoLease: mode == ModePlain, HistorySize: 1}
	for i := range jobs {
		iv := time.Second
		if i >= active {
			iv = idleInterval
		}
		if err := s.Every(fmt.Sprintf("l%06d", i), iv, h, opts); err != nil {
			return Load{}, err
		}
	}
	if err := s.Start(ctx); err != nil {
		return Load{}, err
	}
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(2500 * time.Millisecond)))
	f0, c0, t0 := fired.Load(), CPUTime(), time.Now()
	time.Sleep(d)
	l := Load{Jobs: jobs, Active: active, Mode: mode, Fired: fired.Load() - f0, CPU: CPUTime() - c0, Wall: time.Since(t0),
		RSS: RSS(), Goroutines: runtime.NumGoroutine()}
	sctx, cancel := deadline(10 * time.Second)
	defer cancel()
	if err := s.Stop(sctx); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return l, err
		}
		l.StopTimedOut = true
	}
	return l, nil
}

// JobMemory is the heap cost of registered jobs.
type JobMemory struct {
	Jobs                int
	RegisteredPerJob    float64 // heap bytes per job after Add, before Start
	StartedPerJob       float64 // heap bytes per job after Start, the memory store's per-job state included
	GoroutinesBefore    int     // before Start
	GoroutinesAfter     int     // after Start, all jobs idle
	GoroutinesPerKJobs  float64 // extra goroutines per 1000 jobs
	HeapAfterStartBytes uint64
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// MeasureJobMemory registers jobs idle jobs (default options, which use
// leases on the memory store) and reports the heap delta per job
// (runtime.MemStats.HeapAlloc after two GCs) and the goroutine count.
func MeasureJobMemory(ctx context.Context, jobs int) (JobMemory, error) {
	mem := membackend.New(nil)
	defer mem.Close(context.Background())
	h0 := heapAlloc()
	s := anarchon.New(mem, &anarchon.Options{InstanceID: "mem", Logger: quietLogger()})
	h := func(context.Context, *anarchon.Run) error { return nil }
	for i := range jobs {
		if err := s.Every(fmt.Sprintf("m%06d", i), idleInterval, h, nil); err != nil {
			return JobMemory{}, err
		}
	}
	h1 := heapAlloc()
	g0 := runtime.NumGoroutine()
	if err := s.Start(ctx); err != nil {
		return JobMemory{}, err
	}
	time.Sleep(100 * time.Millisecond)
	h2 := heapAlloc()
	g1 := runtime.NumGoroutine()
	jm := JobMemory{
		Jobs:             jobs,
		RegisteredPerJob: float64(int64(h1)-int64(h0)) / float64(jobs),
		StartedPerJob:    float64(int64(h2)-int64(h0)) / float64(jobs),
		GoroutinesBefore: g0, GoroutinesAfter: g1,
		GoroutinesPerKJobs:  float64(g1-g0) * 1000 / float64(jobs),
		HeapAfterStartBytes: h2,
	}
	sctx, cancel := deadline(10 * time.Second)
	defer cancel()
	err := s.Stop(sctx)
	runtime.KeepAlive(s)
	return jm, err
}
