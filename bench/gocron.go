package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/go-co-op/gocron/v2"
	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
)

// RedisLocker is a gocron.Locker on Redis that works the way
// gocron-redis-lock's does: the lock key is the job's name, taken with
// SET NX PX (one try, expiry 8 s, redsync's default) before a run and
// deleted after it, if still held by the same token.
type RedisLocker struct {
	Client *redis.Client
	Prefix string        // key prefix
	Expiry time.Duration // 0 means 8 s
}

var errLocked = errors.New("bench: lock held by another instance")

var unlockScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

// Lock takes the lock named key or returns an error (gocron then skips
// the run).
func (l *RedisLocker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	exp := l.Expiry
	if exp == 0 {
		exp = 8 * time.Second
	}
	tok := rand.Text()
	ok, err := l.Client.SetNX(ctx, l.Prefix+key, tok, exp).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errLocked
	}
	return &redisLock{l: l, key: l.Prefix + key, token: tok}, nil
}

type redisLock struct {
	l          *RedisLocker
	key, token string
}

// Unlock deletes the lock if this run still holds it.
func (k *redisLock) Unlock(ctx context.Context) error {
	return unlockScript.Run(context.WithoutCancel(ctx), k.l.Client, []string{k.key}, k.token).Err()
}

// OffsetClock is a clockwork.Clock whose Now is the real time moved by
// Offset; timers and sleeps are real. gocron computes its next run from
// Now and waits with AfterFunc, so an instance with this clock runs its
// jobs as a machine whose clock is wrong by Offset would.
type OffsetClock struct {
	clockwork.Clock
	Offset time.Duration
}

// Now returns the real time plus Offset.
func (c OffsetClock) Now() time.Time { return c.Clock.Now().Add(c.Offset) }

// Since is Now() - t.
func (c OffsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Until is t - Now().
func (c OffsetClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// runCounter counts runs per (job, slot) identity.
type runCounter struct {
	mu   sync.Mutex
	runs map[string]int
	from time.Time // runs before this real time are not counted
	to   time.Time
}

func (c *runCounter) add(job string, slot time.Time, at time.Time) {
	if at.Before(c.from) || !at.Before(c.to) {
		return
	}
	c.mu.Lock()
	c.runs[job+"@"+slot.UTC().Format(time.RFC3339)]++
	c.mu.Unlock()
}

// DupResult is one row of the duplicate-runs table.
type DupResult struct {
	Scheduler  string // "anarchon" or "gocron"
	Offset     time.Duration
	Slots      int // distinct (job, slot) that ran in the window
	Runs       int
	Duplicates int // runs beyond the first per slot
}

// Per1000 is duplicates per 1,000 slots.
func (r DupResult) Per1000() float64 {
	if r.Slots == 0 {
		return 0
	}
	return float64(r.Duplicates) * 1000 / float64(r.Slots)
}

func (c *runCounter) result(name string, off time.Duration) DupResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := DupResult{Scheduler: name, Offset: off, Slots: len(c.runs)}
	for _, n := range c.runs {
		r.Runs += n
		r.Duplicates += n - 1
	}
	return r
}

// DupConfig sets up [Duplicates].
type DupConfig struct {
	Jobs      int           // jobs per instance, each every second
	Instances int           // 3
	Stagger   time.Duration // between instance starts, 20 s
	Window    time.Duration // measured after the last instance started
	Offset    time.Duration // the last instance's clock offset (0: none)
}

// Duplicates runs cfg.Instances anarchon instances (Redis backend, default
// options: leases) and as many gocron instances (per-second cron jobs,
// RedisLocker) side by side, started cfg.Stagger apart, the last with its
// clock moved by cfg.Offset, and counts runs per slot during cfg.Window
// after the last start. anarchon's slot is Run.Slot; gocron has no slot,
// so its run time is rounded to the nearest second (real clock).
func Duplicates(ctx context.Context, addr string, cfg DupConfig) ([]DupResult, error) {
	prefix := fmt.Sprintf("dup%d", uniq())
	start := time.Now()
	lastStart := start.Add(time.Duration(cfg.Instances-1) * cfg.Stagger)
	an := &runCounter{runs: map[string]int{}, from: lastStart.Add(time.Second), to: lastStart.Add(time.Second + cfg.Window)}
	gc := &runCounter{runs: map[string]int{}, from: an.from, to: an.to}
	var stops []func()
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	for i := range cfg.Instances {
		if i > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(i) * cfg.Stagger)))
		}
		var off time.Duration
		if i == cfg.Instances-1 {
			off = cfg.Offset
		}
		// anarchon
		be, err := redisbackend.Open("redis://"+addr, &redisbackend.Options{Prefix: prefix})
		if err != nil {
			return nil, err
		}
		s := anarchon.New(be, &anarchon.Options{InstanceID: fmt.Sprintf("a%d", i), Logger: quietLogger(), Clock: anarchon.OffsetClock{Offset: off}})
		for j := range cfg.Jobs {
			name := fmt.Sprintf("job%03d", j)
			if err := s.Every(name, time.Second, func(_ context.Context, run *anarchon.Run) error {
				an.add(run.Job, run.Slot, time.Now())
				return nil
			}, nil); err != nil {
				return nil, err
			}
		}
		if err := s.Start(ctx); err != nil {
			return nil, err
		}
		stops = append(stops, func() {
			sctx, cancel := deadline(10 * time.Second)
			_ = s.Stop(sctx)
			cancel()
			_ = be.Close(context.Background())
		})
		// gocron
		client := redis.NewClient(&redis.Options{Addr: addr})
		gs, err := gocron.NewScheduler(
			gocron.WithDistributedLocker(&RedisLocker{Client: client, Prefix: prefix + "gocron:"}),
			gocron.WithClock(OffsetClock{Clock: clockwork.NewRealClock(), Offset: off}),
			gocron.WithLocation(time.UTC),
		)
		if err != nil {
			return nil, err
		}
		for j := range cfg.Jobs {
			name := fmt.Sprintf("job%03d", j)
			_, err := gs.NewJob(gocron.CronJob("* * * * * *", true), gocron.NewTask(func() {
				now := time.Now()
				gc.add(name, now.Round(time.Second), now)
			}), gocron.WithName(name))
			if err != nil {
				return nil, err
			}
		}
		gs.Start()
		stops = append(stops, func() { _ = gs.Shutdown(); _ = client.Close() })
	}
	time.Sleep(time.Until(an.to.Add(500 * time.Millisecond)))
	return []DupResult{an.result("anarchon", cfg.Offset), gc.result("gocron", cfg.Offset)}, nil
}

// RedisLoad is CPU and memory of one instance running jobs every second
// on Redis.
type RedisLoad struct {
	Scheduler  string
	Jobs       int
	Fired      int64
	CPU        time.Duration
	Wall       time.Duration
	RSS        int64
	Goroutines int
	// The slots of the window, anarchon only (gocron's runs carry no
	// slot): Slots is the slots of every job due in the window (Jobs per
	// second), SlotsRun those with a run (by Run.Slot, counted a second
	// after the window so that its last slot's runs are in), SlotRuns the
	// runs of them (SlotRuns - SlotsRun: runs beyond one per slot), and
	// LateP99 each second's p99 of start − slot, in order (-1: no run).
	Slots, SlotsRun, SlotRuns int64
	LateP99                   []time.Duration
}

// slotLedger counts anarchon's runs by job and slot, with each run's start
// lateness, for RedisLoad's slot columns.
type slotLedger struct {
	mu   sync.Mutex
	runs map[slotKey]int
	late map[int64][]time.Duration // by slot, Unix ms
}

// slotKey is a job's index and a slot, in as few bytes as will do: the
// ledger's memory counts in the instance's RSS (about 4 MiB at 10,000
// jobs for 14 s).
type slotKey struct {
	job  int32
	slot int64
}

func (l *slotLedger) add(job int, run *anarchon.Run, started time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := slotKey{int32(job), run.Slot.UnixMilli()}
	l.runs[k]++
	l.late[k.slot] = append(l.late[k.slot], started.Sub(run.Slot))
}

// window fills load's slot fields for the slots in [from, to) (Unix ms,
// whole seconds).
func (l *slotLedger) window(load *RedisLoad, from, to int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, n := range l.runs {
		if k.slot >= from && k.slot < to {
			load.SlotsRun++
			load.SlotRuns += int64(n)
		}
	}
	for s := from; s < to; s += 1000 {
		load.Slots += int64(load.Jobs)
		late := slices.Clone(l.late[s])
		p99 := time.Duration(-1) // a second whose slots none ran
		if len(late) > 0 {
			slices.Sort(late)
			p99 = Percentile(late, 99)
		}
		load.LateP99 = append(load.LateP99, p99)
	}
}

// MeasureRedisLoad runs jobs jobs every second on one instance of
// anarchon (which = "anarchon": Redis backend, default options) or gocron
// (which = "gocron": per-second cron jobs with RedisLocker), warms up for
// two seconds and measures CPU (getrusage), fired runs and RSS over d.
func MeasureRedisLoad(ctx context.Context, addr, which string, jobs int, d time.Duration) (RedisLoad, error) {
	prefix := fmt.Sprintf("load%d", uniq())
	var fired atomic.Int64
	var stop func()
	var ledger *slotLedger
	switch which {
	case "anarchon":
		ledger = &slotLedger{runs: make(map[slotKey]int, 2*jobs*int(d/time.Second+4)), late: map[int64][]time.Duration{}}
		be, err := redisbackend.Open("redis://"+addr, &redisbackend.Options{Prefix: prefix})
		if err != nil {
			return RedisLoad{}, err
		}
		s := anarchon.New(be, &anarchon.Options{InstanceID: "load", Logger: quietLogger()})
		for j := range jobs {
			if err := s.Every(fmt.Sprintf("job%05d", j), time.Second, func(_ context.Context, run *anarchon.Run) error {
				fired.Add(1)
				ledger.add(j, run, time.Now())
				return nil
			}, nil); err != nil {
				return RedisLoad{}, err
			}
		}
		if err := s.Start(ctx); err != nil {
			return RedisLoad{}, err
		}
		stop = func() {
			sctx, cancel := deadline(10 * time.Second)
			_ = s.Stop(sctx)
			cancel()
			_ = be.Close(context.Background())
		}
	case "gocron":
		client := redis.NewClient(&redis.Options{Addr: addr})
		gs, err := gocron.NewScheduler(gocron.WithDistributedLocker(&RedisLocker{Client: client, Prefix: prefix}), gocron.WithLocation(time.UTC))
		if err != nil {
			return RedisLoad{}, err
		}
		for j := range jobs {
			if _, err := gs.NewJob(gocron.CronJob("* * * * * *", true), gocron.NewTask(func() { fired.Add(1) }),
				gocron.WithName(fmt.Sprintf("job%05d", j))); err != nil {
				return RedisLoad{}, err
			}
		}
		gs.Start()
		stop = func() { _ = gs.Shutdown(); _ = client.Close() }
	default:
		return RedisLoad{}, fmt.Errorf("bench: unknown scheduler %q", which)
	}
	defer stop()
	d = max(d.Round(time.Second), time.Second)
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(2500 * time.Millisecond)))
	f0, c0, t0 := fired.Load(), CPUTime(), time.Now()
	time.Sleep(d)
	load := RedisLoad{Scheduler: which, Jobs: jobs, Fired: fired.Load() - f0, CPU: CPUTime() - c0, Wall: time.Since(t0),
		RSS: RSS(), Goroutines: runtime.NumGoroutine()}
	if ledger != nil {
		// The slots due in the window: t0 is half a second past a whole
		// second, so the first is the next whole second.
		from := t0.Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(t0.Add(d + time.Second)))
		ledger.window(&load, from.UnixMilli(), from.Add(d).UnixMilli())
	}
	return load, nil
}
