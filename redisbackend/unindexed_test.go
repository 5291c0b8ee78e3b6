package redisbackend_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
)

// The tests of this file check how plain claims without a result (kept
// only in the job's run hash, outside its history index) mix with the
// other records of a history: manual runs, lease runs, settled slots and
// trimming.

// histFixture is a backend and one job with helpers that fail the test on
// a store error.
type histFixture struct {
	t     *testing.T
	b     *redisbackend.Backend
	job   string
	slot0 int64
}

func newHistFixture(t *testing.T, job string) *histFixture {
	addr := redisAddr(t)
	return &histFixture{
		t:     t,
		b:     newBackend(t, addr, freshPrefix(t, addr), nil),
		job:   job,
		slot0: time.Now().Truncate(time.Minute).UnixMilli() - 3600_000, // every slot due: never early
	}
}

// slot is the i-th slot of the job, one second apart.
func (f *histFixture) slot(i int) int64 { return f.slot0 + int64(i)*1000 }

func (f *histFixture) claim(i int, tok string) {
	f.t.Helper()
	ok, err := f.b.Claim(f.t.Context(), anarchon.ClaimInput{Job: f.job, Slot: f.slot(i), Token: tok, InstanceID: "a"})
	if err != nil || !ok {
		f.t.Fatalf("claim of slot %d: %v, %v; want true", i, ok, err)
	}
}

// claimLoses checks that another token's claim of slot i loses; what
// names the slot's state in the error.
func (f *histFixture) claimLoses(i int, what string) {
	f.t.Helper()
	ok, err := f.b.Claim(f.t.Context(), anarchon.ClaimInput{Job: f.job, Slot: f.slot(i), Token: randToken(), InstanceID: "b"})
	if err != nil || ok {
		f.t.Errorf("claim of %s %d by another token: %v, %v; want false", what, i, ok, err)
	}
}

func (f *histFixture) manual(i int, tok string) {
	f.t.Helper()
	if _, err := f.b.RecordManualRun(f.t.Context(), anarchon.ClaimInput{Job: f.job, Slot: f.slot(i), Token: tok, InstanceID: "m"}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *histFixture) save(i int, tok string, st anarchon.Status, size int, ttl time.Duration) {
	f.t.Helper()
	r := anarchon.StoredResult{Slot: f.slot(i), Token: tok, InstanceID: "a", Attempt: 1, Status: st}
	if err := f.b.SaveResult(f.t.Context(), anarchon.SaveResultInput{Job: f.job, Result: r, HistorySize: size, HistoryTTL: ttl}); err != nil {
		f.t.Fatal(err)
	}
}

// history returns History(limit) as "slot:token:status" strings.
func (f *histFixture) history(limit int) []string {
	f.t.Helper()
	recs, err := f.b.History(f.t.Context(), f.job, limit)
	if err != nil {
		f.t.Fatal(err)
	}
	out := []string{}
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%d:%s:%s", (r.Slot.UnixMilli()-f.slot0)/1000, r.Token, r.Status))
	}
	return out
}

// TestTrimmedRunStaysOutOfHistory: when trimming drops the record of a
// slot's current claim while another record of the same slot (a manual
// run recorded at the same millisecond, or an earlier lease holder) is
// kept, the dropped run must not come back in History as a claim without
// a result.
func TestTrimmedRunStaysOutOfHistory(t *testing.T) {
	t.Run("plain and manual", func(t *testing.T) {
		f := newHistFixture(t, "ghost")
		// Tokens chosen so the claim's member sorts before the manual run's
		// in the index: trimming reaches it first.
		f.claim(1, "a-claim")
		f.save(1, "a-claim", anarchon.StatusSuccess, 100, 0)
		f.manual(1, "z-manual")
		f.save(1, "z-manual", anarchon.StatusSuccess, 100, 0)
		f.claim(2, "b-claim")
		f.save(2, "b-claim", anarchon.StatusSuccess, 2, 0)
		if got, want := f.history(0), []string{"2:b-claim:success", "1:z-manual:success"}; !slices.Equal(got, want) {
			t.Errorf("History(0) = %v, want %v", got, want)
		}
		// The slot stays claimed for every other token.
		f.claimLoses(1, "partly trimmed slot")
	})
	t.Run("lease takeover", func(t *testing.T) {
		f := newHistFixture(t, "ghost-lease")
		rs := f.b.Runs().(anarchon.ResultFinisher)
		lease := func(tok string) anarchon.ClaimOutcome {
			t.Helper()
			out, err := f.b.Runs().Claim(t.Context(), anarchon.RunClaim{
				ClaimInput: anarchon.ClaimInput{Job: f.job, Slot: f.slot(1), Token: tok, InstanceID: "a"},
				Lease:      50 * time.Millisecond, AllowOverlap: true, MaxAttempts: 3,
			})
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		if out := lease("b-first"); out.Kind != anarchon.OutcomeWon {
			t.Fatalf("first lease claim: %+v", out)
		}
		time.Sleep(120 * time.Millisecond) // the first holder's lease expires
		if out := lease("a-second"); out.Kind != anarchon.OutcomeWon || out.Attempt != 2 {
			t.Fatalf("takeover: %+v", out)
		}
		finish := func(tok string, att int) {
			t.Helper()
			r := anarchon.StoredResult{Slot: f.slot(1), Token: tok, InstanceID: "a", Attempt: att, Status: anarchon.StatusSuccess}
			if _, err := rs.FinishResult(t.Context(), anarchon.SaveResultInput{Job: f.job, Result: r, HistorySize: 100}); err != nil {
				t.Fatal(err)
			}
		}
		finish("a-second", 2)
		finish("b-first", 1) // stored as lease_lost
		f.claim(2, "c-next")
		f.save(2, "c-next", anarchon.StatusSuccess, 2, 0)
		if got, want := f.history(0), []string{"2:c-next:success", "1:b-first:lease_lost"}; !slices.Equal(got, want) {
			t.Errorf("History(0) = %v, want %v", got, want)
		}
		if out := lease(randToken()); out.Kind != anarchon.OutcomeDone {
			t.Errorf("lease claim of the partly trimmed slot: %+v; want done", out)
		}
	})
}

// TestHistoryLimitWithSettledSlots: a lease slot settled as missed keeps a
// run state without a token while its result is stored under the caller's
// token; History with a limit must still return limit records.
func TestHistoryLimitWithSettledSlots(t *testing.T) {
	f := newHistFixture(t, "settled")
	for i := 1; i <= 3; i++ {
		tok := fmt.Sprintf("t%d", i)
		f.claim(i, tok)
		f.save(i, tok, anarchon.StatusSuccess, 100, 0)
	}
	out, err := f.b.Runs().Claim(t.Context(), anarchon.RunClaim{
		ClaimInput: anarchon.ClaimInput{Job: f.job, Slot: f.slot(4), Token: "late", InstanceID: "a"},
		Lease:      time.Minute, MaxLate: time.Millisecond, MaxAttempts: 1,
	})
	if err != nil || out.Kind != anarchon.OutcomeLate {
		t.Fatalf("lease claim of an old slot: %+v, %v; want late", out, err)
	}
	f.save(4, "late", anarchon.StatusMissed, 100, 0)
	if got, want := f.history(2), []string{"4:late:missed", "3:t3:success"}; !slices.Equal(got, want) {
		t.Errorf("History(2) = %v, want %v", got, want)
	}
	if got, want := f.history(0), []string{"4:late:missed", "3:t3:success", "2:t2:success", "1:t1:success"}; !slices.Equal(got, want) {
		t.Errorf("History(0) = %v, want %v", got, want)
	}
	// Trimming to 2 keeps the two newest records, and the settled slot
	// stays settled.
	f.claim(5, "t5")
	f.save(5, "t5", anarchon.StatusSuccess, 2, 0)
	if got, want := f.history(0), []string{"5:t5:success", "4:late:missed"}; !slices.Equal(got, want) {
		t.Errorf("History(0) after trimming to 2 = %v, want %v", got, want)
	}
}

// TestManualRunsDoNotHideDeadClaims: claims whose instance died before
// saving a result are trimmed by HistorySize and HistoryTTL even when the
// history also holds manual runs (records with no run state of their own).
func TestManualRunsDoNotHideDeadClaims(t *testing.T) {
	t.Run("size", func(t *testing.T) {
		f := newHistFixture(t, "hidden-size")
		f.claim(1, "dead1")
		f.claim(2, "dead2")
		f.manual(3, "m3")
		f.save(3, "m3", anarchon.StatusSuccess, 100, 0)
		f.manual(4, "m4")
		f.save(4, "m4", anarchon.StatusSuccess, 100, 0)
		f.claim(5, "t5")
		f.save(5, "t5", anarchon.StatusSuccess, 2, 0)
		if got, want := f.history(0), []string{"5:t5:success", "4:m4:success"}; !slices.Equal(got, want) {
			t.Errorf("History(0) after trimming to 2 = %v, want %v", got, want)
		}
		for _, i := range []int{1, 2} {
			f.claimLoses(i, "trimmed slot")
		}
	})
	t.Run("ttl", func(t *testing.T) {
		f := newHistFixture(t, "hidden-ttl")
		const ttl = 300 * time.Millisecond
		f.claim(1, "dead")
		f.manual(2, "m2")
		f.save(2, "m2", anarchon.StatusSuccess, 100, 0)
		time.Sleep(ttl + ttl/2) // the server's clock passes the TTL
		f.manual(3, "m3")
		f.save(3, "m3", anarchon.StatusSuccess, 100, ttl)
		if got, want := f.history(0), []string{"3:m3:success"}; !slices.Equal(got, want) {
			t.Errorf("History(0) after the TTL = %v, want %v", got, want)
		}
	})
}

// TestInFlightClaimSharesSlotWithManualRun: a plain claim still running
// (no result yet) keeps its claim when another record of its slot, a
// manual run recorded at the same millisecond, is trimmed by the TTL: the
// claim still answers its own token, lists in History and takes its result.
func TestInFlightClaimSharesSlotWithManualRun(t *testing.T) {
	f := newHistFixture(t, "inflight")
	const ttl = 300 * time.Millisecond
	f.manual(1, "m1")
	f.save(1, "m1", anarchon.StatusSuccess, 100, 0)
	time.Sleep(ttl + ttl/2) // the manual run's result ages past the TTL
	f.claim(1, "run1")
	f.manual(2, "m2")
	f.save(2, "m2", anarchon.StatusSuccess, 100, ttl)
	if got, want := f.history(0), []string{"2:m2:success", "1:run1:running"}; !slices.Equal(got, want) {
		t.Errorf("History(0) = %v, want %v", got, want)
	}
	f.claim(1, "run1") // repeat safety
	f.claimLoses(1, "claimed slot")
	f.save(1, "run1", anarchon.StatusSuccess, 100, ttl)
	if got, want := f.history(0), []string{"2:m2:success", "1:run1:success"}; !slices.Equal(got, want) {
		t.Errorf("History(0) after the result = %v, want %v", got, want)
	}
}

// TestFinishOnPlainClaim: Finish and FinishResult accept a plain claim's
// token. A plain claim finished without a result stays unindexed: History
// lists it once (without a result), trimming drops it by size and its
// slot stays claimed; FinishResult indexes it with its result.
func TestFinishOnPlainClaim(t *testing.T) {
	f := newHistFixture(t, "finish-plain")
	rs := f.b.Runs()
	f.claim(1, "p1")
	if ok, err := rs.Finish(t.Context(), anarchon.FinishInput{Job: f.job, Slot: f.slot(1), Token: "p1", Status: anarchon.StatusSuccess}); err != nil || !ok {
		t.Fatalf("Finish of a plain claim: %v, %v; want true", ok, err)
	}
	if ok, err := rs.Finish(t.Context(), anarchon.FinishInput{Job: f.job, Slot: f.slot(1), Token: "other", Status: anarchon.StatusSuccess}); err != nil || ok {
		t.Errorf("Finish with another token: %v, %v; want false", ok, err)
	}
	f.claim(2, "p2")
	r := anarchon.StoredResult{Slot: f.slot(2), Token: "p2", InstanceID: "a", Attempt: 1, Status: anarchon.StatusError, Error: "boom"}
	if ok, err := rs.(anarchon.ResultFinisher).FinishResult(t.Context(), anarchon.SaveResultInput{Job: f.job, Result: r, HistorySize: 100}); err != nil || !ok {
		t.Fatalf("FinishResult of a plain claim: %v, %v; want true", ok, err)
	}
	if got, want := f.history(0), []string{"2:p2:error", "1:p1:running"}; !slices.Equal(got, want) {
		t.Errorf("History(0) = %v, want %v", got, want)
	}
	f.claim(1, "p1") // repeat safety holds after Finish
	f.claim(3, "p3")
	f.save(3, "p3", anarchon.StatusSuccess, 2, 0)
	if got, want := f.history(0), []string{"3:p3:success", "2:p2:error"}; !slices.Equal(got, want) {
		t.Errorf("History(0) after trimming to 2 = %v, want %v", got, want)
	}
	f.claimLoses(1, "trimmed slot")
}
