package anarchon

import (
	"fmt"
	"math"
	"time"

	"github.com/anarchon/anarchon/internal/jitter"
)

// Retry configures the retries of a job's handler errors (SPEC §6,
// retries). A retry is a further attempt of the same slot: the instance
// whose handler failed keeps the slot's lease for the backoff (by the
// store's clock), then any instance's claim of the slot takes it over as
// attempt+1, so exactly one instance runs each retry, and not necessarily
// the one that failed. Retries need a backend with a RunStore; on one
// without, or with NoLease, a job with MaxRetries > 0 is refused with
// [CodeNeedsRunStore] or [CodeBadOption].
//
// The backoff before the retry that follows attempt n is
// InitialBackoff·Multiplier^(n−1), at most MaxBackoff, plus a delay in
// [0, Jitter) derived, like the slot jitter, from a hash of the job's
// name, the slot and n (so every instance computes the same one).
//
// An error wrapped with [Permanent] is not retried, returned or panicked
// with: the slot ends with it.
// Neither is a run cut short by a lost lease, by Stop, or by Timeout's
// parent being cancelled; a Timeout itself is a handler error like any
// other and is retried. Under an overlap policy other than OverlapAllow a
// retry that would start at or after the job's next slot is not made: the
// slot ends with the last attempt's error; and a retry whose claim comes
// only after the next slot is due records an error instead of running.
//
// Each failed attempt's EventRunEnd (Retry, RetryIn, Reason) and WARN "run
// failed" line (attribute "retry") say whether a further attempt follows,
// which and when, or why not; its history record keeps the handler's
// error alone.
type Retry struct {
	// MaxRetries is how many times a failed slot is run again. 0, the
	// default, means never; at most MaxRetries (the constant, 1,000).
	MaxRetries int
	// InitialBackoff is the wait before the first retry. Defaults to
	// DefaultInitialBackoff (1 s).
	InitialBackoff time.Duration
	// MaxBackoff caps the wait between two attempts (jitter excluded).
	// Defaults to DefaultMaxBackoff (5 min); must not be below
	// InitialBackoff.
	MaxBackoff time.Duration
	// Multiplier grows the backoff after each retry. Defaults to 2; must
	// be at least 1 (1: a constant backoff).
	Multiplier float64
	// Jitter adds a delay in [0, Jitter) to each backoff. Defaults to 0.
	Jitter time.Duration
}

// Retry defaults, used where a Retry field is zero.
const (
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 5 * time.Minute
	DefaultMultiplier     = 2.0
	MaxRetries            = 1_000 // the largest Retry.MaxRetries
)

// checkRetry checks Retry's ranges and applies its defaults.
func checkRetry(r *Retry, bad badFunc) error {
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"Retry.InitialBackoff", r.InitialBackoff}, {"Retry.MaxBackoff", r.MaxBackoff}, {"Retry.Jitter", r.Jitter}} {
		if d.v < 0 {
			return bad(d.field, CodeNegativeDuration, fmt.Sprintf("%v is negative", d.v), nil)
		}
	}
	switch {
	case r.MaxRetries < 0:
		return bad("Retry.MaxRetries", CodeBadOption, fmt.Sprintf("%d is negative", r.MaxRetries), nil)
	case r.MaxRetries > MaxRetries:
		return bad("Retry.MaxRetries", CodeBadOption, fmt.Sprintf("%d is above the limit %d", r.MaxRetries, MaxRetries), nil)
	case r.Multiplier != 0 && (r.Multiplier < 1 || math.IsNaN(r.Multiplier) || math.IsInf(r.Multiplier, 0)):
		return bad("Retry.Multiplier", CodeBadOption, fmt.Sprintf("%v is not a finite number >= 1", r.Multiplier), nil)
	}
	if r.MaxRetries == 0 {
		return nil
	}
	if r.InitialBackoff == 0 {
		r.InitialBackoff = DefaultInitialBackoff
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = max(DefaultMaxBackoff, r.InitialBackoff)
	}
	if r.MaxBackoff < r.InitialBackoff {
		return bad("Retry.MaxBackoff", CodeBadOption, fmt.Sprintf("%v is below InitialBackoff %v", r.MaxBackoff, r.InitialBackoff), nil)
	}
	if r.Multiplier == 0 {
		r.Multiplier = DefaultMultiplier
	}
	return nil
}

// backoff returns the wait before the retry that follows attempt n of
// the job's slot (Unix ms).
func (j *job) backoff(slot int64, n int) time.Duration {
	r := j.opt.Retry
	d := float64(r.InitialBackoff) * math.Pow(r.Multiplier, float64(max(n-1, 0)))
	b := r.MaxBackoff
	if d < float64(r.MaxBackoff) {
		b = time.Duration(d)
	}
	// Mix the attempt into the seed so each retry of a slot draws its own
	// delay; the same on every instance.
	return b + jitter.Delay(j.name, slot, r.Jitter, j.opt.JitterSeed^(uint64(n)*0x9e3779b97f4a7c15))
}

// retryPlan is what the job's Retry makes of a handler's return: whether
// a further attempt of the slot follows, after how long, and, for a
// failure of a job that retries errors, a sentence saying so (Event.Reason
// of EventRunEnd, the "retry" attribute of "run failed"), so that a log
// tells the last attempt from one that is retried (SPEC §6, retries).
type retryPlan struct {
	retry bool
	in    time.Duration // the backoff, when retry
	note  string        // "" on success, and for a job without retries
}

// planRetry decides whether the failed attempt n of the job's slot is
// retried, and after how long. err is the handler's error and cut why its
// context ended before it returned (nil if it did not, or for its
// Timeout, which is retried like any error); now gives the store clock's
// estimate, read only when the decision needs it.
func (j *job) planRetry(slot time.Time, n int, err, cut error, now func() time.Time) retryPlan {
	r := j.opt.Retry
	if err == nil || !j.leased || r.MaxRetries == 0 {
		return retryPlan{}
	}
	no := func(why string) retryPlan { return retryPlan{note: "no retry: " + why} }
	switch {
	case cut != nil:
		// The runner settles such a run itself: a lost lease or a
		// hand-over leaves the slot to a takeover, which is not a retry.
		return no(fmt.Sprintf("the run was cut short (%v), which is not retried", cut))
	case IsPermanent(err):
		return no("the error is marked permanent")
	case n > r.MaxRetries:
		return no(fmt.Sprintf("attempt %d was the last one the retry limit allows (%d %s)", n, r.MaxRetries, plural(r.MaxRetries, "retry", "retries")))
	}
	d := j.backoff(slot.UnixMilli(), n)
	if next := j.nextSlot(slot); j.opt.Overlap != OverlapAllow && !now().Add(d).Before(next) {
		return no(fmt.Sprintf("a retry %v from now would start at or after the job's next slot %s (overlap %s)",
			d, next.UTC().Format(time.RFC3339), j.opt.Overlap))
	}
	// No retry starts past attempt MaxRetries+1; a takeover after a crash
	// (which counts as an attempt too) may still come after it.
	return retryPlan{retry: true, in: d, note: fmt.Sprintf("attempt %d (of at most %d) follows in %v", n+1, r.MaxRetries+1, d)}
}

// lateRetry reports whether attempt n (> 1) of the job's slot, won at now(),
// must not run: the job retries errors, its overlap policy is not allow,
// and the job's next slot is already due. A retry is only set up to start
// before the next slot (planRetry), but the claim that takes it may come
// late (every instance busy, the store slow); the attempt is then recorded
// as an error instead of overlapping the next slot. Takeovers after a
// crash of such a job obey the same rule.
func (j *job) lateRetry(slot time.Time, n int, now func() time.Time) bool {
	return n > 1 && j.opt.Retry.MaxRetries > 0 && j.opt.Overlap != OverlapAllow && !now().Before(j.nextSlot(slot))
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
