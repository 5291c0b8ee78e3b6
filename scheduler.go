package anarchon

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon/internal/coalesce"
	"github.com/anarchon/anarchon/internal/cron"
	"github.com/anarchon/anarchon/internal/runner"
)

// Options configure a Scheduler. A nil *Options, and each zero field, means
// the default stated on the field. A field out of its range is refused:
// Start, and Add for every job, return a *ValidationError whose Field
// names it ("Options.PollInterval"), with CodeNegativeDuration for a
// negative duration and CodeBadOption otherwise.
type Options struct {
	// InstanceID names this instance in claims and history. Defaults to
	// "<hostname>-<pid>". It must be valid UTF-8 without control
	// characters or blanks around it: it is printed in every log line,
	// history record and status table, where " web-1" reads as "web-1"
	// and a newline breaks the line. Give every instance its own: with an instance
	// registry, Start warns when a live record has the ID already (another
	// process, or a previous run that was killed), and the renewals warn
	// when another process writes under it. Claims stay exactly-once
	// (tokens hold slots), but history cannot tell the two apart.
	InstanceID string
	// Logger receives the scheduler's logs. Defaults to slog.Default().
	// Besides its start, stop and store trouble, the scheduler logs each
	// run whose handler failed: WARN "run failed" (attributes job, slot,
	// attempt, duration, error, and for a job with Retry "retry": whether
	// a further attempt follows, which and when, or why not, as
	// Event.Reason says it), ERROR "run panicked" (and stack), INFO
	// for a run Stop cut short, INFO "slot to be retried" when a retry
	// follows; a backup's win of a slot another instance held (INFO "slot
	// taken over from another instance"); a lost or replaced lease
	// ("lease lost"); and each slot not
	// run ("slot not run", "slot missed: too late to run"). A successful
	// run logs nothing: OnEvent's EventRunEnd reports every run.
	Logger *slog.Logger
	// Clock is the local clock. Defaults to SystemClock.
	Clock Clock
	// PollInterval is how often an instance standing by as a backup asks the
	// store again when the backend has no Watcher (or its watch broke), and
	// how soon a failed watch is retried. It is also how often a started
	// scheduler looks for trigger requests (at once too with a Watcher),
	// how often an OverlapBufferOne slot looks whether the earlier run
	// ended, and the first wait of Trigger and WaitTrigger's polls. The
	// backups polling at one instant (a burst's) ask in one
	// RunBatchClaimer call per BatchSize where the store has it.
	// Defaults to 1 s. A positive value below MinPollInterval is refused:
	// the backups would ask the store in a busy loop.
	PollInterval time.Duration
	// ClockSyncInterval is how often the offset to the store's clock is
	// measured, when the backend has a ServerClock. Defaults to 1 minute.
	// A positive value below MinPollInterval is refused, as PollInterval's.
	ClockSyncInterval time.Duration
	// ClockSkewWarning is the offset to the store's clock above which a
	// warning is logged. Defaults to 1 s. Negative is refused.
	ClockSkewWarning time.Duration
	// OnEvent, if set, is called synchronously for every Event (metrics,
	// tracing), from the goroutine of the claim, run or store call it
	// reports: many at once, so it must be safe for concurrent use. It
	// must be quick and must not call back into the Scheduler.
	OnEvent func(Event)
	// Tracer, if set, is told when each claim and each run begins and
	// ends, with their contexts (tracing; see Tracer). Defaults to none.
	Tracer Tracer
	// HostZoneinfo loads cron jobs' zones from the host's tz database
	// ($ZONEINFO, then the system's files) instead of the database embedded
	// in anarchon (see LoadLocation); a zone the host lacks still comes from
	// the embedded one. Instances whose hosts have different tzdata releases
	// may then compute different slots. Defaults to false.
	HostZoneinfo bool
	// RegistryTTL is the TTL of this instance's record in the instance
	// registry, when the backend implements InstanceRegistry (SPEC §10):
	// Start registers the instance, the record is renewed every
	// RegistryTTL/3, Stop marks it stopped (unless another process under
	// the same ID wrote it last, SPEC §10), and an instance that stops
	// renewing is listed dead RegistryTTL after its last renewal, by the
	// store's clock. Negative disables registration. Defaults to
	// DefaultRegistryTTL (15 s); values below 3 ms count as 3 ms.
	RegistryTTL time.Duration
	// BatchSize is the most claims of slots due together (at one instant,
	// or within BatchWindow of the first) that the scheduler sends to
	// the store in one call, when the backend is a BatchClaimer (plain
	// claims) or a RunBatchClaimer (lease claims); each slot is still
	// answered as a single claim (SPEC §4, batches). A group larger than
	// BatchSize is cut into the fewest batches, as even as possible. 1
	// sends every claim alone. Without those abilities the scheduler
	// claims one slot per call whatever BatchSize is. It bounds the
	// heartbeats sent in one HeartbeatBatcher call the same way (those due
	// within BatchWindow of each other go together; 1 sends each alone).
	// Defaults to DefaultBatchSize (256). Negative is refused.
	BatchSize int
}

// MinPollInterval is the shortest Options.PollInterval and
// Options.ClockSyncInterval: each wait is a store call, and shorter waits
// (a nanosecond given for a second) would turn them into a busy loop.
const MinPollInterval = time.Millisecond

// check returns the ValidationError for the first field of o out of its
// range, nil if none is. Zero fields are defaults and always good.
func (o *Options) check() *ValidationError {
	if o == nil {
		return nil
	}
	bad := func(field string, code Code, reason string) *ValidationError {
		return &ValidationError{Field: "Options." + field, Code: code, Reason: reason}
	}
	if o.InstanceID != "" {
		if reason := textError(o.InstanceID, "ID"); reason != "" {
			return bad("InstanceID", CodeBadOption, fmt.Sprintf("%s: %q", reason, shorten(o.InstanceID)))
		}
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"PollInterval", o.PollInterval}, {"ClockSyncInterval", o.ClockSyncInterval},
		{"ClockSkewWarning", o.ClockSkewWarning},
	} {
		if d.v < 0 {
			return bad(d.field, CodeNegativeDuration, fmt.Sprintf("%v is negative", d.v))
		}
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"PollInterval", o.PollInterval}, {"ClockSyncInterval", o.ClockSyncInterval}} {
		if d.v > 0 && d.v < MinPollInterval {
			return bad(d.field, CodeBadOption, fmt.Sprintf("%v is below the floor of %v (MinPollInterval): every wait asks the store", d.v, MinPollInterval))
		}
	}
	if o.BatchSize < 0 {
		return bad("BatchSize", CodeBadOption, fmt.Sprintf("%d is negative", o.BatchSize))
	}
	return nil
}

// BatchWindow is how long after a slot comes due the scheduler waits for
// more slots to come due, to claim them in one batch with it (see
// Options.BatchSize): a slot starts at most this much later than alone.
// Slots due at the same instant (jobs of one schedule without jitter) are
// gathered at once, without waiting.
const BatchWindow = 2 * time.Millisecond

// PrepareLead is how long before a group of slots is due the scheduler
// takes it from its timer queue and builds its claims (SPEC §4, "Prepared
// ahead"): at the top of a minute, taking 10,000 jobs' slots and building
// their attempts costs tens of milliseconds of CPU, which would otherwise
// come between the slot and its first claim, on a machine whose every
// process wakes at that instant. The claims are still sent only once
// every slot of the group is due; a job removed or replaced meanwhile is
// left out when they are.
const PrepareLead = 100 * time.Millisecond

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.InstanceID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "anarchon"
		}
		r.InstanceID = host + "-" + strconv.Itoa(os.Getpid())
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.Clock == nil {
		r.Clock = SystemClock{}
	}
	// Out-of-range values are refused (check); they get the defaults
	// here only so that a refused scheduler is still safe to call.
	if r.PollInterval <= 0 {
		r.PollInterval = time.Second
	}
	if r.ClockSyncInterval <= 0 {
		r.ClockSyncInterval = time.Minute
	}
	if r.ClockSkewWarning <= 0 {
		r.ClockSkewWarning = time.Second
	}
	if r.BatchSize <= 0 {
		r.BatchSize = DefaultBatchSize
	}
	return r
}

// Scheduler runs jobs on one instance, coordinating with the other instances
// through a shared Backend. Create it with New, add jobs with Every, Cron or
// Add, then Start it. Its methods are safe for concurrent use.
type Scheduler struct {
	backend    Backend
	runs       RunStore           // nil without leases
	watcher    Watcher            // nil without a watch
	sclock     ServerClock        // nil without a store clock
	recorder   ClaimRecorder      // nil if Claim records history itself
	records    ClaimRecordBatcher // the recorder's batches; nil without them or with BatchSize 1
	checker    JobChecker         // nil if the backend checks no job
	finisher   ResultFinisher     // nil without leases or without the one-call finish
	replacer   Replacer           // nil without leases or without Replace (OverlapReplace)
	batcher    BatchClaimer       // nil without plain claims in batches
	runBatcher RunBatchClaimer    // nil without lease claims in batches
	// beats gathers heartbeats into HeartbeatBatcher calls; nil without
	// that ability or with BatchSize 1.
	beats *coalesce.Batcher[HeartbeatInput, HeldAnswer]
	// results and finishes gather the results of runs ending together
	// into ResultBatcher and FinishBatcher calls; nil as beats is.
	results  *coalesce.Batcher[SaveResultInput, error]
	finishes *coalesce.Batcher[SaveResultInput, HeldAnswer]
	// reclaims gathers backups' repeat lease claims into RunBatchClaimer
	// calls; nil as beats is.
	reclaims *coalesce.Batcher[RunClaim, RunClaimAnswer]
	control  JobControl // nil without job control
	opts     Options
	optsErr  *ValidationError // the Options field out of range; Start and Add return it
	clock    Clock
	log      *slog.Logger
	offset   atomic.Int64 // store clock minus local clock, ns
	syncMu   sync.Mutex   // held while the offset is measured
	syncGen  atomic.Int64 // offsets measured, for remeasure

	cmu    sync.Mutex // serialises Start and the job-set changes (Add, Remove, Update) that do I/O
	mu     sync.Mutex
	jobs   map[string]*job
	order  []*job
	state  int // stateNew, stateStarted, stateStopped
	inited bool

	queue      runner.Queue[*job]
	run        *runner.Runner[slotRun] // set by Start
	loopCtx    context.Context         // ends when Stop begins: no new slots, no more standing by
	loopCancel context.CancelFunc
	runCtx     context.Context // parent of handler contexts; cancelled with ErrStopped at the Stop deadline
	runCancel  context.CancelCauseFunc
	bg         sync.WaitGroup // the loop, the watch and the clock goroutines
	inflight   sync.WaitGroup // slot goroutines (claim, handler, result)

	tokenPrefix string
	tokenSeq    atomic.Uint64
	// manualSlot is the slot of this instance's last manual run (Unix
	// ms): the next one takes a later one (manualSlotAt).
	manualSlot atomic.Int64

	reg    *registration         // the instance registry entry while started; guarded by mu
	peers  atomic.Pointer[peers] // this instance's place in the last registry listing; nil before one
	bursts claimsFirst           // bursts whose claims, or the starts of the plain runs they won, are in flight: plain results wait for them
	// bursts whose first wave, and the pause after it, are not over:
	// leased finishes wait for them (SPEC §4, "Claims first")
	firstWaves claimsFirst

	watching bool // the watch goroutine runs; guarded by mu

	tstore      TriggerStore  // nil without triggers
	triggerWake chan struct{} // the watch saw a trigger request
	stopDone    chan struct{} // closed when the first Stop has done its work; stopErr is set then
	stopErr     error         // what every Stop returns: the error of the ctx that cut handlers short, or nil
	stopNow     chan struct{} // closed by a later Stop whose ctx ended first: cut the handlers short now
	stopNowErr  error         // that ctx's error; written before stopNow closes
	stopNowOnce sync.Once

	tmu      sync.Mutex
	triggers map[*liveTrigger]struct{} // triggered runs recorded and not yet settled; guarded by tmu
}

const (
	stateNew = iota
	stateStarted
	stateStopped
)

// New returns a Scheduler on backend. opts may be nil. The scheduler does
// not close the backend: several schedulers may share one. An option out
// of its range is reported by Start and by Add (see Options), as a nil
// backend is, so that New needs no error of its own.
func New(backend Backend, opts *Options) *Scheduler {
	o := opts.withDefaults()
	s := &Scheduler{
		backend: backend,
		opts:    o,
		optsErr: opts.check(),
		clock:   o.Clock,
		log:     o.Logger.With(slog.String("instance", o.InstanceID)),
		jobs:    make(map[string]*job),

		triggerWake: make(chan struct{}, 1),
		stopDone:    make(chan struct{}),
		stopNow:     make(chan struct{}),

		tokenPrefix: rand.Text(),
	}
	s.findAbilities()
	return s
}

// findAbilities looks up the backend's optional interfaces once, through
// As, so that wrappers expose what they wrap and the run path pays no
// lookup per slot. A batch ability is the exception: it is used only on
// the very value that takes the single calls it batches (the backend, its
// RunStore, the ResultFinisher), never found through Unwrap, so that a
// wrapper that sees or changes the single calls (Claim, Heartbeat,
// SaveResult …) is not bypassed by a batch of the store it wraps.
func (s *Scheduler) findAbilities() {
	b := s.backend
	s.recorder, _ = As[ClaimRecorder](b)
	s.checker, _ = As[JobChecker](b)
	s.sclock, _ = As[ServerClock](b)
	s.tstore, _ = As[TriggerStore](b)
	s.control, _ = As[JobControl](b)
	if lb, ok := As[LeaseBackend](b); ok {
		s.runs = lb.Runs()
	}
	batches := s.opts.BatchSize > 1
	s.batcher, _ = b.(BatchClaimer)
	if rb, ok := s.recorder.(ClaimRecordBatcher); ok && batches {
		s.records = rb
	}
	if rb, ok := b.(ResultBatcher); ok && batches {
		s.results = &coalesce.Batcher[SaveResultInput, error]{Send: func(ctx context.Context, in []SaveResultInput) ([]error, error) {
			s.bursts.wait(ctx, ResultHold)
			return rb.SaveResults(ctx, in)
		}, Window: BatchWindow, Max: s.opts.BatchSize}
	}
	if s.runs == nil && s.tstore == nil {
		return
	}
	// The watch wakes backups (leases) and trigger requests.
	s.watcher, _ = As[Watcher](b)
	if s.runs == nil {
		return
	}
	s.runBatcher, _ = s.runs.(RunBatchClaimer)
	if s.runBatcher != nil && batches {
		s.reclaims = &coalesce.Batcher[RunClaim, RunClaimAnswer]{Send: s.runBatcher.ClaimRuns, Window: BatchWindow, Max: s.opts.BatchSize}
	}
	if hb, ok := s.runs.(HeartbeatBatcher); ok && batches {
		s.beats = &coalesce.Batcher[HeartbeatInput, HeldAnswer]{Send: hb.Heartbeats, Window: BatchWindow, Max: s.opts.BatchSize}
	}
	s.finisher, _ = As[ResultFinisher](b)
	s.replacer, _ = As[Replacer](b)
	if fb, ok := s.finisher.(FinishBatcher); ok && batches {
		s.finishes = &coalesce.Batcher[SaveResultInput, HeldAnswer]{Send: fb.FinishResults, Window: BatchWindow, Max: s.opts.BatchSize}
	}
}

// Backend returns the backend the scheduler was created with.
func (s *Scheduler) Backend() Backend { return s.backend }

// InstanceID returns this instance's ID.
func (s *Scheduler) InstanceID() string { return s.opts.InstanceID }

// Every adds a job that runs every interval, on a grid aligned to the Unix
// epoch (slot = k·interval + opts.Offset), so instances started at different
// times agree on the slots (SPEC §3). interval must be a positive whole
// number of milliseconds. It returns a *ValidationError for bad input; see
// Add for what it does after Start.
func (s *Scheduler) Every(name string, interval time.Duration, h Handler, opts *JobOptions) error {
	return s.Add(Job{Name: name, Schedule: Interval(interval), Handler: h, Options: opts})
}

// Cron adds a job on a cron schedule, computed in opts.Zone (default UTC).
// The dialect is described in the package documentation; "@every 5m" makes
// an interval job. It returns a *ValidationError (CodeBadCron,
// CodeUnknownZone, …) for bad input; see Add for what it does after Start.
func (s *Scheduler) Cron(name, expr string, h Handler, opts *JobOptions) error {
	return s.Add(Job{Name: name, Schedule: CronSchedule(expr), Handler: h, Options: opts})
}

// Schedule says when a job's slots are: an interval or a cron expression.
// Build it with Interval or CronSchedule.
type Schedule struct {
	interval time.Duration
	expr     string
	cron     bool
	at       time.Time // Once
	once     bool
}

// Interval is a schedule of slots every d, aligned to the Unix epoch.
func Interval(d time.Duration) Schedule { return Schedule{interval: d} }

// CronSchedule is a schedule given by a cron expression (package docs).
func CronSchedule(expr string) Schedule { return Schedule{expr: expr, cron: true} }

// String returns "every <d>", the cron expression, or "at <RFC 3339
// time>".
func (s Schedule) String() string {
	if s.once {
		return "at " + s.at.Format(time.RFC3339Nano)
	}
	if s.cron {
		return s.expr
	}
	return "every " + s.interval.String()
}

// Job is a job to register with Add.
type Job struct {
	Name     string      // identity across instances: unique per scheduler, 1 to MaxNameLength bytes of UTF-8 without control characters or blanks around it
	Schedule Schedule    // when it runs
	Handler  Handler     // what it runs
	Options  *JobOptions // nil means defaults
}

// Add registers a job. It returns a *ValidationError for bad input (never
// panics), with CodeDuplicateName for a name already registered.
//
// It may be called before Start or while the scheduler runs, from any
// goroutine. After Start it calls Backend.PrepareJob for the job (bounded
// by 30 s) and returns its error, leaving the job out; then the
// job enters the queue and runs from its first slot after now (a leased
// job also catches up and adopts unfinished runs, as at Start). Instances
// that add the same job at different times still run each slot once: the
// claim is keyed by the job's name and slot. After Stop it returns
// ErrStopped.
func (s *Scheduler) Add(j Job) error {
	jb, err := s.compile(j)
	if err != nil {
		return err
	}
	s.cmu.Lock()
	defer s.cmu.Unlock()
	s.mu.Lock()
	state := s.state
	_, dup := s.jobs[j.Name]
	s.mu.Unlock()
	if dup {
		return &ValidationError{Job: j.Name, Field: "Name", Code: CodeDuplicateName, Reason: "a job with this name is already registered"}
	}
	switch state {
	case stateNew:
		s.mu.Lock()
		s.jobs[j.Name] = jb
		s.order = append(s.order, jb)
		s.mu.Unlock()
		return nil
	case stateStopped:
		return ErrStopped
	}
	ctx, cancel := storeCallCtx(s.loopCtx)
	defer cancel()
	if err := s.backend.PrepareJob(ctx, PrepareJobInput{Job: jb.name, HistorySize: jb.opt.HistorySize}); err != nil {
		return err
	}
	s.mu.Lock()
	if s.state != stateStarted {
		s.mu.Unlock()
		return ErrStopped
	}
	s.jobs[j.Name] = jb
	s.order = append(s.order, jb)
	s.mu.Unlock()
	s.enqueue(ctx, jb, nil)
	s.refreshRegistration()
	s.log.LogAttrs(ctx, slog.LevelInfo, "job added", slog.String("job", jb.name), slog.String("schedule", jb.sched))
	return nil
}

// job is a registered job with its options resolved.
type job struct {
	name     string
	handler  Handler
	opt      JobOptions // defaults applied
	interval time.Duration
	offset   time.Duration
	expr     *cron.Expr
	loc      *time.Location
	leased   bool      // runs through the RunStore
	at       time.Time // a one-off job's slot; zero for others
	sched    string

	entry   runner.Entry[*job] // its place in the scheduler's queue
	removed atomic.Bool        // Remove or Update replaced it: slots it fires are not claimed
}

func (s *Scheduler) compile(j Job) (*job, error) {
	bad := func(field string, code Code, reason string, err error) error {
		return &ValidationError{Job: j.Name, Field: field, Code: code, Reason: reason, Err: err}
	}
	o, err := s.checkInput(j, bad)
	if err != nil {
		return nil, err
	}
	jb, err := s.compileSchedule(j, o, bad)
	if err != nil {
		return nil, err
	}
	if err := s.resolveOptions(jb, o, bad); err != nil {
		return nil, err
	}
	jb.opt = *o
	if err := s.checkLimits(jb, bad); err != nil {
		return nil, err
	}
	if err := s.checkOnceLate(jb, bad); err != nil {
		return nil, err
	}
	return jb, nil
}

// badFunc builds a job's ValidationError.
type badFunc func(field string, code Code, reason string, err error) error

// checkInput checks what needs no resolution: backend, name, handler, and
// the range of every option. It returns a copy of the options.
func (s *Scheduler) checkInput(j Job, bad badFunc) (*JobOptions, error) {
	if s.backend == nil {
		return nil, bad("Backend", CodeBadOption, "the scheduler has no backend (New was given nil)", ErrNoBackend)
	}
	if oe := s.optsErr; oe != nil {
		return nil, bad(oe.Field, oe.Code, oe.Reason, nil)
	}
	if j.Name == "" {
		return nil, bad("Name", CodeEmptyName, "the name is empty", nil)
	}
	if ve := nameError(j.Name); ve != nil {
		return nil, ve
	}
	if j.Handler == nil {
		return nil, bad("Handler", CodeNoHandler, "the handler is nil", nil)
	}
	var o JobOptions
	if j.Options != nil {
		o = *j.Options
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"Offset", o.Offset}, {"Jitter", o.Jitter}, {"MaxLate", o.MaxLate}, {"Timeout", o.Timeout},
		{"HistoryTTL", o.HistoryTTL}, {"Lease", o.Lease}, {"CatchUp.Window", o.CatchUp.Window},
	} {
		if d.v < 0 {
			return nil, bad(d.field, CodeNegativeDuration, fmt.Sprintf("%v is negative", d.v), nil)
		}
	}
	for _, n := range []struct {
		field string
		v     int
	}{{"HistorySize", o.HistorySize}, {"MaxAttempts", o.MaxAttempts}, {"CatchUp.Max", o.CatchUp.Max}, {"PauseOnFailure", o.PauseOnFailure}} {
		if n.v < 0 {
			return nil, bad(n.field, CodeBadOption, fmt.Sprintf("%d is negative", n.v), nil)
		}
	}
	for _, n := range []struct {
		field  string
		v, max int
	}{{"HistorySize", o.HistorySize, MaxHistorySize}, {"MaxAttempts", o.MaxAttempts, MaxAttempts}, {"CatchUp.Max", o.CatchUp.Max, MaxCatchUp}} {
		if n.v > n.max {
			return nil, bad(n.field, CodeBadOption, fmt.Sprintf("%d is above the limit %d", n.v, n.max), nil)
		}
	}
	if o.MaxLate > 0 && o.MaxLate < MinMaxLate {
		return nil, bad("MaxLate", CodeBadOption, fmt.Sprintf("%v is below the floor of %v (MinMaxLate): a slot is that late by the time it is claimed, and nearly every one would be missed", o.MaxLate, MinMaxLate), nil)
	}
	if o.CatchUp.Max > 0 && o.CatchUp.Window == 0 {
		return nil, bad("CatchUp.Max", CodeBadOption, "CatchUp.Max without a CatchUp.Window does nothing", nil)
	}
	if o.Overlap < OverlapDefault || o.Overlap > OverlapReplace {
		return nil, bad("Overlap", CodeBadOption, fmt.Sprintf("unknown overlap policy %d", int(o.Overlap)), nil)
	}
	switch {
	case o.Overlap == OverlapLimit && o.OverlapLimit < 1:
		return nil, bad("OverlapLimit", CodeBadOption, fmt.Sprintf("overlap policy limit needs an OverlapLimit of at least 1, got %d", o.OverlapLimit), nil)
	case o.Overlap != OverlapLimit && o.OverlapLimit != 0:
		return nil, bad("OverlapLimit", CodeBadOption, fmt.Sprintf("OverlapLimit %d is only read by overlap policy limit, not %s", o.OverlapLimit, o.Overlap), nil)
	case o.OverlapLimit > MaxOverlapLimit:
		return nil, bad("OverlapLimit", CodeBadOption, fmt.Sprintf("%d is above the limit %d", o.OverlapLimit, MaxOverlapLimit), nil)
	}
	if err := checkRetry(&o.Retry, bad); err != nil {
		return nil, err
	}
	return &o, nil
}

// compileSchedule parses the schedule into a job (the options' Zone is
// resolved in o).
func (s *Scheduler) compileSchedule(j Job, o *JobOptions, bad badFunc) (*job, error) {
	jb := &job{name: j.Name, handler: j.Handler, sched: j.Schedule.String()}

	interval := j.Schedule.interval
	// Only a cron expression is computed in its zone, but a zone given to
	// any job is checked: a misspelt one on an interval job would pass
	// unnoticed until its schedule became a cron expression.
	zone := o.Zone
	if zone == "" {
		zone = "UTC"
	}
	loc, err := s.zone(zone, bad)
	if err != nil {
		return nil, err
	}
	if j.Schedule.once {
		if err := s.compileOnce(jb, j.Schedule.at, o, bad); err != nil {
			return nil, err
		}
		return jb, nil
	}
	if j.Schedule.cron {
		e, err := cron.Parse(j.Schedule.expr)
		if err != nil {
			return nil, bad("Schedule", CodeBadCron, err.Error(), err)
		}
		if e.Every() > 0 {
			interval = e.Every()
		} else {
			jb.expr = e
			jb.loc = loc
			o.Zone = zone
			if o.Offset != 0 {
				return nil, bad("Offset", CodeBadOption, "Offset moves an interval grid; a cron schedule has none", nil)
			}
		}
	} else if interval <= 0 {
		return nil, bad("Schedule", CodeBadInterval, fmt.Sprintf("interval %v is not positive", interval), nil)
	}
	if jb.expr == nil {
		if interval%time.Millisecond != 0 || o.Offset%time.Millisecond != 0 {
			return nil, bad("Schedule", CodeBadInterval, "interval and offset must be whole milliseconds (slots are Unix ms)", nil)
		}
		if o.Offset >= interval {
			return nil, bad("Offset", CodeBadInterval, fmt.Sprintf("offset %v is not below the interval %v", o.Offset, interval), nil)
		}
		jb.interval, jb.offset = interval, o.Offset
	}

	return jb, nil
}

// zone loads a job's zone, refusing one not in the tz database and
// "Local".
func (s *Scheduler) zone(zone string, bad badFunc) (*time.Location, error) {
	if zone == "Local" {
		return nil, bad("Zone", CodeUnknownZone, `"Local" is each machine's own zone, which instances may not share: name an IANA zone`, nil)
	}
	loc, err := s.loadLocation(zone)
	if err != nil {
		return nil, bad("Zone", CodeUnknownZone, fmt.Sprintf("unknown time zone %q", zone), err)
	}
	return loc, nil
}

// resolveOptions decides whether the job runs under leases and applies the
// defaults.
func (s *Scheduler) resolveOptions(jb *job, o *JobOptions, bad badFunc) error {
	wantsLeases := o.Lease > 0 || o.Overlap == OverlapSkip || o.Overlap == OverlapBufferOne || o.Overlap == OverlapLimit || o.Overlap == OverlapReplace || o.CatchUp.Window > 0 || o.MaxAttempts > 0 || o.Retry.MaxRetries > 0
	if o.NoLease && wantsLeases {
		return bad("NoLease", CodeBadOption, "NoLease conflicts with Lease, Overlap skip, buffer_one, limit or replace, CatchUp, MaxAttempts or Retry", nil)
	}
	if s.runs == nil && wantsLeases {
		return bad("Lease", CodeNeedsRunStore,
			fmt.Sprintf("leases, overlap skip, buffer_one, limit and replace, catch-up, attempts and retries need a backend with a RunStore; %q has none", s.backend.Name()), nil)
	}
	jb.leased = s.runs != nil && !o.NoLease
	if o.Overlap == OverlapReplace && s.replacer == nil {
		return bad("Overlap", CodeNeedsRunStore,
			fmt.Sprintf("overlap replace needs a RunStore that can replace runs (anarchon.Replacer); %q has none", s.backend.Name()), nil)
	}

	if o.MaxLate == 0 {
		o.MaxLate = DefaultMaxLate
	}
	if o.Jitter > 0 && o.Jitter >= o.MaxLate {
		return bad("Jitter", CodeBadOption,
			fmt.Sprintf("Jitter %v is not below MaxLate %v: a slot delayed by its jitter would be skipped as late", o.Jitter, o.MaxLate), nil)
	}
	if jb.interval > 0 && o.Jitter >= jb.interval {
		return bad("Jitter", CodeBadOption, fmt.Sprintf("Jitter %v is not below the interval %v", o.Jitter, jb.interval), nil)
	}
	if o.HistorySize == 0 {
		o.HistorySize = DefaultHistorySize
	}
	if jb.leased {
		if o.Lease == 0 {
			o.Lease = DefaultLease
		}
		if o.MaxAttempts == 0 {
			o.MaxAttempts = DefaultMaxAttempts
		}
		if o.Overlap == OverlapDefault {
			o.Overlap = OverlapSkip
		}
		if o.CatchUp.Window > 0 && o.CatchUp.Max == 0 {
			o.CatchUp.Max = 1
		}
		if o.Lease < 3*time.Millisecond {
			return bad("Lease", CodeBadOption, "a lease must be at least 3ms (heartbeats every Lease/3)", nil)
		}
	} else if o.Overlap == OverlapDefault {
		o.Overlap = OverlapAllow
	}
	return nil
}

// checkLimits checks the job against the backend: its dedupe window and
// its JobChecker.
func (s *Scheduler) checkLimits(jb *job, bad badFunc) error {
	o := jb.opt
	limits := JobLimits{
		Job: jb.name, Jitter: o.Jitter, MaxLate: o.MaxLate, CatchUpWindow: o.CatchUp.Window,
		Overlap: o.Overlap, HistorySize: o.HistorySize, HistoryTTL: o.HistoryTTL, Interval: jb.interval,
	}
	if jb.leased {
		limits.Lease = o.Lease
	}
	if w := s.backend.DedupeWindow(); w != Forever {
		if sum := o.Jitter + o.MaxLate; sum < o.MaxLate || sum >= w {
			return bad("MaxLate", CodeDedupeWindow,
				fmt.Sprintf("Jitter+MaxLate (%v) is not below the backend's dedupe window %v: a late instance could run a slot twice", o.Jitter+o.MaxLate, w), nil)
		}
		if o.CatchUp.Window >= w {
			return bad("CatchUp.Window", CodeDedupeWindow,
				fmt.Sprintf("the catch-up window %v is not below the backend's dedupe window %v", o.CatchUp.Window, w), nil)
		}
	}
	if o.PauseOnFailure > 0 {
		if s.control == nil {
			return bad("PauseOnFailure", CodeNeedsJobControl,
				fmt.Sprintf("pausing a job needs a backend with JobControl; %q has none", s.backend.Name()), nil)
		}
	}
	if c := s.checker; c != nil {
		if err := c.CheckJob(limits); err != nil {
			return bad("Backend", CodeBackendRefused, err.Error(), err)
		}
	}
	return nil
}

// nextSlot returns the job's first slot strictly after t.
// A one-off job's is its slot before it, and neverSlot from it on.
func (j *job) nextSlot(t time.Time) time.Time {
	if !j.at.IsZero() {
		if t.Before(j.at) {
			return j.at
		}
		return neverSlot
	}
	if j.expr != nil {
		return j.expr.Next(t, j.loc).UTC()
	}
	return cron.NextMultiple(t, j.interval, j.offset).UTC()
}

// MaxNextSlots is the most slots one NextSlots call returns. Every slot is
// computed and held at once, so an unbounded n is a caller's mistake that
// costs seconds of CPU and gigabytes (a billion slots of "* * * * *");
// 10,000 is a week of a minutely job, far more than a status page or the
// daemon's "next" command shows. Page further with a later after.
const MaxNextSlots = 10_000

// NextSlots returns the n slots (fewer for a one-off job: none once its
// slot is past) of the named job strictly after t (t zero:
// now by the store's clock), in UTC. It returns ErrNotFound for an unknown
// job, and a *ValidationError with CodeBadOption (Field "n") for an n
// below 1 or above MaxNextSlots.
func (s *Scheduler) NextSlots(name string, after time.Time, n int) ([]time.Time, error) {
	if n < 1 || n > MaxNextSlots {
		return nil, &ValidationError{Job: name, Field: "n", Code: CodeBadOption,
			Reason: fmt.Sprintf("%d slots asked for: ask for 1 to %d (MaxNextSlots)", n, MaxNextSlots)}
	}
	j, err := s.knownJob(name)
	if err != nil {
		return nil, err
	}
	if after.IsZero() {
		after = s.now()
	}
	out := make([]time.Time, 0, n)
	for range n {
		after = j.nextSlot(after)
		if after.Equal(neverSlot) {
			break // a one-off job's slot has passed
		}
		out = append(out, after)
	}
	return out, nil
}

// JobInfo describes a registered job.
type JobInfo struct {
	Name     string
	Schedule string // "every 1m0s" or the cron expression
	Zone     string // the cron zone; "" for interval jobs
	Leased   bool   // runs under leases through the backend's RunStore
	Options  JobOptions
}

// Jobs lists the registered jobs in registration order, with their options
// after defaults were applied.
func (s *Scheduler) Jobs() []JobInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]JobInfo, 0, len(s.order))
	for _, j := range s.order {
		zone := ""
		if j.loc != nil {
			zone = j.loc.String()
		}
		out = append(out, JobInfo{Name: j.name, Schedule: j.sched, Zone: zone, Leased: j.leased, Options: j.opt})
	}
	return out
}

// Start initialises the backend (Init, then PrepareJob for every job),
// measures the offset to the store's clock, starts catching up missed slots
// of jobs with CatchUp, stands by as a backup for the unfinished runs of
// leased jobs (one RunStore.Active call per job), and starts scheduling. ctx bounds only that start-up work:
// once started, the scheduler runs until Stop, whatever becomes of ctx. It returns the backend's error if Init
// or PrepareJob fails (the scheduler can then be started again),
// ErrStarted if already started, ErrStopped after Stop (a stopped
// scheduler does not start again: create a new one), ErrNoBackend when
// New was given none, and a *ValidationError for a field of Options out
// of its range.
func (s *Scheduler) Start(ctx context.Context) error {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	s.mu.Lock()
	if s.state != stateNew {
		st := s.state
		s.mu.Unlock()
		if st == stateStopped {
			return ErrStopped
		}
		return ErrStarted
	}
	jobs := append([]*job(nil), s.order...)
	s.mu.Unlock()

	if s.optsErr != nil {
		return s.optsErr
	}
	if s.backend == nil {
		return ErrNoBackend
	}
	if err := s.backend.Init(ctx); err != nil {
		return err
	}
	for _, j := range jobs {
		if err := s.backend.PrepareJob(ctx, PrepareJobInput{Job: j.name, HistorySize: j.opt.HistorySize}); err != nil {
			return err
		}
	}

	s.mu.Lock()
	if s.state != stateNew {
		s.mu.Unlock()
		return ErrStarted
	}
	s.state = stateStarted
	s.inited = true
	s.loopCtx, s.loopCancel = context.WithCancel(context.WithoutCancel(ctx))
	s.runCtx, s.runCancel = context.WithCancelCause(context.WithoutCancel(ctx))
	s.run = s.newRunner(s.runCtx)
	s.mu.Unlock()

	if s.sclock != nil {
		s.syncClock(ctx, "sync")
		s.bg.Add(1)
		go func() { defer s.bg.Done(); s.clockLoop(s.loopCtx) }()
	}
	s.startRegistry(ctx)
	for _, j := range jobs {
		s.enqueue(ctx, j, nil)
	}
	if ts := s.tstore; ts != nil {
		s.startWatch()
		s.bg.Add(1)
		go func() { defer s.bg.Done(); s.triggerLoop(s.loopCtx, ts) }()
	}
	s.queue.Skipped = s.slotsSkipped
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.queue.RunGroups(s.loopCtx, s.now, BatchWindow, PrepareLead, &s.inflight, s.fireGroup)
	}()
	s.log.LogAttrs(ctx, slog.LevelInfo, "scheduler started",
		slog.String("backend", s.backend.Name()), slog.Int("jobs", len(jobs)))
	return nil
}

// Stop stops claiming new slots and stops standing by, then waits for running
// handlers until ctx ends. Handlers still running then have their context
// cancelled with cause ErrStopped. Under leases their runs are released at
// once so a backup takes them over (hand-over) and recorded as
// StatusHandedOver; plain runs are recorded as StatusError (their error
// names ErrStopped), and so are triggered runs (Trigger), whose requests
// are finished with that error. Those records are stored before Stop
// returns, and a handler that returns later stores nothing, so no record
// of this instance says running once Stop has returned. Two cases are not covered: a run
// whose handler had already returned and whose result the store had not
// yet taken at the deadline (its store calls go on, bounded by 30 s and
// given up at once on a permanent error), and a claim sent before Stop and
// answered after the deadline (its slot then runs with a cancelled
// context and is recorded when it ends; so does a triggered run recorded
// after the deadline). Stop returns ctx's
// error if it had to cancel handlers, nil otherwise, and ErrNotStarted if
// Start never succeeded. It does not close the backend.
//
// Stop called again, or by several goroutines at once, stops once, and
// every call returns only when the first has done all of the above: the
// earliest of their contexts to end cuts the handlers short, and each
// returns that context's error if one did, nil otherwise.
//
// Stop bounds only the wait: a handler that ignores its context keeps its
// goroutine until it returns.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.state != stateStarted {
		st := s.state
		s.mu.Unlock()
		if st != stateStopped {
			return ErrNotStarted
		}
		select {
		case <-s.stopDone:
		case <-ctx.Done():
			s.stopNowOnce.Do(func() {
				s.stopNowErr = ctx.Err()
				close(s.stopNow)
			})
			<-s.stopDone
		}
		return s.stopErr
	}
	s.state = stateStopped
	s.mu.Unlock()
	defer close(s.stopDone) // after the registry's record is marked stopped
	defer s.stopRegistry(ctx)

	s.loopCancel()
	s.bursts.stop()
	s.firstWaves.stop()
	done := make(chan struct{})
	go func() {
		s.bg.Wait() // the loop has exited: no slot goroutine starts after this
		s.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.runCancel(ErrStopped)
		s.log.LogAttrs(ctx, slog.LevelInfo, "scheduler stopped")
		return nil
	case <-ctx.Done():
		s.stopErr = ctx.Err()
	case <-s.stopNow:
		s.stopErr = s.stopNowErr
	}
	// Triggered runs are taken first, as HandOver marks its runs before
	// it cancels them: a handler that returns on the cancellation then
	// stores nothing of its own.
	taken, storing := s.stopTriggers()
	s.run.HandOver(ctx, func() { s.runCancel(ErrStopped) })
	s.settleTriggers(taken, storing)
	// Handlers that were cancelled may still be returning (Stop bounds
	// only the wait), so their own end lines can come after this one.
	s.log.LogAttrs(context.WithoutCancel(ctx), slog.LevelInfo, "scheduler stopped at its deadline; running jobs were cancelled and handed over (leased) or recorded as cut short, and their handlers may still be returning")
	return s.stopErr
}

// RunNow runs the named job at once on this instance, without claiming a
// slot: the run is recorded with RecordManualRun (no deduplication) and its
// result stored. It is the local variant of Trigger: asked on two
// instances, it runs twice; Trigger runs once across the cluster. It waits
// for the handler and returns the run's record; the handler's error is in
// the record, not in the returned error, which is for store errors and
// ErrNotFound. A failed run counts toward JobOptions.PauseOnFailure.
// When ctx ends while the handler runs, the handler's context ends with
// it, and the run's result is stored all the same (with its own 30 s for
// the store's calls): a run in the history is never left running by a
// caller that gave up (SPEC §12). After Stop it runs nothing and returns
// ErrStopped, as Start and Add do.
func (s *Scheduler) RunNow(ctx context.Context, name string) (RunRecord, error) {
	if s.stopping() {
		return RunRecord{}, ErrStopped
	}
	j, err := s.readyJob(ctx, name)
	if err != nil {
		return RunRecord{}, err
	}
	if !s.isStarted() {
		// Start prepares every job; a scheduler used only for RunNow (a
		// command-line tool) prepares this one, and measures its offset
		// to the store's clock, so that the run's slot is the store's now
		// and not a fast host clock's (history is ordered and trimmed by
		// slot).
		if err := s.backend.PrepareJob(ctx, PrepareJobInput{Job: name, HistorySize: j.opt.HistorySize}); err != nil {
			return RunRecord{}, err
		}
		if s.sclock != nil {
			s.syncClock(ctx, "sync")
		}
	}
	run := &Run{Job: name, InstanceID: s.opts.InstanceID, Token: s.newToken(), Attempt: 1, Manual: true}
	res, err := s.runManual(ctx, ctx, j, run, nil)
	if err != nil {
		return RunRecord{}, err
	}
	claim := ClaimRecord{Slot: res.Slot, Token: res.Token, InstanceID: res.InstanceID, ClaimedAt: run.Slot, Attempt: 1, Manual: true}
	return BuildHistory(name, []ClaimRecord{claim}, []StoredResult{res}, 1)[0], nil
}

// History returns up to limit recent runs of the named job from all
// instances, newest first (limit <= 0: all the store keeps). It initialises
// the backend if the scheduler was not started. It returns ErrNotFound for a
// job that is not registered, and the backend's errors unchanged.
func (s *Scheduler) History(ctx context.Context, name string, limit int) ([]RunRecord, error) {
	if _, err := s.readyJob(ctx, name); err != nil {
		return nil, err
	}
	return s.backend.History(ctx, name, limit)
}

// ensureInit calls Backend.Init once for reads on a scheduler that was not
// started; a failure is retried on the next call.
func (s *Scheduler) ensureInit(ctx context.Context) error {
	s.mu.Lock()
	inited := s.inited
	s.mu.Unlock()
	if inited {
		return nil
	}
	if err := s.backend.Init(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.inited = true
	s.mu.Unlock()
	return nil
}

func (s *Scheduler) storeError(ctx context.Context, op, jobName string, slot time.Time, err error) {
	if errors.Is(err, context.Canceled) && s.stopping() {
		return // Stop interrupted a call: not a store fault
	}
	attrs := []slog.Attr{slog.String("op", op), slog.Any("error", err)}
	if jobName != "" {
		attrs = append(attrs, slog.String("job", jobName), slog.Time("slot", slot))
	}
	s.log.LogAttrs(ctx, slog.LevelError, "store call failed", attrs...)
	s.emit(Event{Kind: EventStoreError, Job: jobName, Slot: slot, Op: op, Err: err})
}

func (s *Scheduler) isStarted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateStarted
}

func (s *Scheduler) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateStopped
}

// newToken returns a claim token unique to this attempt: a random prefix
// drawn once per scheduler (130 bits) and a sequence number, which costs no
// system call per claim.
func (s *Scheduler) newToken() string {
	return s.tokenPrefix + "-" + strconv.FormatUint(s.tokenSeq.Add(1), 36)
}
