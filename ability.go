package anarchon

import (
	"context"
	"time"
)

// JobLimits describes a job to [JobChecker] and to the scheduler's own
// dedupe-window check (SPEC §5). New fields may be added.
type JobLimits struct {
	Job           string
	Jitter        time.Duration
	MaxLate       time.Duration
	CatchUpWindow time.Duration // 0 without catch-up
	Lease         time.Duration // 0 without leases
	Overlap       OverlapPolicy
	HistorySize   int
	HistoryTTL    time.Duration
	Interval      time.Duration // the interval of an interval job; 0 for cron
}

// JobChecker is an optional Backend interface: CheckJob rejects a job this
// backend cannot run safely. The scheduler calls it when a job is added and
// returns its error wrapped in a [ValidationError] with [CodeBackendRefused].
// Without it every job that passes the scheduler's own checks is accepted.
type JobChecker interface {
	CheckJob(JobLimits) error
}

// ClaimRecorder is an optional Backend interface for backends whose Claim is
// not itself a history record: the scheduler calls RecordClaim after a won
// claim, before the handler starts. Without it the claim is assumed to be
// recorded by Claim.
type ClaimRecorder interface {
	RecordClaim(ctx context.Context, in ClaimInput) error
}

// ServerClock is an optional interface of a Backend or RunStore whose server
// has a clock (SQL now(), Redis TIME, NATS server times). The scheduler
// reads it at Start and periodically to estimate its offset from the store's
// clock, NTP-style (half the round trip).
type ServerClock interface {
	ServerTime(ctx context.Context) (time.Time, error)
}

// As finds ability T (an optional interface such as [ClaimRecorder],
// [ResultFinisher] or [Watcher]) of backend b. It looks at b's RunStore if
// b is a [LeaseBackend], then at b itself, then does the same for the
// backend b wraps (Unwrap() Backend, see [Wrapper]), and so on down the chain. It
// returns the first match and true, or the zero T and false.
//
// The scheduler finds every optional ability through As, so a wrapping
// backend (metrics, tracing) does not hide what the wrapped one can do. A
// wrapper that must see the calls of an ability implements it itself; an
// ability it does not implement is found on the wrapped backend and
// called there directly, as [net/http.ResponseController] does with
// response writers. The batch abilities ([BatchClaimer],
// [RunBatchClaimer], [HeartbeatBatcher], [ResultBatcher],
// [FinishBatcher]) are the exception: the scheduler uses one only on the
// value it sends the single calls to (the backend it was given, the
// RunStore of the first [LeaseBackend] As finds, the [ResultFinisher]),
// never through Unwrap, so that a batch of the wrapped store does not
// bypass a wrapper's Claim, Heartbeat or SaveResult.
func As[T any](b Backend) (T, bool) {
	for b != nil {
		if lb, ok := b.(LeaseBackend); ok {
			if rs := lb.Runs(); rs != nil {
				if t, ok := rs.(T); ok {
					return t, true
				}
			}
		}
		if t, ok := b.(T); ok {
			return t, true
		}
		w, ok := b.(Wrapper)
		if !ok {
			break
		}
		b = w.Unwrap()
	}
	var zero T
	return zero, false
}

// Wrapper is implemented by a Backend that wraps another one (to count,
// trace or fault-inject its calls). Unwrap returns the wrapped backend, so
// that [As] finds the abilities the wrapper does not implement itself.
//
// To write a wrapper: implement Backend by forwarding every method; add
// Unwrap; implement an optional interface only if the wrapper must see its
// calls, and then forward to the wrapped backend's ability when it has one
// (found with As) — but only offer the method when the wrapped backend has
// the ability, since implementing it claims the ability for the whole
// chain. A wrapper whose RunStore wraps the inner RunStore follows the same
// rule for [ResultFinisher] and [Watcher]. Unwrap must not return the
// wrapper itself.
//
// Batches are not found through Unwrap (see [As]): a wrapper gets them
// only by implementing them. One that embeds the concrete backend or
// RunStore it wraps (a struct field of type *membackend.Backend, say)
// does implement them — ClaimBatch, ClaimRuns, Heartbeats, SaveResults,
// FinishResults, RecordClaims are promoted — and the scheduler calls those
// for claims, heartbeats, results and claim records of runs due or ending
// together: such a wrapper that overrides a single call (SaveResult,
// Heartbeat, RecordClaim …) to see or change it must override its batch
// too. Embedding the interface
// (anarchon.Backend, anarchon.RunStore) inherits no batch method.
type Wrapper interface {
	Unwrap() Backend
}
