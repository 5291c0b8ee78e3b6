package anarchontest

import (
	"testing"

	"github.com/anarchon/anarchon"
)

// testRetries: the store side of a handler retry (SPEC §6, retries), which
// the scheduler builds from the lease machinery. The failing holder saves
// its error under its token, then renews its lease for the backoff; until
// the lease ends no other claim wins; after it the first claim wins the
// slot as attempt+1, and history keeps the failed attempt as error (with
// its text and claim time), not lease_lost. The last attempt's finish
// settles the slot with its status.
func testRetries(t *testing.T, h Harness) {
	leaseTest(t, h, "AfterBackoff", func(t *testing.T, s *store, job string, slot int64) {
		ca := rclaim(job, slot, token(), "A", longLease)
		want(t, "claim by A", s.lclaim(0, ca), anarchon.OutcomeWon)
		failed := result(slot, ca.Token, "A", 1, anarchon.StatusError)
		failed.Error = "attempt 1 failed"
		s.save(0, job, failed, 100, 0)
		if !s.heartbeat(0, job, slot, ca.Token, h.Lease) { // the backoff
			t.Fatal("A's renewal for the backoff was refused")
		}
		cb := rclaim(job, slot, token(), "B", longLease)
		out := s.lclaim(1, cb)
		want(t, "claim by B during the backoff", out, anarchon.OutcomeRunning)
		if out.Holder != "A" || out.Attempt != 1 {
			t.Errorf("claim during the backoff: holder %q attempt %d, want A 1", out.Holder, out.Attempt)
		}
		h.Sleep(h.expiry())
		out = s.lclaim(1, cb)
		want(t, "claim by B after the backoff", out, anarchon.OutcomeWon)
		if out.Attempt != 2 {
			t.Fatalf("retry attempt %d, want 2", out.Attempt)
		}
		cc := rclaim(job, slot, token(), "C", longLease)
		want(t, "claim by C while B retries", s.lclaim(0, cc), anarchon.OutcomeRunning)

		_, by := s.histRecords(0, job)
		checkRecord(t, by, ca.Token, "A", 1, anarchon.StatusError, true)
		checkRecord(t, by, cb.Token, "B", 2, anarchon.StatusRunning, true)
		if r := by[ca.Token]; r.Error != "attempt 1 failed" || r.StartedAt.IsZero() {
			t.Errorf("History: the failed attempt lost its result: %+v", r)
		}

		if !s.finishResult(1, job, result(slot, cb.Token, "B", 2, anarchon.StatusSuccess), 100) {
			t.Fatal("the finish of B, the retry's holder, was refused")
		}
		out = s.lclaim(0, cc)
		want(t, "claim by C after the retry finished", out, anarchon.OutcomeDone)
		if out.Attempt != 2 || (out.Status != "" && out.Status != anarchon.StatusSuccess) {
			t.Errorf("settled slot: attempt %d status %q, want 2 success", out.Attempt, out.Status)
		}
		recs, by := s.histRecords(1, job)
		if len(recs) != 2 {
			t.Fatalf("History: %d records, want 2 (the error, the success): %+v", len(recs), recs)
		}
		checkRecord(t, by, ca.Token, "A", 1, anarchon.StatusError, true)
		checkRecord(t, by, cb.Token, "B", 2, anarchon.StatusSuccess, true)
	})
}
