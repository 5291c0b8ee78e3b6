package anarchontest

import (
	"context"
	"testing"

	"github.com/anarchon/anarchon"
)

// testErrors: the error classes of SPEC §4. A call whose context was
// cancelled may fail, but not with an error marked anarchon.Permanent (the
// store did nothing wrong); after Harness.Break, History fails with one
// that is.
func testErrors(t *testing.T, h Harness) {
	t.Run("Cancelled", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 1)
		job := jobName("errors-cancelled")
		s.prepare(job, 10)
		ctx, cancel := context.WithCancel(s.ctx)
		cancel()
		b := s.b(0)
		slot := baseSlot()
		tok := token()
		check := func(op string, err error) {
			t.Helper()
			if anarchon.IsPermanent(err) {
				t.Errorf("%s on a cancelled context: %v is marked anarchon.Permanent; a retry with a live context may succeed", op, err)
			}
		}
		_, err := b.Claim(ctx, input(job, slot, tok, "a"))
		check("Claim", err)
		check("SaveResult", b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: anarchon.StoredResult{
			Slot: slot, Token: tok, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}, HistorySize: 10}))
		_, err = b.History(ctx, job, 0)
		check("History", err)
		if lb, ok := b.(anarchon.LeaseBackend); ok {
			_, err = lb.Runs().Claim(ctx, rclaim(job, slot+1000, token(), "a", longLease))
			check("RunStore.Claim", err)
		}
	})
	t.Run("Broken", func(t *testing.T) {
		if h.Break == nil {
			t.Skip("Harness.Break is nil")
		}
		t.Parallel()
		s := open(t, h, 1)
		job := jobName("errors-broken")
		s.prepare(job, 10)
		s.run(0, job, baseSlot(), "a", anarchon.StatusSuccess, 10, 0)
		h.Break(t, s.b(0), job)
		_, err := s.b(0).History(s.ctx, job, 0)
		if err == nil {
			t.Fatal("History after Harness.Break succeeded")
		}
		if !anarchon.IsPermanent(err) {
			t.Errorf("History after Harness.Break: %v is not marked anarchon.Permanent: the scheduler would retry it", err)
		}
	})
}
