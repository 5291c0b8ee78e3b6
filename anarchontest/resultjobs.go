package anarchontest

import (
	"fmt"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// The batches of a burst carry one result per job. testResultBatchJobs and
// testFinishBatchJobs store such batches on one group of jobs and the same
// results one call each on a twin group, and check that the two groups end
// alike (SPEC §4, batches: a batch entry is answered and stored as its
// single call): the answers, every history record, the trimming to the
// history size and the slots it makes lost. A store may write a batch of
// distinct jobs differently from one of repeated jobs (sqlbackend on
// SQLite does), which testResultBatch and testFinishBatch do not send.

// jobsPerBatch is the jobs of each group; jobRounds the batches sent, one
// slot each, more than any job's history size so that every history is
// trimmed.
const (
	jobsPerBatch = 5
	jobRounds    = 6
)

// jobHistory is the history size of job number j: 3 or 4, so that a batch
// carries two sizes.
func jobHistory(j int) int { return 3 + j%2 }

// twinJobs prepares the batched group and the single-call group of jobs,
// with jobHistory(j) records each.
func twinJobs(s *store, base string) (batched, single []string) {
	for j := range jobsPerBatch {
		batched = append(batched, jobName(fmt.Sprintf("%s-batch-%d", base, j)))
		single = append(single, jobName(fmt.Sprintf("%s-single-%d", base, j)))
		s.prepare(batched[j], jobHistory(j))
		s.prepare(single[j], jobHistory(j))
	}
	return batched, single
}

// roundHistory is the history size the results of round r of job number
// j carry: jobHistory(j), one less in the last round, whose trim then
// deletes two slots at once.
func roundHistory(j, r int) int {
	if r == jobRounds-1 {
		return jobHistory(j) - 1
	}
	return jobHistory(j)
}

// trimmedSlot is the newest slot that trimming job number j's history
// deletes after jobRounds slots from slot0, in the last round's trim with
// an older one: a claim of it must lose, which it does only if the
// watermark was raised over every slot a trim deleted, not just the
// oldest.
func trimmedSlot(j int, slot0 int64) int64 {
	return slot0 + int64(jobRounds-roundHistory(j, jobRounds-1)-1)*1000
}

// jobResult is the result the tests save for job number j's run of slot
// under tok, started at start: successes, an error with its text and
// output (j = 1), and an error without text (j = 2; testFinishBatchJobs
// sends that job's last result under a token that holds nothing).
func jobResult(j int, slot int64, tok string, start time.Time) anarchon.StoredResult {
	r := resultAt(slot, tok, "a", 1, anarchon.StatusSuccess, start)
	switch j {
	case 1:
		r.Status, r.Error, r.Output = anarchon.StatusError, fmt.Sprintf("exit status %d", slot%7), "line one\nline two"
	case 2:
		r.Status = anarchon.StatusError
	}
	return r
}

// sameHistories fails t unless job a's history and job b's agree record
// by record in everything but the job's name and the tokens, which
// differ between the groups, and unless each holds least to most records
// (trimming keeps a slot's records together, or counts records: the
// stores differ).
func sameHistories(t *testing.T, s *store, a, b string, least, most int) {
	t.Helper()
	ra, rb := s.history(1, a, 0), s.history(1, b, 0)
	if len(ra) != len(rb) || len(ra) < least || len(ra) > most {
		t.Errorf("History: %s has %d records, %s %d; want the same, %d to %d:\n%+v\n%+v", a, len(ra), b, len(rb), least, most, ra, rb)
		return
	}
	for k := range ra {
		x, y := ra[k], rb[k]
		x.Job, y.Job, x.Token, y.Token = b, b, "", ""
		claimed := x.ClaimedAt.IsZero() == y.ClaimedAt.IsZero()
		x.ClaimedAt = y.ClaimedAt
		if !claimed || !sameRecord(x, y) {
			t.Errorf("History record %d: batched %s: %+v\nsingle %s: %+v", k, a, ra[k], b, rb[k])
		}
	}
}

// testResultBatchJobs stores jobRounds batches of plain results, one per
// job of the batched group, and the same results one SaveResult each on
// the single group.
func testResultBatchJobs(t *testing.T, h Harness) {
	t.Parallel()
	s := open(t, h, 2)
	rb, ok := anarchon.As[anarchon.ResultBatcher](s.b(0))
	if !ok {
		t.Fatal("handle 0 has no anarchon.ResultBatcher")
	}
	batched, single := twinJobs(s, "results")
	slot0 := baseSlot()
	for r := range jobRounds {
		slot := slot0 + int64(r)*1000
		start := ms(time.Now()).Add(-time.Second)
		var in []anarchon.SaveResultInput
		for j := range jobsPerBatch {
			ta, tb := token(), token()
			ca, cb := input(batched[j], slot, ta, "a"), input(single[j], slot, tb, "a")
			ca.HistorySize, cb.HistorySize = roundHistory(j, r), roundHistory(j, r)
			if j == 3 {
				// The slot goes to another token first: the result
				// of a claim that lost settles nothing.
				ca.Token, cb.Token = token(), token()
			}
			s.claim(1, ca)
			s.claim(1, cb)
			in = append(in, anarchon.SaveResultInput{Job: batched[j], HistorySize: roundHistory(j, r), Result: jobResult(j, slot, ta, start)})
			s.save(0, single[j], jobResult(j, slot, tb, start), roundHistory(j, r), 0)
		}
		errs, err := rb.SaveResults(s.ctx, in)
		if err != nil || len(errs) != len(in) {
			t.Fatalf("SaveResults(%d) = %d answers, %v", len(in), len(errs), err)
		}
		for k, e := range errs {
			if e != nil {
				t.Fatalf("SaveResults: result %d: %v", k, e)
			}
		}
	}
	for j := range jobsPerBatch {
		n := roundHistory(j, jobRounds-1)
		if j == 3 {
			n *= 2 // each kept slot's claim, running, and the result of the token that lost it
		}
		sameHistories(t, s, batched[j], single[j], roundHistory(j, jobRounds-1), n)
		// The trimmed slots stay lost to new claims on both groups.
		for _, job := range []string{batched[j], single[j]} {
			if slot := trimmedSlot(j, slot0); s.claim(1, input(job, slot, token(), "b")) {
				t.Errorf("%s: a claim of the trimmed slot %d won", job, slot)
			}
		}
	}
}

// testFinishBatchJobs finishes jobRounds batches of leased runs, one per
// job of the batched group, and the same runs one FinishResult each on
// the single group. In the last round, job 2's result carries a token
// that holds nothing: both groups answer it not held and store it as
// lease_lost.
func testFinishBatchJobs(t *testing.T, h Harness) {
	t.Parallel()
	s := open(t, h, 2)
	fb, ok := anarchon.As[anarchon.FinishBatcher](s.b(1))
	if !ok {
		t.Fatal("handle 1 has no anarchon.FinishBatcher")
	}
	batched, single := twinJobs(s, "finishes")
	slot0 := baseSlot()
	for r := range jobRounds {
		slot := slot0 + int64(r)*1000
		start := ms(time.Now()).Add(-time.Second)
		var in []anarchon.SaveResultInput
		var held []bool
		for j := range jobsPerBatch {
			ta, tb := token(), token()
			want(t, "claim", s.lclaim(0, rclaim(batched[j], slot, ta, "a", longLease)), anarchon.OutcomeWon)
			want(t, "claim", s.lclaim(0, rclaim(single[j], slot, tb, "a", longLease)), anarchon.OutcomeWon)
			if j == 3 {
				// A released run is finished by its holder.
				s.release(0, batched[j], slot, ta)
				s.release(0, single[j], slot, tb)
			}
			if j == 2 && r == jobRounds-1 {
				ta, tb = token(), token()
			}
			in = append(in, anarchon.SaveResultInput{Job: batched[j], HistorySize: roundHistory(j, r), Result: jobResult(j, slot, ta, start)})
			held = append(held, s.finishResult(0, single[j], jobResult(j, slot, tb, start), roundHistory(j, r)))
		}
		out, err := fb.FinishResults(s.ctx, in)
		if err != nil || len(out) != len(in) {
			t.Fatalf("FinishResults(%d) = %d answers, %v", len(in), len(out), err)
		}
		for k, a := range out {
			if a.Err != nil || a.Held != held[k] {
				t.Errorf("round %d: finish of job %d: %+v, want held %v as FinishResult answered", r, k, a, held[k])
			}
		}
	}
	for j := range jobsPerBatch {
		n := roundHistory(j, jobRounds-1)
		if j == 2 {
			n++ // the run still held, and the lease_lost result
		}
		sameHistories(t, s, batched[j], single[j], roundHistory(j, jobRounds-1), n)
		for _, job := range []string{batched[j], single[j]} {
			if slot := trimmedSlot(j, slot0); s.lclaim(1, rclaim(job, slot, token(), "b", longLease)).Kind == anarchon.OutcomeWon {
				t.Errorf("%s: a lease claim of the trimmed slot %d won", job, slot)
			}
		}
	}
}
