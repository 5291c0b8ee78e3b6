package runner

import (
	"context"
	"sync"
	"time"
)

// PlainAnswer is the store's answer to one plain claim of a batch: what
// Host.Claim would have returned for it.
type PlainAnswer struct {
	Won bool
	Err error
}

// LeaseAnswer is the store's answer to one lease claim of a batch: what
// Host.ClaimLease would have returned for it.
type LeaseAnswer struct {
	Outcome Outcome
	Err     error
}

// MaxClaimCalls is how many claim calls (batches, or single claims where
// the store has no batches) one Runner has in flight at most. Slots beyond
// wait for a call to end; a slot that waited past its MaxLate is missed,
// as if the store had been slow.
const MaxClaimCalls = 64

// split cuts n items into the fewest chunks of at most size, as even as
// possible, and calls f with each chunk's bounds: a batch of one is sent
// only when n is 1.
func split(n, size int, f func(from, to int) bool) {
	size = max(size, 1)
	chunks := (n + size - 1) / size
	from := 0
	for c := range chunks {
		to := from + (n-from)/(chunks-c)
		if !f(from, to) {
			return
		}
		from = to
	}
}

// acquire takes one of the Runner's claim calls; it reports false when
// ctx ended first.
func (r *Runner[J]) acquire(ctx context.Context) bool {
	select {
	case r.calls <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *Runner[J]) releaseCall() { <-r.calls }

// FirePlain claims the plain attempts of slots due together in batches of
// at most Config.BatchSize (one Host.ClaimBatch call each, at most
// MaxClaimCalls at a time) and runs each won slot in a goroutine of its
// own, counted in inflight. It returns when every batch is sent, or when
// ctx ends (Stop began: no new claims). Each attempt goes through SPEC
// §3's steps as Attempt.Run does: lateness, claim, record, handler,
// result. Each batch is counted in answered until its answers have been
// acted on (the wins' records and handlers go on after), and each won
// slot in started until its handler begins.
func (r *Runner[J]) FirePlain(ctx context.Context, as []*Attempt[J], inflight, answered, started *sync.WaitGroup) {
	fire(r, ctx, as, r.cfg.BatchSize, inflight, answered, started, r.claimPlain)
}

// fire sends as in batches of at most size, each in a goroutine of its own
// holding one claim call's permit, with claim, which counts the slots it
// starts in started.
func fire[J, A any](r *Runner[J], ctx context.Context, as []A, size int, inflight, answered, started *sync.WaitGroup, claim func(ctx context.Context, chunk []A, inflight, started *sync.WaitGroup)) {
	split(len(as), size, func(from, to int) bool {
		if !r.acquire(ctx) {
			return false
		}
		chunk := as[from:to]
		inflight.Add(1)
		answered.Add(1)
		go func() {
			defer inflight.Done()
			defer answered.Done()
			defer r.releaseCall()
			claim(ctx, chunk, inflight, started)
		}()
		return true
	})
}

// claimPlain sends one batch of plain claims and starts the won slots,
// each counted in started until its handler begins.
func (r *Runner[J]) claimPlain(ctx context.Context, chunk []*Attempt[J], inflight, started *sync.WaitGroup) {
	due := make([]*Attempt[J], 0, len(chunk))
	for _, a := range chunk {
		// As in Run: a slot already too late is claimed all the same,
		// and its winner records it missed.
		a.LateAtClaim = r.host.Now().Sub(a.SlotTime()) > a.MaxLate
		a.Token = r.host.NewToken()
		due = append(due, a)
	}
	cctx, cancel := r.claimCtx()
	answers := r.host.ClaimBatch(cctx, due)
	cancel()
	won := due[:0] // due is not read again
	for i, a := range due {
		if err := answers[i].Err; err != nil {
			r.host.StoreError(ctx, "Claim", a, err) // fail closed: the slot is not run here
			continue
		}
		if answers[i].Won {
			won = append(won, a)
		}
	}
	if len(won) == 0 {
		return
	}
	// The wins are recorded, and their handlers started, in a goroutine of
	// their own: the claim call's permit (MaxClaimCalls) is for claims.
	started.Add(len(won))
	inflight.Add(1)
	go func() {
		defer inflight.Done()
		r.startWon(ctx, won, inflight, started)
	}()
}

// startWon records the won claims of one batch and starts their runs,
// each of which marks started done when its handler begins. The wins are
// entered in the history in one call where the store has one, before any
// of their handlers starts (SPEC §3: record, then run); otherwise each
// run records its own.
func (r *Runner[J]) startWon(ctx context.Context, won []*Attempt[J], inflight, started *sync.WaitGroup) {
	recorded := false
	if len(won) > 1 {
		cctx, cancel := r.claimCtx()
		errs, ok := r.host.RecordClaims(cctx, won)
		cancel()
		for i, err := range errs {
			if err != nil {
				r.host.StoreError(ctx, "RecordClaim", won[i], err) // as in runClaimed
			}
		}
		recorded = ok
	}
	for _, a := range won {
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			a.runClaimed(ctx, recorded, started)
		}()
	}
}

// runClaimed runs a plain slot whose claim this attempt won: record
// (unless its batch was recorded), handler, result. It marks started
// done as the handler begins.
func (a *Attempt[J]) runClaimed(ctx context.Context, recorded bool, started *sync.WaitGroup) {
	r := a.r
	if !recorded {
		cctx, cancel := r.claimCtx()
		if err := r.host.RecordClaim(cctx, a); err != nil {
			// The claim is won and the slot is ours; only its history
			// entry is missing until the result is saved.
			r.host.StoreError(ctx, "RecordClaim", a, err)
		}
		cancel()
	}
	hctx := a.begin()
	started.Done()
	a.result = r.host.Execute(hctx, a)
	if !a.end() {
		return // Stop recorded the run when it interrupted it
	}
	a.saveEnd(&a.result)
}

// FireLeased is FirePlain for leased attempts: their first claims go in
// batches of at most Config.LeaseBatchSize (Host.ClaimLeaseBatch), and
// each answer is then acted on as Leased.Run acts on its first: a slot
// won, stood by for, or to be recorded late or overlapping goes on in a
// goroutine of its own (counted in inflight); one that is settled or
// whose claim failed ends there. answered is as in FirePlain.
func (r *Runner[J]) FireLeased(ctx context.Context, as []*Leased[J], inflight, answered *sync.WaitGroup) {
	fire(r, ctx, as, r.cfg.LeaseBatchSize, inflight, answered, nil, r.claimLeased)
}

// claimLeased sends one batch of first lease claims and acts on the
// answers.
func (r *Runner[J]) claimLeased(ctx context.Context, chunk []*Leased[J], inflight, _ *sync.WaitGroup) {
	for _, a := range chunk {
		// Listen before asking, as Run does, so that a release between
		// the answer and a backup's wait is not missed.
		a.listen()
	}
	sent := time.Now()
	for _, a := range chunk {
		a.sent = sent
	}
	cctx, cancel := r.claimCtx()
	answers := r.host.ClaimLeaseBatch(cctx, chunk)
	cancel()
	for i, a := range chunk {
		if err := answers[i].Err; err != nil {
			// A first claim that failed is not asked again (Run's rule):
			// fail closed, the slot is not run here.
			r.host.StoreError(ctx, "Claim", &a.Attempt, err)
			a.unlisten()
			continue
		}
		out := answers[i].Outcome
		r.host.LeaseAnswered(ctx, a, out)
		switch out.Kind {
		case KindWon, KindRunning, KindLate, KindOverlap:
			inflight.Add(1)
			go func() {
				defer inflight.Done()
				defer a.unlisten()
				if a.answer(ctx, out) {
					a.loop(ctx)
				}
			}()
		default: // settled: nothing to store, nothing to wait for
			a.answer(ctx, out)
			a.unlisten()
		}
	}
}
