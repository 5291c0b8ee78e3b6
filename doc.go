// Package anarchon is a leaderless distributed job scheduler.
//
// Every instance of an application runs the same schedule. There is no
// leader and no election: before running a job for a scheduled time (a
// slot), each instance asks a shared store to claim that run, and the store
// lets exactly one instance win. The store is a [Backend]: memory
// (membackend), SQLite and PostgreSQL (sqlbackend, sqlitebackend,
// pgbackend), Redis (redisbackend), NATS JetStream (natsbackend), or any
// store that can do an atomic "write unless it already exists".
//
//	s := anarchon.New(backend, &anarchon.Options{InstanceID: "web-1"})
//	err := s.Cron("report", "0 9 * * MON-FRI", report, &anarchon.JobOptions{Zone: "Europe/Athens"})
//	err = s.Every("sweep", 10*time.Second, sweep, nil)
//	err = s.Start(ctx)
//	defer s.Stop(stopCtx)
//
// # Slots
//
// A slot is one scheduled time of a job, in Unix milliseconds; (job, slot) is
// the identity of a run. Interval slots are aligned to the Unix epoch (slot =
// k·interval + Offset), so instances that start at different times agree on
// them. Cron slots are computed in the job's zone and stored as the UTC
// instant. The scheduler waits for a slot plus its jitter (a delay in
// [0, Jitter) derived from a hash of the job's name and the slot, so every
// instance waits the same delay and adding instances does not shorten it),
// claims it with a fresh token, runs the handler on a win and stores the
// result (SPEC §3); a slot more than MaxLate past due is not run, and the
// claim's winner records it missed. It never runs a
// slot before its time: a timer that wakes early waits again.
//
// # Cron dialect
//
// Five fields (minute hour day-of-month month day-of-week), or six with a
// leading seconds field. Fields take *, numbers, names (JAN–DEC, SUN–SAT,
// any case), lists (1,5), ranges (1-5), steps (*/15, 10-40/10, and a/n
// meaning a-max/n, so 1/7 in day-of-month restarts each month), and ? as a
// synonym of * in the day fields. A range that wraps means what it says:
// 22-2 is 22,23,0,1,2 and FRI-MON is Fri,Sat,Sun,Mon. Day-of-week 0 and 7
// are Sunday. Quartz extensions: L (last day of the month; L-3, three
// days before it; 5L, the last Friday), W (15W, the weekday nearest the 15th within the month), LW (the
// last weekday) and # (MON#2, the second Monday; a fifth one that does not
// exist does not fire). Descriptors: @yearly (@annually), @monthly, @weekly,
// @daily (@midnight), @hourly, and @every <Go duration> of at least one
// second, which makes an interval job (Every takes intervals down to 1 ms).
// The zone is an IANA name; "Local" is refused, since machines differ.
//
// If either day field begins with * (or is ?), both must match; if both are
// restricted, either matches (the Vixie cron rule). A step larger than its
// field's range, a zero step, a value out of range, an empty field and junk
// are errors that name the position ([CodeBadCron]); so is an expression
// that can never fire, such as "0 0 30 2 *".
//
// Daylight saving time: a fixed-time job (neither its minute nor its hour
// field begins with *) whose wall time falls in a spring-forward gap fires
// once, at the first instant after the gap; one whose wall time occurs twice
// in a fall-back fires once, at the first occurrence. A job with * in its
// minute or hour field fires at every matching wall time that really exists:
// both passes of a repeated hour, nothing for a gap. Zones are read from the
// tz database embedded in anarchon ([LoadLocation], release
// [TZDataVersion]), never from the host's, so every instance computes the
// same slots whatever tzdata its host has; [Options.HostZoneinfo] chooses the
// host's database instead.
//
// # Leases
//
// A backend that implements [LeaseBackend] gives jobs leases (SPEC §6). The
// winner of a slot holds a lease it renews every Lease/3; instances that lose
// stand by as backups and take the slot over (Attempt+1) if the lease runs
// out or is released. A lost lease cancels the handler's context with cause
// [ErrLeaseLost]. [OverlapSkip] skips slots while another run of the job is
// live, [OverlapLimit] while N are, and [OverlapReplace] cancels the
// running one (cause [ErrReplaced]) before the new slot runs; [CatchUp]
// recovers slots missed while every instance was down; Stop hands running
// jobs over to a backup. [Run.Attempt] is a fencing number per slot, and
// [Run.Fence] one per job (larger for every later holder of any slot),
// as long as the store keeps what it acknowledged (not across a failover
// that lost claims: SPEC §6, "Fencing" and "Stores that forget"). With a
// [Watcher] backups wake as
// soon as a lease is released, and ask again only when the lease they were
// told of ends; otherwise (or while the watch is broken) they poll every
// [Options.PollInterval]. Jobs use leases by default on such
// a backend; [JobOptions.NoLease] opts out.
//
// Leases also carry what a run can be beyond one attempt per slot:
// [JobOptions.Retry] runs a failed slot again, as further attempts that any
// instance may take after a backoff by the store's clock (a handler marks
// an error not worth retrying with [Permanent]); [Scheduler.Backfill] runs
// the unrun slots of a past range once across the cluster. A one-off job
// ([Scheduler.At]) runs once at its time, on any backend.
//
// # Bursts
//
// Jobs that share an instant (every "0 * * * *" job fires at the top of
// the hour) are claimed together: the scheduler gathers the slots due
// within [BatchWindow] and sends their claims, and later their heartbeats,
// their results and the claims of the backups that ask again together
// (polling a store without a [Watcher], or at a lease's end), in batches
// of up to [Options.BatchSize] to a store that
// takes batches ([BatchClaimer], [RunBatchClaimer], [HeartbeatBatcher],
// [ResultBatcher], [FinishBatcher]). A batch changes the cost, never an
// answer (SPEC §4, "Batches"); BENCHMARKS.md measures what it saves.
// The scheduler takes such a group from its timer queue [PrepareLead]
// before it is due and builds its claims then, and sends them when every
// slot of it is due (SPEC §4, "Prepared ahead").
// Where the instance registry lists other live instances, each instance
// claims a burst in waves: first the slots a hash of (job, slot) gives to
// it, then, once the store has answered those and as long again has
// passed (at most [MaxWavePause]), the slots of the instance before it on
// the ring of IDs, and so on. The store then sees one claim of each slot
// before the losing ones, and the runs spread evenly over the instances;
// an instance that does not claim costs its slots one wave's wait and the
// pause (SPEC §4, "Waves"). While a burst's claims are in flight, and
// until the plain runs they won have begun their handlers, the results of
// the instance's plain runs wait, and the finishes of
// its leased runs whose lease and next slot leave time wait for its first
// wave and the pause after it, up to [ResultHold] (SPEC §4, "Claims
// first").
//
// # Clocks
//
// Lateness and leases are judged by one clock, the store's. A backend that
// implements [ServerClock] lets the scheduler estimate its offset from the
// store at Start and every [Options.ClockSyncInterval]; every wait then uses
// the store's time, so an instance whose clock is seconds off still fires on
// time. [Scheduler.ClockOffset] exposes the estimate.
//
// # Errors
//
// Registration returns a [*ValidationError] with a stable [Code] for bad
// input and never panics; so do Start and Add for an [Options] field out
// of its range (Field "Options.<field>"). A store error on a claim means the slot is not run
// (fail closed); it is logged, reported as [EventStoreError], and the
// scheduler goes on. Store calls that must land (results, finishes) are
// retried for up to 30 s, unless the error is permanent ([Permanent],
// [ErrClosed]): those are given up at once, so Stop never waits on them. Errors the backend returns reach the caller unchanged,
// wrapped with %w at most. A handler's panic is recovered and recorded as
// [PanicError].
//
// # Observing
//
// [Options.OnEvent] receives an [Event] for every claim answer, run end,
// skipped slot, store error and clock measurement (metrics). A [Tracer] in
// [Options.Tracer] is told when each claim and each run begins and ends,
// with their contexts: the claim's store calls run in the context it
// returns, and the handler's context is the one its run span returns, so
// spans nest claim → run → whatever the handler traces. The otelanarchon
// module implements both with OpenTelemetry, and the anarchonui module
// shows the jobs, slots, leases and replicas in a web page.
//
// # Implementing a backend
//
// The backend-facing part of this package (its service provider interface,
// SPI) lives in its own files: backend.go ([Backend] and its inputs and
// records), runstore.go ([RunStore] and the lease types), ability.go (the
// optional interfaces, [As] and [Wrapper]), history.go ([BuildHistory]) and
// the error classes in errors.go ([Permanent]). It stays in this package
// rather than a separate driver package: the SPI is about twenty types,
// users meet several of them (Status, RunRecord, the outcome kinds) in the
// scheduler's API, and one package keeps a backend to one import and the
// docs in one place. Every method that takes more than a key takes an input
// struct (ClaimInput, HeartbeatInput, SaveResultInput, …), so that inputs
// may gain fields without breaking a backend (SPEC §9).
//
// Checklist:
//
//  1. Implement [Backend]. Claim must be one atomic server-side step (an
//     insert with a unique key, a put-if-absent, a script or a
//     transaction) that is safe to repeat with the same token (SPEC §4).
//  2. Return the truth about DedupeWindow: how long a claimed slot is
//     remembered, [Forever] if always.
//  3. Build History with [BuildHistory], from claim records and stored
//     results, so records gain new fields without backend changes.
//  4. Translate native errors at the boundary, keep the native error
//     reachable (%w), wrap [ErrClosed] after Close, and mark errors that a
//     retry cannot fix with [Permanent]; anything else is retried.
//  5. Add the optional interfaces the store can do: [ClaimRecorder] if
//     Claim is not itself a history record, [JobChecker] to refuse jobs it
//     cannot run safely, [ServerClock] if the server has a clock, and
//     [LeaseBackend] with a [RunStore] for leases (SPEC §6), plus
//     [ResultFinisher] and [Watcher] on the RunStore when the store can
//     fold a finish into one round trip or push changes. [JobControl]
//     (pause and resume, consulted by both claims) and [TriggerStore]
//     (cluster-wide manual runs) give the scheduler SPEC §12.
//  6. Check each interface at compile time: var _ anarchon.RunStore =
//     (*RunStore)(nil).
//  7. Run the conformance suite, package anarchontest, against a real
//     server from your tests.
//
// A backend that wraps another (metrics, tracing, fault injection)
// implements [Wrapper]; see its doc. The scheduler finds every optional
// ability with [As], which sees through wrappers.
package anarchon
