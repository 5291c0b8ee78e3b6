// Package anarchontest is the conformance suite of anarchon backends (SPEC
// §8): any implementation of [anarchon.Backend] can check itself against
// the contract from its own go test, in the manner of testing/fstest.TestFS.
// It depends on the standard library and package testing only.
//
// # Usage
//
// A backend's test gives [Run] a [Harness] whose New returns n handles to
// one fresh store — n separate clients of one database, like n processes
// of an application:
//
//	func TestConformance(t *testing.T) {
//		url := os.Getenv("MYSTORE_TEST_URL")
//		if url == "" {
//			t.Skip("set MYSTORE_TEST_URL to run against a server")
//		}
//		anarchontest.Run(t, anarchontest.Harness{
//			New: func(t *testing.T, n int) []anarchon.Backend {
//				prefix := "t" + strconv.FormatInt(time.Now().UnixNano(), 36)
//				bs := make([]anarchon.Backend, n)
//				for i := range bs {
//					bs[i] = mystore.Open(url, prefix) // a client of its own
//				}
//				t.Cleanup(func() { dropPrefix(url, prefix) })
//				return bs
//			},
//			Lease: 300 * time.Millisecond,
//		})
//	}
//
// The suite calls Init on every handle, PrepareJob for every job it uses,
// and Close on every handle when a subtest ends. A store with a fake clock
// sets [Harness.Sleep] to advance it and [Harness.FakeClock]; see package
// membackend's tests.
//
// # Tests
//
// Every test has a stable name, runs on a fresh store and uses job names of
// its own, made unique with a random suffix. The OddJobName tests use a
// name 200 characters long with quotes, a backslash, braces, dots,
// wildcards and non-ASCII letters, to exercise how a backend turns names
// into keys.
//
//   - Basics: Name, DedupeWindow (positive; if Forever, an old claim still
//     loses after time passes), concurrent Init and PrepareJob.
//   - Claim: the race (Racers goroutines over Handles handles, Rounds
//     slots, exactly one winner per slot and no error; then repeats of
//     winning claims win and repeats of losing ones lose, on other
//     handles), repeat safety across handles, independence of slots and
//     jobs, the odd job name.
//   - History: one record per claim and result with every field, newest
//     first, limits, size and TTL trimming, trimming never reopening a
//     slot, manual runs, an empty history. History(limit) must be the
//     first limit records of the whole history, every field alike, at
//     every limit, also when records without a start time (manual runs
//     not yet ended) share a slot with a finished run. If the backend implements
//     [anarchon.ClaimRecorder], the suite calls RecordClaim after each won
//     claim, as the scheduler does.
//   - Close: methods fail with an error wrapping [anarchon.ErrClosed].
//   - Replace, for a RunStore with [anarchon.Replacer] (skipped without
//     one): the holder of a slot settles every earlier running, expired
//     or released run of the job as replaced, each once ("Replace/Earlier":
//     the replaced holder's Heartbeat answers false, its history record
//     says replaced, a claim answers done with StatusReplaced instead of
//     a takeover, Active lists only the later runs, a Watcher announces
//     each, a repeat replaces nothing); a caller that does not hold its
//     slot changes nothing ("Replace/NotHeld"); a result the replaced run
//     stored is kept ("Replace/KeepsResult").
//   - RunStore, for a [anarchon.LeaseBackend]: one subtest per row of the
//     claim table of SPEC §6 ("RunStore/Claim/Absent", ".../RunningSameToken",
//     ".../Done", ".../RunningOtherTokenLive", ".../ExpiredTakeover",
//     ".../ReleasedTakeover", ".../AttemptsUsedUp/...", ".../Late",
//     ".../Overlap"; ".../Overlap/Limit", ".../Overlap/LimitExpired" and
//     ".../Overlap/LimitRace" for RunClaim.Limit: exactly Limit of many
//     racing claims of different slots over several handles win;
//     ".../Overlap/TakeoverAfterLaterSlot" and
//     ".../Overlap/TakeoverBeforeLaterSlot" for what the scheduler's
//     overlap check on takeovers relies on: Active, read after a takeover,
//     lists a later slot's run that won first, and a takeover made first
//     makes the later slot's claim answer overlap), token
//     checks of Heartbeat, Finish and Release, lease
//     extension by Heartbeat, Active, a race of lease claims, and the
//     history of lease runs: a won claim is a record with its attempt; a
//     result saved for the same token merges with it; a holder whose
//     lease ran out is lease_lost, with its claim time and the words
//     [anarchon.BuildHistory] gives it ("no result stored: …, and attempt 2
//     on B took the slot over"), until its own late result replaces the
//     record, still lease_lost ("History/DeadHolderLeaseLost");
//     a released run saved as handed_over keeps that result whether it
//     was saved before or after the backup's claim ("History/HandedOverClaimedAt");
//     an abandoned slot is one record under [anarchon.AbandonedToken]
//     with the last attempt, and its last holder can no longer finish it
//     ("History/AbandonedOnce"); every limit of a slot with takeovers
//     keeps the finished run's start and end ("History/Limit"). Results
//     are saved as the scheduler saves them: FinishResult where the store
//     has it, Finish then SaveResult otherwise.
//   - FinishResultSame, for an [anarchon.ResultFinisher]: FinishResult
//     leaves the same history and the same later claim answers as Finish
//     followed by SaveResult, for a holder, a holder that released the run
//     and a holder a backup took over from.
//   - Errors: a call on a cancelled context may fail, but not with an
//     error marked [anarchon.Permanent] ("Errors/Cancelled"); after
//     [Harness.Break] breaks the store, History fails with one that is
//     ("Errors/Broken", skipped when Break is nil).
//   - Early: never early (SPEC §4). A plain claim and a lease claim of a
//     slot 30 s and 1 h ahead of the store's clock fail with an
//     [*anarchon.EarlyError] (not permanent) and leave nothing: a slot
//     just due is won by another token, no record names the refused
//     claimer. Slots of the other tests lie 20 minutes in the past.
//   - Bytes: any bytes in, the record out (SPEC §4). A result whose
//     output holds every byte value 0–255 and whose error holds NUL and
//     invalid UTF-8 is stored through SaveResult and, where the store has
//     it, FinishResult, and History returns each as given or as
//     [anarchon.EscapeText] made it.
//   - Watch, for a [anarchon.Watcher] (on the RunStore or the backend): a
//     Release and a Finish on one handle reach a watch opened on another
//     within 5 seconds, and the channel closes when the watch's context
//     ends. Changes made after WatchRuns returns must be delivered.
//   - Watch/Settled: RunFinished comes only once a run is settled (a
//     backup ends on it without claiming again, SPEC §6): none after a
//     claim, a heartbeat, a 1 ms heartbeat (a retry's), a takeover, a
//     release or a claim of a released run, each followed by a marker
//     slot's RunReleased that must come first; after the finish, the
//     RunFinished comes and a claim answers done.
//   - ServerClock, for an [anarchon.ServerClock]: it answers, within 5
//     seconds of this machine's clock unless FakeClock is set.
//   - Names: names of [anarchon.MaxNameLength] bytes (with the odd name's
//     characters, filled with 3-byte letters) claimed, recorded, run under
//     a lease and watched where the backend has those abilities; a
//     Scheduler on the store refuses one byte more, a NUL, a newline and
//     invalid UTF-8 with [anarchon.CodeBadName].
//   - Control, for an [anarchon.JobControl] (SPEC §12): the state set on
//     one handle reads back on another with the store's time, and in
//     JobStates; a plain claim and a lease claim of a new slot made on any
//     handle after the pause settle it (no winner, OutcomePaused once then
//     OutcomeNone, before and after the resume) and history has one
//     paused record under [anarchon.PausedToken]; a run claimed before the
//     pause keeps its winner. With [Harness.Reopen], the state and a
//     trigger request survive Close ("Control/Reopen"). On a real clock
//     with a TriggerStore, "Control/Schedulers": three schedulers, one per
//     handle, run no slot of a job paused through the store while another
//     job runs, each slot once after the resume, and 50 concurrent Trigger
//     calls with one key run their job once, recorded as a manual run.
//   - Trigger, for an [anarchon.TriggerStore]: Racers requests with one key
//     over several handles are one request; of Racers claims one token
//     wins, and its repeat; the finish by that token reads back done on
//     another handle; unknown requests; with a Watcher, a RunTriggered
//     event on another handle. "Trigger/Cancel", for an
//     [anarchon.TriggerCanceler]: a pending request canceled on one handle
//     reads back done, StatusCanceled, on another, is no longer pending and
//     cannot be claimed, and a second cancel answers the same record; an
//     unknown one is ErrNotFound; a running one is answered unchanged and
//     still finishes; on 8 pending requests, cancels race claims over
//     several handles and each request ends canceled with no claim won, or
//     claimed by one token with every cancel answered running.
//   - Batch, for an [anarchon.BatchClaimer] (SPEC §4, batches): Racers
//     goroutines over Handles handles claim Rounds slots of two jobs, half
//     in batches of 2 to 12 slots that overlap other racers' batches in
//     part and half one slot at a time: exactly one claim wins each slot;
//     batches and singles repeating the winners' claims win again, other
//     tokens lose; a batch's wins are history records; in a batch with a
//     slot an hour ahead of the store's clock, that slot's answer carries
//     an [*anarchon.EarlyError] and writes nothing while the others are
//     won; an empty batch has no answers; with [anarchon.JobControl], a
//     paused job's slot in a batch is settled paused beside won slots.
//   - RunBatch, for an [anarchon.RunBatchClaimer] (SPEC §6): the same race
//     with lease claims (one won per slot, every other answered running
//     with the winner as holder; repeats renew); one ClaimRuns batch
//     meeting each row of §6's table that needs no expiry (renewal,
//     running, done, none, takeover of a released run, abandoned, late,
//     overlap, absent), answered and leaving the store as single claims
//     would; two new slots of one job without overlap in one batch are
//     won then overlap (claims are decided in turn); the early slot; an
//     empty batch; a paused job's slot (paused, then none).
//   - Registry, for an [anarchon.InstanceRegistry] (SPEC §10): records
//     round-trip between handles (ID, version, clock offset to the
//     nanosecond, fingerprints, job lists) with LastSeen and ExpiresAt by
//     the store's clock; a renewal replaces a record; of two instances
//     the one that stops renewing is listed dead once its 1.5 s TTL has
//     passed by the store's clock (polled, at most 30 s), never before,
//     and is live again when it registers again; a deregistered record is
//     listed stopped; concurrent registrations; bad input; ErrClosed;
//     with FakeClock, records are dropped after InstanceRetention.
//
// # Backend template
//
// Every built-in backend (membackend, sqlbackend, sqlitebackend,
// sqlitefile, pgbackend, redisbackend, natsbackend) is laid out the same
// way, and a new backend is easiest to review if it is too:
//
//   - doc.go holds the package doc and nothing else. Its first paragraph
//     says what the backend is: the store, and what each operation is
//     made of. Then, in this order: "# Guarantees" (what holds, what the
//     tests measured, which errors are marked [anarchon.Permanent]),
//     "# Server requirements" (versions, permissions, configuration),
//     "# Setup" (how to open one, with a code block) and "# Performance"
//     (round trips per call, measured costs). Sections of the backend's
//     own (# Keys, # Schema, # History, …) follow them.
//   - backend.go: the Backend type, its Options, the constructors, Name,
//     DedupeWindow, Init, Close and ServerTime, and one
//     var _ anarchon.X = (*Backend)(nil) line for every interface the
//     backend and its RunStore implement.
//   - claim.go: Claim, RecordClaim, RecordManualRun, PrepareJob, CheckJob.
//   - runs.go: the RunStore: the lease claim, Heartbeat, Finish, Release,
//     FinishResult, Active, WatchRuns.
//   - history.go: SaveResult, History and trimming.
//   - registry.go: the instance registry ([anarchon.InstanceRegistry]),
//     where the store has one.
//   - errors.go: the sentinel errors, an exported IsPermanent(err) bool
//     that classifies the store's native errors (SQLSTATE classes, SQLite
//     result codes, Redis error replies, JetStream API errors), and the
//     wrapping at the boundary that marks them with [anarchon.Permanent].
//   - Code that runs on the server is an embedded file, read once at
//     start: SQL in sql/*.sql, Lua in lua/*.lua (go:embed).
//   - SQL statements are built, and their placeholders rewritten, once per
//     backend; rows are read by one reader that keeps the first error, as
//     bufio.Scanner does.
//   - The tests run [Run] against a real server (a TestConformance) and
//     check the error classes on it (errors_test.go:
//     a dropped table or a key of the wrong type is permanent, a cancelled
//     context or a server that is down is not).
//
// A backend built on another package's logic keeps only what is its own:
// sqlitebackend and pgbackend, on sqlbackend, have backend.go, errors.go
// and their extras (pgbackend's stored functions and LISTEN); sqlitefile,
// which only opens a file, has doc.go and backend.go. membackend, which has
// no native errors, marks its own in backend.go.
//
// # Watchdog
//
// A backend that never answers fails instead of hanging: the context of
// every backend call of a subtest is cancelled after [Harness.Timeout]
// (2 minutes by default), which fails the subtest with the call that
// waited; a subtest still running a tenth of Timeout later (a call that
// ignores its context) ends the test binary with a panic naming it, after
// printing every goroutine's stack.
//
// # Time
//
// Times are judged by the store's clock. The suite sleeps (through
// [Harness.Sleep]) only where time must pass: about twice [Harness.Lease]
// for each expiry test, a little more than a second for the TTL test, and
// in the registry's expiry test steps of 15 ms between polls until a
// record with a 1.5 s TTL is listed dead. Leases and registrations that
// must stay live are an hour long, so parallel subtests that move a shared
// fake clock cannot expire them; the registry's retention test, which
// moves a fake clock by a day, runs while the other registry tests wait.
package anarchontest
