package membackend

import (
	"context"

	"github.com/anarchon/anarchon"
)

func checkInput(op string, in anarchon.ClaimInput) error {
	if in.Job == "" {
		return permanentf("%w (%s)", errEmptyJob, op)
	}
	if in.Token == "" {
		return permanentf("%w (%s, job %q)", errEmptyToken, op, in.Job)
	}
	if in.HistorySize < 0 {
		return permanentf("membackend: %s: job %q: negative history size %d", op, in.Job, in.HistorySize)
	}
	if in.HistoryTTL < 0 {
		return permanentf("membackend: %s: job %q: negative history TTL %v", op, in.Job, in.HistoryTTL)
	}
	return nil
}

// PrepareJob creates the job's empty state. It is idempotent. It fails on
// an empty job name or a negative historySize, and after Close.
func (b *Backend) PrepareJob(ctx context.Context, in anarchon.PrepareJobInput) error {
	job, historySize := in.Job, in.HistorySize
	if err := b.op(ctx, "PrepareJob"); err != nil {
		return err
	}
	defer b.mu.Unlock()
	if job == "" {
		return permanentf("%w (PrepareJob)", errEmptyJob)
	}
	if historySize < 0 {
		return permanentf("membackend: PrepareJob: job %q: negative history size %d", job, historySize)
	}
	j := b.job(job)
	if historySize > 0 {
		j.historySize = historySize
	}
	return nil
}

// Claim claims (in.Job, in.Slot) for in.InstanceID (SPEC §4). It returns
// true for the first token to claim the slot and for every repeat of that
// token, false for any other token. A won claim is also a history record
// (status running until SaveResult stores the result).
//
// It fails on an empty job name or token, and after Close (ErrClosed).
func (b *Backend) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	if err := b.op(ctx, "Claim"); err != nil {
		return false, err
	}
	defer b.mu.Unlock()
	return b.claim(in)
}

// claim is Claim under b.mu, which the caller holds: ClaimBatch answers
// each of its slots with it, so both answer alike.
func (b *Backend) claim(in anarchon.ClaimInput) (bool, error) {
	if err := checkInput("Claim", in); err != nil {
		return false, err
	}
	now := b.now()
	j := b.job(in.Job)
	b.sweep(j, now)
	if c, ok := j.claims[in.Slot]; ok {
		return c.token == in.Token, nil
	}
	if anarchon.TooEarly(in.Slot, now.UnixMilli()) {
		return false, &anarchon.EarlyError{Job: in.Job, Slot: in.Slot, StoreNow: now.UnixMilli()}
	}
	j.setLimits(in.HistorySize, in.HistoryTTL)
	if st, paused := b.paused(in.Job); paused {
		// The slot is settled for every claimer, now and after a resume.
		j.claims[in.Slot] = claimKey{token: anarchon.PausedToken(in.Slot), at: now}
		j.addSettled(in, pausedResult(in, st), now)
		j.hist.trim(j.historySize, j.historyTTL, now)
		return false, nil
	}
	j.claims[in.Slot] = claimKey{token: in.Token, at: now}
	j.hist.addClaim(anarchon.ClaimRecord{
		Slot:       in.Slot,
		Token:      in.Token,
		InstanceID: in.InstanceID,
		ClaimedAt:  now,
		Attempt:    1,
	}, now)
	j.hist.trim(j.historySize, j.historyTTL, now)
	return true, nil
}

// RecordClaim implements [anarchon.ClaimRecorder]. Claim already records a
// won claim, so RecordClaim only adds a claim record when the history has
// none for in.Token (it was trimmed, or the claim came from elsewhere). It
// never claims a slot.
func (b *Backend) RecordClaim(ctx context.Context, in anarchon.ClaimInput) error {
	if err := b.op(ctx, "RecordClaim"); err != nil {
		return err
	}
	defer b.mu.Unlock()
	return b.recordClaim(in)
}

// recordClaim is RecordClaim under b.mu.
func (b *Backend) recordClaim(in anarchon.ClaimInput) error {
	if err := checkInput("RecordClaim", in); err != nil {
		return err
	}
	now := b.now()
	j := b.job(in.Job)
	if j.hist.has(in.Token) {
		return nil
	}
	attempt := 1
	if r := j.runs[in.Slot]; r != nil && r.token == in.Token {
		attempt = r.attempt
	}
	j.setLimits(in.HistorySize, in.HistoryTTL)
	j.hist.addClaim(anarchon.ClaimRecord{
		Slot:       in.Slot,
		Token:      in.Token,
		InstanceID: in.InstanceID,
		ClaimedAt:  now,
		Attempt:    attempt,
	}, now)
	j.hist.trim(j.historySize, j.historyTTL, now)
	return nil
}

// RecordManualRun records a RunNow run as a manual claim record, without
// deduplication: every call adds a record, even for a slot that is already
// claimed. It returns in.Slot. Records of the same token merge.
func (b *Backend) RecordManualRun(ctx context.Context, in anarchon.ClaimInput) (int64, error) {
	if err := b.op(ctx, "RecordManualRun"); err != nil {
		return 0, err
	}
	defer b.mu.Unlock()
	if err := checkInput("RecordManualRun", in); err != nil {
		return 0, err
	}
	now := b.now()
	j := b.job(in.Job)
	j.setLimits(in.HistorySize, in.HistoryTTL)
	j.hist.addClaim(anarchon.ClaimRecord{
		Slot:       in.Slot,
		Token:      in.Token,
		InstanceID: in.InstanceID,
		ClaimedAt:  now,
		Attempt:    1,
		Manual:     true,
	}, now)
	j.hist.trim(j.historySize, j.historyTTL, now)
	return in.Slot, nil
}
