package sqlbackend

import (
	"context"
	"time"

	"github.com/anarchon/anarchon"
)

func msOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// SaveResult stores r in the job's history (a later save with the same
// token replaces it), marks a plain claim's run row done, and trims the
// history in the same transaction: results older (by slot) than the newest
// historySize and, if historyTTL > 0, results saved more than historyTTL
// ago by the server's clock. Settled run rows outside the same bounds (by
// slot, or claimed more than historyTTL ago) are deleted too, and the job's
// watermark is raised to the highest slot deleted, so that a late claim for
// it loses (SPEC §4). Leased runs still running or released are never
// deleted. historySize <= 0 means anarchon.DefaultHistorySize; a negative
// historyTTL is an error. An empty r.Status is stored as success, or as
// error if r.Error is set. With Routines.SaveResult it is one statement.
func (b *SQLBackend) SaveResult(ctx context.Context, in anarchon.SaveResultInput) error {
	if err := b.ready(ctx, "save result"); err != nil {
		return err
	}
	sr, err := newSaved(in.Job, in.Result, in.HistorySize, in.HistoryTTL)
	if err != nil {
		return b.errorf("save result", err)
	}
	if b.rt.SaveResult != "" {
		if _, err := b.all(ctx, b.cfg.Conn, b.rt.SaveResult, b.saveResultArgs(sr)...); err != nil {
			return b.errorf("save result", err)
		}
		return nil
	}
	err = b.cfg.Conn.Transaction(ctx, func(tx Querier) error { return b.saveResult(ctx, tx, sr) })
	if err != nil {
		return b.errorf("save result", err)
	}
	return nil
}

// saveResult is SaveResult's transaction body, run in tx: its own
// transaction, or SaveResults' one for the whole batch.
func (b *SQLBackend) saveResult(ctx context.Context, tx Querier, sr saved) error {
	// The job's lock comes first, as in a lease claim (job row, then run
	// row), so that the two never wait for each other in a cycle.
	if err := b.lockJob(ctx, tx, sr.job); err != nil {
		return err
	}
	if err := b.upsertResult(ctx, tx, sr); err != nil {
		return err
	}
	if sr.plain() {
		if _, err := b.all(ctx, tx, b.q.finishPlain, string(sr.r.Status), sr.job, sr.r.Slot, sr.r.Token); err != nil {
			return err
		}
	}
	return b.trim(ctx, tx, sr)
}

// saveResultArgs are the arguments of Routines.SaveResult for sr.
func (b *SQLBackend) saveResultArgs(sr saved) []any {
	r := sr.r
	return []any{sr.job, r.Token, r.Slot, r.InstanceID, int64(r.Attempt), string(r.Status),
		sr.claimToken(), msOrNil(r.StartedAt), msOrNil(r.FinishedAt), anarchon.EscapeText(r.Error), anarchon.EscapeText(r.Output),
		sr.manual(), sr.plain(), sr.size, sr.ttlMs}
}

// saved is a validated SaveResult (or FinishResult) call.
type saved struct {
	job   string
	r     anarchon.StoredResult // Attempt >= 1, Status set
	size  int64                 // > 0
	ttlMs int64                 // 0: no TTL
}

// newSaved checks and normalises the arguments of SaveResult: the job
// name, a non-negative TTL, historySize <= 0 meaning the default, an
// attempt of at least 1, and an empty status read as success or error.
func newSaved(job string, r anarchon.StoredResult, historySize int, historyTTL time.Duration) (saved, error) {
	if err := checkJob(job); err != nil {
		return saved{}, err
	}
	if historyTTL < 0 {
		return saved{}, invalid("negative history TTL %v", historyTTL)
	}
	if historySize <= 0 {
		historySize = anarchon.DefaultHistorySize
	}
	if r.Attempt <= 0 {
		r.Attempt = 1
	}
	if r.Status == "" {
		r.Status = anarchon.StatusSuccess
		if r.Error != "" {
			r.Status = anarchon.StatusError
		}
	}
	var ttl int64
	if historyTTL > 0 {
		ttl = max(historyTTL.Milliseconds(), 1)
	}
	return saved{job: job, r: r, size: int64(historySize), ttlMs: ttl}, nil
}

func (sr saved) manual() int64 {
	if sr.r.Manual {
		return 1
	}
	return 0
}

// plain reports whether saving sr settles a plain claim's run row: a
// result with a token that is not a manual run's.
func (sr saved) plain() bool { return sr.r.Token != "" && !sr.r.Manual }

// claimToken is the token whose run row holds sr's claim time. An
// abandoned slot's row carries anarchon.AbandonedToken, but nobody
// claimed the slot under it: its record has no claim time ("").
func (sr saved) claimToken() string {
	if sr.r.Token == anarchon.AbandonedToken(sr.r.Slot) {
		return ""
	}
	return sr.r.Token
}

func (b *SQLBackend) upsertResult(ctx context.Context, tx Querier, sr saved) error {
	r := sr.r
	// The claim time comes from the run row the token holds.
	_, err := b.all(ctx, tx, b.q.upsertResult,
		sr.job, r.Token, r.Slot, r.InstanceID, int64(r.Attempt), string(r.Status),
		sr.job, r.Slot, sr.claimToken(),
		msOrNil(r.StartedAt), msOrNil(r.FinishedAt), anarchon.EscapeText(r.Error), anarchon.EscapeText(r.Output), sr.manual())
	return err
}

// trim deletes history beyond sr.size records and older than sr.ttlMs,
// and raises the job's watermark over deleted run rows. The caller holds
// the job's lock (lockJob), so that a lease claim that read "absent" does
// not race a deletion that has not yet raised the watermark.
func (b *SQLBackend) trim(ctx context.Context, tx Querier, sr saved) error {
	if _, err := b.all(ctx, tx, b.q.trimResults, sr.job, sr.job, sr.size-1, sr.ttlMs, sr.ttlMs); err != nil {
		return err
	}
	rows, err := b.changed(ctx, tx, b.q.trimRuns, b.q.trimRunsRead, 0, sr.job, sr.job, sr.size-1, sr.ttlMs, sr.ttlMs)
	if err != nil {
		return err
	}
	var top int64
	for i, r := range rows {
		rd := reader(r)
		s := rd.int64()
		if err := rd.Err(); err != nil {
			return err
		}
		if i == 0 || s > top {
			top = s
		}
	}
	if len(rows) > 0 {
		if _, err := b.all(ctx, tx, b.q.raiseWatermark, top, sr.job, top); err != nil {
			return err
		}
	}
	return nil
}

// History returns the job's runs from all instances, newest first: run
// rows (claims) merged with stored results by token, with
// anarchon.BuildHistory. limit <= 0 returns everything retained.
func (b *SQLBackend) History(ctx context.Context, job string, limit int) ([]anarchon.RunRecord, error) {
	if err := b.ready(ctx, "history"); err != nil {
		return nil, err
	}
	if err := checkJob(job); err != nil {
		return nil, b.errorf("history", err)
	}
	lim := int64(limit)
	if limit <= 0 {
		lim = -1
	}
	runQ, resQ := b.q.historyRuns, b.q.historyResults
	if lim < 0 {
		runQ, resQ = b.q.historyRunsAll, b.q.historyResultsAll
	}
	runArgs, resArgs := []any{job}, []any{job}
	if lim > 0 {
		runArgs = append(runArgs, lim)
		resArgs = append(resArgs, job, lim)
	}
	runRows, err := b.all(ctx, b.cfg.Conn, runQ, runArgs...)
	if err != nil {
		return nil, b.errorf("history", err)
	}
	resRows, err := b.all(ctx, b.cfg.Conn, resQ, resArgs...)
	if err != nil {
		return nil, b.errorf("history", err)
	}
	var claims []anarchon.ClaimRecord
	var settled, results []anarchon.StoredResult
	claimed := make(map[string]bool, len(runRows))
	for _, r := range runRows {
		// slot, token, instance, attempt, state, status, claimed_at
		rd := reader(r)
		slot, tok, inst, att, state, st := rd.int64(), rd.string(), rd.string(), rd.int64(), rd.string(), rd.string()
		cl, _ := rd.nullInt64()
		if err := rd.Err(); err != nil {
			return nil, b.errorf("history", err)
		}
		switch anarchon.RunState(state) {
		case anarchon.RunStateMissed, anarchon.RunStateSkipped, anarchon.RunStateDone:
			if st == "" {
				st = state
			}
			settled = append(settled, anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: inst, Attempt: int(att), Status: anarchon.Status(st)})
		}
		if tok == anarchon.AbandonedToken(slot) {
			continue // nobody claimed it under this token: no claim time
		}
		claimed[tok] = true
		claims = append(claims, anarchon.ClaimRecord{Slot: slot, Token: tok, InstanceID: inst, ClaimedAt: time.UnixMilli(cl).UTC(), Attempt: int(att)})
	}
	for _, r := range resRows {
		// slot, token, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual
		rd := reader(r)
		slot, tok, inst, att, st := rd.int64(), rd.string(), rd.string(), rd.int64(), rd.string()
		cl, hasCl := rd.nullInt64()
		sa, hasSa := rd.nullInt64()
		fa, hasFa := rd.nullInt64()
		em, out, man := rd.string(), rd.string(), rd.int64()
		if err := rd.Err(); err != nil {
			return nil, b.errorf("history", err)
		}
		res := anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: inst, Attempt: int(att), Status: anarchon.Status(st), Error: em, Output: out, Manual: man != 0}
		if hasSa {
			res.StartedAt = time.UnixMilli(sa).UTC()
		}
		if hasFa {
			res.FinishedAt = time.UnixMilli(fa).UTC()
		}
		if hasCl && !claimed[tok] {
			// A manual run is its own claim record; a leased or plain run
			// whose run row another holder took over (or trimming deleted)
			// keeps its claim time in its result.
			claimed[tok] = true
			claims = append(claims, anarchon.ClaimRecord{Slot: slot, Token: tok, InstanceID: inst, ClaimedAt: time.UnixMilli(cl).UTC(), Attempt: int(att), Manual: man != 0})
			if man != 0 && anarchon.Status(st) == anarchon.StatusRunning {
				continue // recorded, no result yet
			}
		}
		results = append(results, res)
	}
	// Stored results come after the states of settled rows, so that a saved
	// result of the same token wins (BuildHistory keeps the later one).
	return anarchon.BuildHistory(job, claims, append(settled, results...), limit), nil
}
