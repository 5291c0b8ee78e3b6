package runner

import (
	"context"
	"time"
)

// retryLater sets up the retry of a run whose handler failed (res.Retry)
// with the store's lease machinery, so that exactly one instance, any
// instance, runs the retry as the next attempt of the slot:
//
//  1. the failed attempt's result is stored under its token (before
//     anything else, so that a takeover that comes quickly finds the
//     error recorded, not a lost lease);
//  2. the lease is renewed to end res.RetryIn from now by the store's
//     clock: the store holds the slot for the backoff, and no claim can
//     take it over before;
//  3. this instance stands by under a fresh token, like every backup: the
//     first claim after the lease ends wins the slot as attempt+1 (SPEC
//     §6's takeover row), whichever instance sends it.
//
// If the renewal fails, the slot still ends its backoff when the lease
// that the run held runs out. It reports whether to claim again (always).
func (a *Leased[J]) retryLater(ctx context.Context, res *Result) bool {
	r := a.r
	a.save(res)
	sctx, cancel := r.storeCtx()
	defer cancel()
	backoff := max(res.RetryIn, time.Millisecond) // a lease must be positive
	a.retry(sctx, "Heartbeat", func() error {
		_, err := r.host.Heartbeat(sctx, a, backoff)
		return err
	})
	a.mu.Lock()
	a.state = runActive // the next win starts a new run
	a.mu.Unlock()
	r.host.Retrying(ctx, a, res)
	a.Token, a.standing, a.lateWins = r.host.NewToken(), true, 0
	return true
}

// LastResult is the result of the attempt's last run, as stored (its
// status may be lease_lost or unconfirmed); zero if it ran no handler.
func (a *Attempt[J]) LastResult() Result { return a.result }
