package runner

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

type ctxKey struct{}

// TestSharedDeadline: the store calls that start within deadlineRenew of
// each other share one context, which keeps base's values, ends no sooner
// than storeTimeout after each of them started and no later than
// storeTimeout+deadlineRenew, and ends by itself at its deadline; a call
// after deadlineRenew gets a new one.
func TestSharedDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := context.WithValue(context.Background(), ctxKey{}, "v")
		var d sharedDeadline
		start := time.Now()
		first := d.get(base)
		time.Sleep(deadlineRenew / 2)
		if again := d.get(base); again != first {
			t.Errorf("a call %v later got another context", deadlineRenew/2)
		}
		dl, ok := first.Deadline()
		if !ok {
			t.Fatal("shared context has no deadline")
		}
		if late := time.Now().Add(storeTimeout); dl.Before(late) {
			t.Errorf("deadline %v is before storeTimeout after the second call (%v)", dl.Sub(start), late.Sub(start))
		}
		if dl.After(start.Add(storeTimeout + deadlineRenew)) {
			t.Errorf("deadline %v after the first call, want at most %v", dl.Sub(start), storeTimeout+deadlineRenew)
		}
		if first.Value(ctxKey{}) != "v" {
			t.Error("shared context lost base's values")
		}
		time.Sleep(deadlineRenew / 2)
		next := d.get(base)
		if next == first {
			t.Errorf("a call %v after the first got the same context", deadlineRenew)
		}
		if dl2, _ := next.Deadline(); !dl2.After(dl) {
			t.Errorf("renewed deadline %v not after %v", dl2.Sub(start), dl.Sub(start))
		}
		time.Sleep(time.Until(dl) - time.Nanosecond)
		if first.Err() != nil {
			t.Errorf("shared context ended %v before its deadline: %v", time.Nanosecond, first.Err())
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if !errors.Is(first.Err(), context.DeadlineExceeded) {
			t.Errorf("at its deadline the shared context's error is %v, want DeadlineExceeded", first.Err())
		}
		if next.Err() != nil {
			t.Errorf("the renewed context ended with the first: %v", next.Err())
		}
	})
}
