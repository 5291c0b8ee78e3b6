package sqlbackend

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/anarchon/anarchon"
)

func checkJob(job string) error {
	if job == "" {
		return invalid("empty job name")
	}
	if len(job) > MaxJobName {
		return invalid("job name is %d bytes, longer than %d", len(job), MaxJobName)
	}
	if strings.IndexByte(job, 0) >= 0 {
		return invalid("job name contains a NUL byte")
	}
	return nil
}

// PrepareJob creates the job's row (its trimming watermark), idempotently.
// It runs Init first if needed. in.HistorySize is not stored: every SaveResult
// passes its own.
func (b *SQLBackend) PrepareJob(ctx context.Context, in anarchon.PrepareJobInput) error {
	job := in.Job
	if err := b.ready(ctx, "prepare job"); err != nil {
		return err
	}
	if err := checkJob(job); err != nil {
		return b.errorf("prepare job", err)
	}
	if _, err := b.all(ctx, b.cfg.Conn, b.q.insertJob, job); err != nil {
		return b.errorf("prepare job "+quoteJob(job), err)
	}
	return nil
}

func quoteJob(job string) string {
	if len(job) > 64 {
		job = job[:64] + "…"
	}
	return fmt.Sprintf("%q", job)
}

func checkClaim(in anarchon.ClaimInput) error {
	if err := checkJob(in.Job); err != nil {
		return err
	}
	if in.Token == "" {
		return invalid("empty token")
	}
	return nil
}

// Claim is the plain claim (SPEC §4): one INSERT … ON CONFLICT DO NOTHING
// on the runs table's (job, slot) key. It returns true if the row was
// inserted, or if it exists with in.Token (a repeated claim). A claim for a
// slot at or below the job's trimming watermark inserts nothing and loses,
// so trimming never reopens a slot. A claim of a paused job's slot (the
// control row is read by the same statement) inserts it settled under
// anarchon.PausedToken, so every claim loses, and records it paused
// (SPEC §12).
//
// Round trips: a won claim is the INSERT alone (with RETURNING); any
// other answer, and every claim of a dialect without RETURNING, adds one
// read of the slot's row and the server's clock (selectToken), which
// tells a lost claim from an early one. Settling a paused slot adds the
// history record (recordPaused: two more).
func (b *SQLBackend) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	if err := b.ready(ctx, "claim"); err != nil {
		return false, err
	}
	if err := checkClaim(in); err != nil {
		return false, b.errorf("claim", err)
	}
	if g := b.cfg.Guard; g != nil {
		if err := g(ctx); err != nil {
			return false, err
		}
	}
	return b.claim(ctx, b.cfg.Conn, in)
}

// claim is Claim's statements, run through q: the connection for Claim,
// the batch's transaction for ClaimBatch, so that both answer alike.
func (b *SQLBackend) claim(ctx context.Context, q Querier, in anarchon.ClaimInput) (bool, error) {
	paused := anarchon.PausedToken(in.Slot)
	rows, err := b.all(ctx, q, b.q.plainClaim,
		in.Job, in.Slot, paused, in.Token, in.InstanceID, in.Job, in.Job, in.Slot, in.Slot, anarchon.EarlyTolerance.Milliseconds())
	if err != nil {
		return false, b.errorf("claim", err)
	}
	if len(rows) > 0 {
		rd := reader(rows[0])
		tok := rd.string()
		if err := rd.Err(); err != nil {
			return false, b.errorf("claim", err)
		}
		if tok != paused {
			return true, nil
		}
		// The job is paused: the slot is settled; record it once.
		if err := b.recordPaused(ctx, q, in.Job, paused, in.Slot, in.InstanceID); err != nil {
			return false, b.errorf("claim", err)
		}
		return false, nil
	}
	rows, err = b.all(ctx, q, b.q.selectToken, in.Job, in.Slot)
	if err != nil {
		return false, b.errorf("claim", err)
	}
	if len(rows) != 1 {
		return false, b.errorf("claim", fmt.Errorf("token query returned %d rows", len(rows)))
	}
	rd := reader(rows[0])
	tok, inst, now := rd.string(), rd.string(), rd.int64()
	if err := rd.Err(); err != nil {
		return false, b.errorf("claim", err)
	}
	if tok == "" { // no row: tokens are never empty (checkClaim)
		// Below the watermark (trimmed, settled long ago), or early. The
		// server's clock only moves on: a slot still ahead of it now was
		// ahead when the insert was refused.
		if anarchon.TooEarly(in.Slot, now) {
			return false, &anarchon.EarlyError{Job: in.Job, Slot: in.Slot, StoreNow: now}
		}
		return false, nil
	}
	if tok == paused && b.d.NoReturning && inst == in.InstanceID {
		// The INSERT returned nothing, so this claim may be the one that
		// settled the slot as paused: the row names the instance that
		// inserted it, which records it, as RETURNING would have told it
		// to (the record is idempotent).
		if err := b.recordPaused(ctx, q, in.Job, paused, in.Slot, in.InstanceID); err != nil {
			return false, b.errorf("claim", err)
		}
	}
	return tok == in.Token, nil
}

// recordPaused stores the history record of a slot settled by a pause
// under token (anarchon.PausedToken), naming who paused the job and why,
// from its control row; a job without one is not recorded. The record's
// key (job, token) keeps it to one.
func (b *SQLBackend) recordPaused(ctx context.Context, q Querier, job, token string, slot int64, instance string) error {
	rows, err := b.all(ctx, q, b.q.jobState, job)
	if err != nil || len(rows) == 0 {
		return err
	}
	st, err := readState(rows[0])
	if err != nil {
		return err
	}
	msg := "job paused by " + st.By
	if st.Reason != "" {
		msg += ": " + st.Reason
	}
	_, err = b.all(ctx, q, b.q.pausedResult, job, token, slot, instance, msg)
	return err
}

// RecordManualRun stores a RunNow run in the history, without touching the
// runs table: manual runs are never deduplicated. It returns in.Slot.
func (b *SQLBackend) RecordManualRun(ctx context.Context, in anarchon.ClaimInput) (int64, error) {
	if err := b.ready(ctx, "record manual run"); err != nil {
		return 0, err
	}
	if err := checkClaim(in); err != nil {
		return 0, b.errorf("record manual run", err)
	}
	if _, err := b.all(ctx, b.cfg.Conn, b.q.insertManual,
		in.Job, in.Token, in.Slot, in.InstanceID); err != nil {
		return 0, b.errorf("record manual run", err)
	}
	return in.Slot, nil
}

// lockJob makes sure the job's row exists and locks it for the rest of the
// transaction (Serialize, then SELECT … ForUpdate).
func (b *SQLBackend) lockJob(ctx context.Context, tx Querier, job string) error {
	_, err := b.lockJobRow(ctx, tx, job)
	return err
}

// jobRow is what lockJobRow reads of the locked job row.
type jobRow struct {
	watermark int64 // the trimming watermark, if hasWM
	hasWM     bool
	fence     int64 // the last fencing token a won lease claim took; 0 for none
	now       int64 // the server's clock, read after the lock was taken (Unix ms)
}

// lockJobRow locks the job (see lockJob) and returns its row and the
// server's clock, read after the lock was taken.
//
// With row locks (ForUpdate set) the job row's lock is what serialises
// claims of the job, and Serialize only guards the creation of a missing
// row; without row locks Serialize (or the exclusive transaction) runs
// first, every time.
func (b *SQLBackend) lockJobRow(ctx context.Context, tx Querier, job string) (jobRow, error) {
	rowLocks := b.d.ForUpdate != ""
	serialize := func() error {
		if b.q.serialize == "" {
			return nil
		}
		_, err := b.all(ctx, tx, b.q.serialize, job)
		return err
	}
	if !rowLocks {
		if err := serialize(); err != nil {
			return jobRow{}, err
		}
	}
	for i := range 2 {
		rows, err := b.all(ctx, tx, b.q.selectJob, job)
		if err != nil {
			return jobRow{}, err
		}
		if len(rows) > 0 {
			rd := reader(rows[0])
			var j jobRow
			j.watermark, j.hasWM = rd.nullInt64()
			j.fence = rd.int64()
			j.now = rd.int64()
			return j, rd.Err()
		}
		if i == 0 && rowLocks {
			if err := serialize(); err != nil {
				return jobRow{}, err
			}
		}
		if _, err := b.all(ctx, tx, b.q.insertJob, job); err != nil {
			return jobRow{}, err
		}
	}
	return jobRow{}, errors.New("job row vanished")
}

// takeFence gives a won lease claim of job the job's next fencing token:
// one above the last (j, read under the job's lock), written back to the
// locked row in the claim's transaction, so that every later win of the
// job, whichever path and handle, reads it and goes above it.
func (b *SQLBackend) takeFence(ctx context.Context, tx Querier, job string, j *jobRow) (uint64, error) {
	if j.fence < 0 {
		return 0, fmt.Errorf("job %s: stored fence %d is negative", quoteJob(job), j.fence)
	}
	j.fence++
	if _, err := b.all(ctx, tx, b.q.setFence, j.fence, job); err != nil {
		return 0, err
	}
	return uint64(j.fence), nil
}

// CheckJob implements anarchon.JobChecker: it refuses a job name the
// tables cannot hold (empty, longer than MaxJobName bytes, or with a NUL
// byte, which PostgreSQL's text type rejects), so the job fails at
// registration rather than at its first claim.
func (b *SQLBackend) CheckJob(l anarchon.JobLimits) error {
	if err := checkJob(l.Job); err != nil {
		return fmt.Errorf("%s: %w", b.cfg.Name, err)
	}
	return nil
}
