package anarchontest

import (
	"errors"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// testEarly: never early (SPEC §4). A claim of a slot later than the
// store's now plus anarchon.EarlyTolerance is refused with an
// *anarchon.EarlyError, which is not permanent and writes nothing: the
// same slot claimed once due is won. Both the plain claim and the lease
// claim are checked, for slots 30 s and 1 h ahead, the steps of a host
// clock the suite models.
func testEarly(t *testing.T, h Harness, hasLeases bool) {
	refused := func(t *testing.T, op string, slot int64, err error) {
		t.Helper()
		var ee *anarchon.EarlyError
		if !errors.As(err, &ee) || !errors.Is(err, anarchon.ErrEarly) {
			t.Fatalf("%s of a slot %v ahead of the store's clock: err %v, want an *anarchon.EarlyError", op,
				time.Until(time.UnixMilli(slot)).Round(time.Second), err)
		}
		if anarchon.IsPermanent(err) {
			t.Errorf("%s: %v is marked permanent; the slot is claimable once due", op, err)
		}
		if ee.Slot != slot {
			t.Errorf("%s: EarlyError.Slot %d, want %d", op, ee.Slot, slot)
		}
		if ee.StoreNow != 0 && !anarchon.TooEarly(slot, ee.StoreNow) {
			t.Errorf("%s: EarlyError.StoreNow %d does not make slot %d early", op, ee.StoreNow, slot)
		}
	}
	t.Run("Claim", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		job := jobName("early")
		s.prepare(job, 10)
		now := s.now()
		for _, ahead := range []time.Duration{30 * time.Second, time.Hour} {
			slot := now.Add(ahead).Truncate(time.Second).UnixMilli()
			_, err := s.b(0).Claim(s.ctx, input(job, slot, token(), "fast"))
			refused(t, "Claim", slot, err)
		}
		// Nothing was written: the due slot and a refused one claimed
		// once due (here: a slot just past) are won by another token.
		due := now.Add(-time.Second).Truncate(time.Second).UnixMilli()
		if !s.claim(1, input(job, due, token(), "b")) {
			t.Error("claim of a due slot lost")
		}
		for _, rec := range s.history(1, job, 0) {
			if rec.InstanceID == "fast" {
				t.Errorf("a refused claim left a history record: %+v", rec)
			}
		}
	})
	if !hasLeases {
		return
	}
	t.Run("RunStore", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		job := jobName("early-lease")
		s.prepare(job, 10)
		now := s.now()
		for _, ahead := range []time.Duration{30 * time.Second, time.Hour} {
			slot := now.Add(ahead).Truncate(time.Second).UnixMilli()
			c := rclaim(job, slot, token(), "fast", longLease)
			c.MaxLate = time.Minute
			_, err := s.rs(0).Claim(s.ctx, c)
			refused(t, "RunStore.Claim", slot, err)
			if act := s.active(1, job); len(act) != 0 {
				t.Errorf("a refused lease claim left an active run: %+v", act)
			}
		}
		due := now.Add(-time.Second).Truncate(time.Second).UnixMilli()
		c := rclaim(job, due, token(), "b", longLease)
		c.MaxLate = time.Minute
		want(t, "lease claim of a due slot", s.lclaim(1, c), anarchon.OutcomeWon)
	})
}
