// Package membackend is anarchon's in-memory store: the reference
// implementation of [anarchon.Backend] and of leases ([anarchon.RunStore]),
// against which the other backends are compared. It needs nothing beyond
// the standard library.
//
// One [Backend] value is one store. Schedulers that share a *Backend in one
// process behave like instances of an application that share a server:
// exactly one of them wins each (job, slot). Nothing survives the process,
// so across processes each has its own store; use a server-backed backend
// there.
//
// # Guarantees
//
// Job control and triggers (SPEC §12, [anarchon.JobControl],
// [anarchon.TriggerStore]) live under the same mutex as the claims: a
// claim sees a pause stored before it, atomically, and settles the slot
// as paused in the same step; the Control and Trigger conformance
// subtests, including three schedulers on one store, pass.
//
// Every method takes one mutex, so each is atomic, and all of them are
// safe for concurrent use. The store's clock is [Options.Now] (time.Now by
// default); it judges leases, lateness (MaxLate), history age
// (HistoryTTL) and the dedupe window. A call whose context has ended
// fails before it does anything, with an error wrapping the context's, as
// a call to a server does. After [Backend.Close] every method returns an
// error wrapping [anarchon.ErrClosed] (Close itself returns nil again).
//
// Plain claims (SPEC §4): the first token to claim (job, slot) wins; a
// repeat of that token answers true again, any other token false.
//
// Batches (SPEC §4, "Batches"): [Backend.ClaimBatch] and
// [RunStore.ClaimRuns] answer every claim of a batch with the single
// claim's own code, in order, under one hold of the mutex; the Batch and
// RunBatch conformance subtests pass on the fake and the real clock.
//
// Leases (SPEC §6): [Backend.Runs] returns a [RunStore] over the same state
// that decides each claim by the table of SPEC §6, first match wins. Lease
// runs and plain claims are kept apart: a job uses one or the other.
// The overlap limit (RunClaim.Limit) counts the job's live runs under the
// same mutex, and [RunStore.Replace] ([anarchon.Replacer]) settles the
// earlier runs in one step: the anarchontest Overlap/Limit (many racing
// claims of different slots) and Replace subtests pass.
//
// Instance registry (SPEC §10): [Backend.RegisterInstance],
// [Backend.DeregisterInstance] and [Backend.Instances] keep one record per
// instance in the store, timed and judged by Options.Now; the anarchontest
// Registry subtests pass on a fake clock (retention included) and on the
// real one.
//
// # Server requirements
//
// None: the store lives in the process's memory. It needs nothing beyond
// the standard library.
//
// # Setup
//
// Make one store and give the same *Backend to every scheduler that must
// share it:
//
//	store := membackend.New(nil) // or &membackend.Options{Now: fake.Now}
//	a := anarchon.New(store, nil)
//	b := anarchon.New(store, nil)
//
// # Performance
//
// Every call is one mutex section, no I/O. BENCHMARKS.md §1 measured a
// plain claim at 0.6–0.8 µs p50 (1, 4 and 16 claimers) and a lease claim
// at 0.9–1.2 µs, against 0.4–0.5 µs for a bare map insert under a mutex. A
// job's history is kept in order, oldest first, so that trimming it to
// its size drops records from the front: adding or changing a record
// places it with a binary search, almost always at the end (records come
// in slot order).
//
// # Dedupe window and memory
//
// Claims are not part of the history: each plain claim is also remembered
// in a compact per-job map (slot → token and claim time, a few dozen
// bytes), and each lease run in a per-job map of runs. Trimming history
// (HistorySize, HistoryTTL) never touches them, so it never reopens a slot,
// and a retry of the winning token answers true even after its history
// record was trimmed. With the default [Options.DedupeWindow] (0) the
// window is [anarchon.Forever] and nothing is forgotten: memory grows by
// one small entry per claimed slot for the life of the store. With a
// positive window, claims and settled lease runs whose last change is
// older than the window are forgotten (swept lazily, on the job's next
// claim), and [Backend.DedupeWindow] reports it.
//
// # History
//
// [Backend.History] is built with [anarchon.BuildHistory] from one entry
// per token — a claim record, a stored result, or both. These records are
// written:
//
//   - Claim, on a win (not on a repeat): a claim record, attempt 1. Claim is
//     itself a history record; [Backend.RecordClaim] exists for schedulers
//     that call it anyway and adds a record only for a token the history
//     does not know.
//   - RecordManualRun: a claim record with Manual set, one per call.
//   - RunStore Claim, won (a first claim or a takeover): a claim record
//     with the attempt. A renewal by the same token adds nothing.
//   - RunStore Claim, takeover: the previous holder's record gets the
//     status lease_lost (its lease expired) or handed_over (it released),
//     unless a result was already stored for its token.
//   - RunStore Claim, late or overlap: a result with status missed or
//     skipped under the caller's token and instance.
//   - RunStore Claim, attempts used up: the last holder's record gets the
//     status lease_lost or handed_over as for a takeover, and the slot gets
//     one record with status abandoned under the token
//     [anarchon.AbandonedToken](slot), the token under which the scheduler's backups
//     record the abandonment too.
//   - Finish: a result with the finish status, unless one was already
//     stored for the token.
//   - SaveResult: the result, replacing any earlier result of its token.
//
// So a scheduler that saves a result for a run the store already recorded
// (with the same token) gets one record, never two. Trimming keeps the
// HistorySize newest records, in History's order, and drops those the store
// last wrote more than HistoryTTL ago by its clock.
//
// # Watching
//
// [Backend.WatchRuns] (also on the [RunStore]) delivers a RunReleased
// event on every Release and a RunFinished event on every Finish and every
// abandoned slot. Each subscriber has a buffer of 64 events; sends never
// block, and events that do not fit are dropped (they are hints, SPEC §6).
//
// # Testing
//
// [Options.Now] injects a fake clock, [Options.DedupeWindow] a finite
// window, and [Options.Fault] fails chosen operations, so a scheduler's
// error paths can be tested without a server. The package's own tests run
// the conformance suite of package anarchontest.
package membackend
