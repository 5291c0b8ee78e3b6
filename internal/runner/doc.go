// Package runner is anarchon's run path: the timer queue that fires slots
// (SPEC §3) and one type per attempt to run a slot — [Attempt] for a plain
// claim, [Leased] for a claim under a lease (SPEC §6). An attempt owns its
// token, attempt number, times, heartbeat and waiter registration; each
// step of the SPEC is one of its methods.
//
// The package knows nothing of anarchon's public types: the scheduler
// implements [Host] over its Backend and converts at that boundary, so that
// the run path can change without touching the user-facing API, and the
// API without touching the run path.
package runner
