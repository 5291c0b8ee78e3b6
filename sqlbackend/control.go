package sqlbackend

import (
	"context"
	"fmt"
	"time"

	"github.com/anarchon/anarchon"
)

var (
	_ anarchon.JobControl      = (*SQLBackend)(nil)
	_ anarchon.TriggerStore    = (*SQLBackend)(nil)
	_ anarchon.TriggerCanceler = (*SQLBackend)(nil)
)

// Job control (SPEC §12) is the table <prefix>control: a row per job ever
// paused or resumed (paused 0/1, by_who, reason, set_at by the server's
// clock). The plain claim reads it in its one INSERT … SELECT statement
// and the lease claim in its transaction, after the job's lock, so a
// claim that reaches the database after SetPaused committed settles the
// slot as paused. Trigger requests are the table <prefix>triggers, one
// row per (job, key); the claim of a request is one conditional UPDATE.

// SetPaused implements [anarchon.JobControl]: one upsert of the job's
// control row, returning it. It fails on a bad job name and after Close.
func (b *SQLBackend) SetPaused(ctx context.Context, in anarchon.PauseInput) (anarchon.JobState, error) {
	const op = "set paused"
	if err := b.ready(ctx, op); err != nil {
		return anarchon.JobState{}, err
	}
	if err := checkJob(in.Job); err != nil {
		return anarchon.JobState{}, b.errorf(op, err)
	}
	paused := 0
	if in.Paused {
		paused = 1
	}
	var rows [][]any
	var err error
	if b.d.NoReturning {
		// The upsert returns nothing; read the row it wrote, still locked
		// by it, in the same transaction.
		err = b.cfg.Conn.Transaction(ctx, func(tx Querier) error {
			if _, err := b.all(ctx, tx, b.q.setPaused, in.Job, paused, in.By, in.Reason); err != nil {
				return err
			}
			rows, err = b.all(ctx, tx, b.q.jobState, in.Job)
			return err
		})
	} else {
		rows, err = b.all(ctx, b.cfg.Conn, b.q.setPaused, in.Job, paused, in.By, in.Reason)
	}
	if err != nil {
		return anarchon.JobState{}, b.errorf(op, err)
	}
	if len(rows) != 1 {
		return anarchon.JobState{}, b.errorf(op, fmt.Errorf("upsert returned %d rows", len(rows)))
	}
	st, err := readState(rows[0])
	if err != nil {
		return anarchon.JobState{}, b.errorf(op, err)
	}
	return st, nil
}

func readState(row []any) (anarchon.JobState, error) {
	rd := reader(row)
	st := anarchon.JobState{Job: rd.string(), Paused: rd.int64() == 1, By: rd.string(), Reason: rd.string()}
	st.At = time.UnixMilli(rd.int64()).UTC()
	return st, rd.Err()
}

// JobState implements [anarchon.JobControl]. A job without a row has the
// zero state. It fails after Close.
func (b *SQLBackend) JobState(ctx context.Context, job string) (anarchon.JobState, error) {
	const op = "job state"
	if err := b.ready(ctx, op); err != nil {
		return anarchon.JobState{}, err
	}
	rows, err := b.all(ctx, b.cfg.Conn, b.q.jobState, job)
	if err != nil {
		return anarchon.JobState{}, b.errorf(op, err)
	}
	if len(rows) == 0 {
		return anarchon.JobState{Job: job}, nil
	}
	st, err := readState(rows[0])
	if err != nil {
		return anarchon.JobState{}, b.errorf(op, err)
	}
	return st, nil
}

// JobStates implements [anarchon.JobControl]: every row, by job name. It
// fails after Close.
func (b *SQLBackend) JobStates(ctx context.Context) ([]anarchon.JobState, error) {
	const op = "job states"
	if err := b.ready(ctx, op); err != nil {
		return nil, err
	}
	rows, err := b.all(ctx, b.cfg.Conn, b.q.jobStates)
	if err != nil {
		return nil, b.errorf(op, err)
	}
	out := make([]anarchon.JobState, 0, len(rows))
	for _, row := range rows {
		st, err := readState(row)
		if err != nil {
			return nil, b.errorf(op, err)
		}
		out = append(out, st)
	}
	return out, nil
}

func readTrigger(row []any) (anarchon.TriggerRecord, error) {
	rd := reader(row)
	t := anarchon.TriggerRecord{Job: rd.string(), Key: rd.string(), By: rd.string()}
	t.RequestedAt = time.UnixMilli(rd.int64()).UTC()
	t.State = anarchon.TriggerState(rd.string())
	t.InstanceID, t.Token, t.Slot = rd.string(), rd.string(), rd.int64()
	if ms, ok := rd.nullInt64(); ok {
		t.ClaimedAt = time.UnixMilli(ms).UTC()
	}
	if ms, ok := rd.nullInt64(); ok {
		t.FinishedAt = time.UnixMilli(ms).UTC()
	}
	t.Status, t.Error = anarchon.Status(rd.string()), rd.string()
	return t, rd.Err()
}

// RequestTrigger implements [anarchon.TriggerStore]: an insert-if-absent
// of the request, then its row; a new request is
// announced to watchers (a RunTriggered event) where the backend has
// Config.Notify. It fails on a bad job name or an empty key, and after
// Close.
func (b *SQLBackend) RequestTrigger(ctx context.Context, in anarchon.TriggerInput) (anarchon.TriggerRecord, error) {
	const op = "request trigger"
	if err := b.ready(ctx, op); err != nil {
		return anarchon.TriggerRecord{}, err
	}
	if err := checkJob(in.Job); err != nil {
		return anarchon.TriggerRecord{}, b.errorf(op, err)
	}
	if in.Key == "" {
		return anarchon.TriggerRecord{}, b.errorf(op, invalid("empty trigger key"))
	}
	var rec anarchon.TriggerRecord
	err := b.cfg.Conn.Transaction(ctx, func(tx Querier) error {
		if _, err := b.all(ctx, tx, b.q.requestTrigger, in.Job, in.Key, in.By); err != nil {
			return err
		}
		rows, err := b.all(ctx, tx, b.q.selectTrigger, in.Job, in.Key)
		if err != nil {
			return err
		}
		if len(rows) != 1 {
			return fmt.Errorf("request %q not found after its insert", in.Key)
		}
		if rec, err = readTrigger(rows[0]); err != nil {
			return err
		}
		if rec.State == anarchon.TriggerPending {
			return b.notify(ctx, tx, in.Job, 0, anarchon.RunTriggered)
		}
		return nil
	})
	if err != nil {
		return anarchon.TriggerRecord{}, b.errorf(op, err)
	}
	return rec, nil
}

// PendingTriggers implements [anarchon.TriggerStore]. It fails after
// Close.
func (b *SQLBackend) PendingTriggers(ctx context.Context) ([]anarchon.TriggerRecord, error) {
	const op = "pending triggers"
	if err := b.ready(ctx, op); err != nil {
		return nil, err
	}
	rows, err := b.all(ctx, b.cfg.Conn, b.q.pendingTriggers)
	if err != nil {
		return nil, b.errorf(op, err)
	}
	out := make([]anarchon.TriggerRecord, 0, len(rows))
	for _, row := range rows {
		t, err := readTrigger(row)
		if err != nil {
			return nil, b.errorf(op, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// ClaimTrigger implements [anarchon.TriggerStore]: one UPDATE from
// pending (after a locking read of the row where the dialect has no
// RETURNING); a token that did not update it wins only if it is the one
// stored. It fails on an empty token and after Close.
func (b *SQLBackend) ClaimTrigger(ctx context.Context, in anarchon.ClaimTriggerInput) (bool, error) {
	const op = "claim trigger"
	if err := b.ready(ctx, op); err != nil {
		return false, err
	}
	if in.Token == "" {
		return false, b.errorf(op, invalid("empty token"))
	}
	var rows [][]any
	var err error
	args := []any{in.Token, in.InstanceID, in.Job, in.Key}
	if b.d.NoReturning {
		err = b.cfg.Conn.Transaction(ctx, func(tx Querier) error {
			rows, err = b.changed(ctx, tx, b.q.claimTrigger, b.q.claimTriggerRead, 2, args...)
			return err
		})
	} else {
		rows, err = b.all(ctx, b.cfg.Conn, b.q.claimTrigger, args...)
	}
	if err != nil {
		return false, b.errorf(op, err)
	}
	if len(rows) > 0 {
		return true, nil
	}
	rows, err = b.all(ctx, b.cfg.Conn, b.q.selectTrigger, in.Job, in.Key)
	if err != nil {
		return false, b.errorf(op, err)
	}
	if len(rows) == 0 {
		return false, nil
	}
	t, err := readTrigger(rows[0])
	if err != nil {
		return false, b.errorf(op, err)
	}
	return t.State != anarchon.TriggerPending && t.Token == in.Token, nil
}

// FinishTrigger implements [anarchon.TriggerStore]. It fails after Close.
func (b *SQLBackend) FinishTrigger(ctx context.Context, in anarchon.FinishTriggerInput) error {
	const op = "finish trigger"
	if err := b.ready(ctx, op); err != nil {
		return err
	}
	if in.Token == "" {
		return nil
	}
	if _, err := b.all(ctx, b.cfg.Conn, b.q.finishTrigger, in.Slot, string(in.Status), in.Error, in.Job, in.Key, in.Token); err != nil {
		return b.errorf(op, err)
	}
	return nil
}

// CancelTrigger implements [anarchon.TriggerCanceler]: one UPDATE from
// pending, which a claim's UPDATE excludes, then a read of the row. It
// fails after Close.
func (b *SQLBackend) CancelTrigger(ctx context.Context, in anarchon.CancelTriggerInput) (anarchon.TriggerRecord, error) {
	const op = "cancel trigger"
	if err := b.ready(ctx, op); err != nil {
		return anarchon.TriggerRecord{}, err
	}
	if _, err := b.all(ctx, b.cfg.Conn, b.q.cancelTrigger, anarchon.CanceledError(in.By), in.Job, in.Key); err != nil {
		return anarchon.TriggerRecord{}, b.errorf(op, err)
	}
	return b.LookupTrigger(ctx, in.Job, in.Key)
}

// LookupTrigger implements [anarchon.TriggerStore]. It fails after Close.
func (b *SQLBackend) LookupTrigger(ctx context.Context, job, key string) (anarchon.TriggerRecord, error) {
	const op = "lookup trigger"
	if err := b.ready(ctx, op); err != nil {
		return anarchon.TriggerRecord{}, err
	}
	rows, err := b.all(ctx, b.cfg.Conn, b.q.selectTrigger, job, key)
	if err != nil {
		return anarchon.TriggerRecord{}, b.errorf(op, err)
	}
	if len(rows) == 0 {
		return anarchon.TriggerRecord{}, fmt.Errorf("%s: trigger %q of job %s: %w", b.cfg.Name, key, quoteJob(job), anarchon.ErrNotFound)
	}
	t, err := readTrigger(rows[0])
	if err != nil {
		return anarchon.TriggerRecord{}, b.errorf(op, err)
	}
	return t, nil
}
