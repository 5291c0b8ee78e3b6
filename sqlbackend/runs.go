package sqlbackend

import (
	"context"
	"fmt"
	"time"

	"github.com/anarchon/anarchon"
)

// RunStore is the lease store of a [SQLBackend] (SPEC §6), returned by
// SQLBackend.Runs. Every decision is made in one transaction, serialised
// per job (SQLDialect.Serialize and ForUpdate), by the database server's
// clock (SQLDialect.NowMs).
type RunStore SQLBackend

func (s *RunStore) b() *SQLBackend { return (*SQLBackend)(s) }

// ServerTime reads the database server's clock; see SQLBackend.ServerTime.
func (s *RunStore) ServerTime(ctx context.Context) (time.Time, error) {
	return s.b().ServerTime(ctx)
}

type runRow struct {
	token, instance string
	attempt         int64
	state           anarchon.RunState
	status          anarchon.Status
	leaseUntil      int64
	hasLease        bool
	claimedAt       int64
	hasClaimedAt    bool
}

// Claim decides a lease claim per SPEC §6's table, first match wins, in
// one transaction that holds the job's lock and reads the server's clock
// after taking it. A win takes the job's next fencing token
// (ClaimOutcome.Fence, SPEC §6 "Fencing"): the jobs row's counter, raised
// by one in the same transaction. c.Lease must be positive;
// c.MaxAttempts <= 0 means 1; c.MaxLate == 0 means no lateness limit. An absent slot at or below the
// job's trimming watermark is answered OutcomeDone: it was settled and
// trimmed. OutcomeDone carries the settled run's attempt (for an
// abandoned slot, the last holder's). A takeover or an abandonment also
// stores the previous holder's history record (lease_lost or
// handed_over) and an abandonment's record under anarchon.AbandonedToken;
// see the package doc's "History records of lease runs".
func (s *RunStore) Claim(ctx context.Context, c anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	b := s.b()
	if err := b.ready(ctx, "lease claim"); err != nil {
		return anarchon.ClaimOutcome{}, err
	}
	if err := checkRunClaim(c); err != nil {
		return anarchon.ClaimOutcome{}, b.errorf("lease claim", err)
	}
	if g := b.cfg.Guard; g != nil {
		if err := g(ctx); err != nil {
			return anarchon.ClaimOutcome{}, err
		}
	}
	if b.rt.Claim != "" {
		out, err := b.claimRoutine(ctx, b.cfg.Conn, c)
		if err != nil {
			return anarchon.ClaimOutcome{}, b.errorf("lease claim", err)
		}
		return out, nil
	}
	var out anarchon.ClaimOutcome
	err := b.cfg.Conn.Transaction(ctx, func(tx Querier) (err error) {
		out, err = b.claimRun(ctx, tx, c)
		return err
	})
	if err != nil {
		return anarchon.ClaimOutcome{}, b.errorf("lease claim", err)
	}
	return out, nil
}

// checkRunClaim checks a lease claim's input.
func checkRunClaim(c anarchon.RunClaim) error {
	if err := checkClaim(c.ClaimInput); err != nil {
		return err
	}
	if c.Lease <= 0 {
		return invalid("lease %v is not positive", c.Lease)
	}
	if c.MaxLate < 0 {
		return invalid("negative MaxLate %v", c.MaxLate)
	}
	return nil
}

// claimRun is the lease claim's transaction body, run in tx: Claim's own
// transaction, or ClaimRuns' one for the whole batch, so that both answer
// alike. A slot refused as early returns its *anarchon.EarlyError before
// anything is written.
func (b *SQLBackend) claimRun(ctx context.Context, tx Querier, c anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	maxAttempts := int64(max(c.MaxAttempts, 1))
	leaseMs := max(c.Lease.Milliseconds(), 1)
	var out anarchon.ClaimOutcome
	err := func() error {
		j, err := b.lockJobRow(ctx, tx, c.Job)
		if err != nil {
			return err
		}
		now := j.now
		row, found, err := b.readRun(ctx, tx, c.Job, c.Slot)
		if err != nil {
			return err
		}
		until := now + leaseMs
		if !found {
			switch {
			case j.hasWM && c.Slot <= j.watermark:
				out.Kind = anarchon.OutcomeDone
				return nil
			case anarchon.TooEarly(c.Slot, now): // never early
				return &anarchon.EarlyError{Job: c.Job, Slot: c.Slot, StoreNow: now}
			}
			rows, err := b.all(ctx, tx, b.q.selectPaused, c.Job)
			if err != nil {
				return err
			}
			if len(rows) > 0 {
				// Paused (SPEC §12): settled under PausedToken, recorded once.
				out.Kind = anarchon.OutcomePaused
				pc := c
				pc.Token = anarchon.PausedToken(c.Slot)
				if err := b.insertRun(ctx, tx, pc, anarchon.RunStatePaused, anarchon.StatusPaused, nil, now); err != nil {
					return err
				}
				return b.recordPaused(ctx, tx, c.Job, pc.Token, c.Slot, c.InstanceID)
			}
			switch {
			case c.MaxLate > 0 && now > c.Slot+c.MaxLate.Milliseconds():
				out.Kind = anarchon.OutcomeLate
				return b.insertRun(ctx, tx, c, anarchon.RunStateMissed, anarchon.StatusMissed, nil, now)
			case !c.AllowOverlap:
				limit := max(c.Limit, 1)
				rows, err := b.all(ctx, tx, b.q.liveOtherRun, c.Job, c.Slot, now, limit)
				if err != nil {
					return err
				}
				if len(rows) >= limit {
					out.Kind = anarchon.OutcomeOverlap
					return b.insertRun(ctx, tx, c, anarchon.RunStateSkipped, anarchon.StatusSkipped, nil, now)
				}
			}
			if err := b.insertRun(ctx, tx, c, anarchon.RunStateRunning, "", until, now); err != nil {
				return err
			}
			out = anarchon.ClaimOutcome{Kind: anarchon.OutcomeWon, Attempt: 1, Holder: c.InstanceID, LeaseUntil: time.UnixMilli(until).UTC()}
			out.Fence, err = b.takeFence(ctx, tx, c.Job, &j)
			return err
		}
		switch {
		case row.state == anarchon.RunStateRunning && row.token == c.Token:
			if _, err := b.all(ctx, tx, b.q.renewRun, until, c.Job, c.Slot); err != nil {
				return err
			}
			out = anarchon.ClaimOutcome{Kind: anarchon.OutcomeWon, Attempt: int(row.attempt), Holder: row.instance, LeaseUntil: time.UnixMilli(until).UTC()}
			out.Fence, err = b.takeFence(ctx, tx, c.Job, &j)
			return err
		case readOnlyOutcome(row, now, &out):
		case row.state == anarchon.RunStateRunning || row.state == anarchon.RunStateReleased:
			// The previous holder's attempt ends here: record it, unless
			// it saved its own result already (membackend does the same).
			if err := b.recordHolder(ctx, tx, c.Job, c.Slot, row); err != nil {
				return err
			}
			if row.attempt >= maxAttempts {
				abandoned := anarchon.AbandonedToken(c.Slot)
				if _, err := b.all(ctx, tx, b.q.abandonRun, abandoned, c.InstanceID, c.Job, c.Slot); err != nil {
					return err
				}
				if _, err := b.all(ctx, tx, b.q.insertStoreResult, c.Job, abandoned, c.Slot, c.InstanceID,
					row.attempt, string(anarchon.StatusAbandoned), nil); err != nil {
					return err
				}
				out = anarchon.ClaimOutcome{Kind: anarchon.OutcomeDone, Attempt: int(row.attempt), Status: anarchon.StatusAbandoned}
				return b.notify(ctx, tx, c.Job, c.Slot, anarchon.RunFinished)
			}
			att := row.attempt + 1
			if _, err := b.all(ctx, tx, b.q.takeOverRun, c.Token, c.InstanceID, att, until, now, c.Job, c.Slot); err != nil {
				return err
			}
			out = anarchon.ClaimOutcome{Kind: anarchon.OutcomeWon, Attempt: int(att), Holder: c.InstanceID, LeaseUntil: time.UnixMilli(until).UTC()}
			out.Fence, err = b.takeFence(ctx, tx, c.Job, &j)
			return err
		default:
			// A state written by a newer version: treat it as settled.
			out = anarchon.ClaimOutcome{Kind: anarchon.OutcomeDone, Status: row.status}
		}
		return nil
	}()
	if err != nil {
		return anarchon.ClaimOutcome{}, err
	}
	return out, nil
}

// claimRoutine runs the lease claim as one call of Routines.Claim
// through q.
func (b *SQLBackend) claimRoutine(ctx context.Context, q Querier, c anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	maxAttempts := int64(max(c.MaxAttempts, 1))
	leaseMs := max(c.Lease.Milliseconds(), 1)
	var maxLate any // NULL: no limit
	if c.MaxLate > 0 {
		maxLate = c.MaxLate.Milliseconds()
	}
	rows, err := b.all(ctx, q, b.rt.Claim, c.Job, c.Slot, c.Token, c.InstanceID, leaseMs, maxLate, c.AllowOverlap, int64(max(c.Limit, 1)), maxAttempts)
	if err != nil {
		return anarchon.ClaimOutcome{}, err
	}
	if len(rows) != 1 {
		return anarchon.ClaimOutcome{}, fmt.Errorf("claim routine returned %d rows", len(rows))
	}
	if n := len(rows[0]); n != 5 && n != 6 {
		return anarchon.ClaimOutcome{}, fmt.Errorf("claim routine returned %d columns", n)
	}
	return routineOutcome(c, rows[0])
}

// routineOutcome reads the claim routine's row (Routines.Claim) for c: an
// early slot is its *anarchon.EarlyError. A row of five columns has no
// fence (Fence 0).
func routineOutcome(c anarchon.RunClaim, row []any) (anarchon.ClaimOutcome, error) {
	rd := reader(row)
	kind := rd.string()
	att, _ := rd.nullInt64()
	holder := rd.string()
	until, hasUntil := rd.nullInt64()
	status := rd.string()
	var fence int64
	if len(row) > 5 {
		fence, _ = rd.nullInt64()
	}
	if err := rd.Err(); err != nil {
		return anarchon.ClaimOutcome{}, err
	}
	if fence < 0 || fence > 0 && kind != "won" {
		return anarchon.ClaimOutcome{}, fmt.Errorf("claim routine answered %s with fence %d", kind, fence)
	}
	out := anarchon.ClaimOutcome{Attempt: int(att), Holder: holder, Status: anarchon.Status(status), Fence: uint64(fence)}
	if hasUntil {
		out.LeaseUntil = time.UnixMilli(until).UTC()
	}
	switch kind {
	case "won":
		out.Kind = anarchon.OutcomeWon
	case "running":
		out.Kind = anarchon.OutcomeRunning
	case "overlap":
		out.Kind = anarchon.OutcomeOverlap
	case "none":
		out.Kind = anarchon.OutcomeNone
	case "late":
		out.Kind = anarchon.OutcomeLate
	case "early": // never early: o_until holds the server's now
		return anarchon.ClaimOutcome{}, &anarchon.EarlyError{Job: c.Job, Slot: c.Slot, StoreNow: until}
	case "paused":
		out.Kind = anarchon.OutcomePaused
	default:
		out.Kind = anarchon.OutcomeDone
	}
	return out, nil
}

// routineBool runs a routine that returns one boolean.
func (b *SQLBackend) routineBool(ctx context.Context, query string, args ...any) (bool, error) {
	rows, err := b.all(ctx, b.cfg.Conn, query, args...)
	if err != nil {
		return false, err
	}
	if len(rows) != 1 || len(rows[0]) != 1 {
		return false, fmt.Errorf("routine returned %d rows", len(rows))
	}
	rd := reader(rows[0])
	ok := rd.bool()
	return ok, rd.Err()
}

// recordHolder stores the history record of the holder whose attempt a
// takeover or an abandonment ends: lease_lost if its lease ran out,
// handed_over if it released it, with its claim time. A result already
// stored for its token is kept.
func (b *SQLBackend) recordHolder(ctx context.Context, tx Querier, job string, slot int64, row runRow) error {
	status := anarchon.StatusLeaseLost
	if row.state == anarchon.RunStateReleased {
		status = anarchon.StatusHandedOver
	}
	var claimed any
	if row.hasClaimedAt {
		claimed = row.claimedAt
	}
	_, err := b.all(ctx, tx, b.q.insertStoreResult, job, row.token, slot, row.instance,
		row.attempt, string(status), claimed)
	return err
}

func (b *SQLBackend) insertRun(ctx context.Context, tx Querier, c anarchon.RunClaim, state anarchon.RunState, status anarchon.Status, lease any, now int64) error {
	_, err := b.all(ctx, tx, b.q.insertRun, c.Job, c.Slot, c.Token, c.InstanceID, string(state), string(status), lease, now)
	return err
}

// readOnlyOutcome sets *out to the outcome of a lease claim of row's slot
// that writes nothing (SPEC §6's table), at the server's clock now, and
// reports whether row decides such an outcome: a settled slot (done;
// missed, skipped or paused) or a running one whose lease is live, or
// that a plain claim holds (it never expires). The caller has checked
// that the claim's own token does not hold the run. claimRun decides
// under the job's lock; ClaimRuns's pre-read decides from a read.
func readOnlyOutcome(row runRow, now int64, out *anarchon.ClaimOutcome) bool {
	switch {
	case row.state == anarchon.RunStateDone:
		*out = anarchon.ClaimOutcome{Kind: anarchon.OutcomeDone, Attempt: int(row.attempt), Status: row.status}
	case row.state == anarchon.RunStateMissed || row.state == anarchon.RunStateSkipped || row.state == anarchon.RunStatePaused:
		*out = anarchon.ClaimOutcome{Kind: anarchon.OutcomeNone, Status: row.status}
	case row.state == anarchon.RunStateRunning && (!row.hasLease || row.leaseUntil > now):
		*out = anarchon.ClaimOutcome{Kind: anarchon.OutcomeRunning, Attempt: int(row.attempt), Holder: row.instance}
		if row.hasLease {
			out.LeaseUntil = time.UnixMilli(row.leaseUntil).UTC()
		}
	default:
		return false
	}
	return true
}

func (b *SQLBackend) readRun(ctx context.Context, tx Querier, job string, slot int64) (runRow, bool, error) {
	rows, err := b.all(ctx, tx, b.q.selectRun, job, slot)
	if err != nil || len(rows) == 0 {
		return runRow{}, false, err
	}
	rd := reader(rows[0])
	row := runRow{token: rd.string(), instance: rd.string(), attempt: rd.int64(),
		state: anarchon.RunState(rd.string()), status: anarchon.Status(rd.string())}
	row.leaseUntil, row.hasLease = rd.nullInt64()
	row.claimedAt, row.hasClaimedAt = rd.nullInt64()
	return row, true, rd.Err()
}

func (b *SQLBackend) notify(ctx context.Context, tx Querier, job string, slot int64, kind anarchon.RunEventKind) error {
	if b.cfg.Notify == nil {
		return nil
	}
	q, args := b.cfg.Notify(anarchon.RunEvent{Job: job, Slot: slot, Kind: kind})
	if q == "" {
		return nil
	}
	_, err := b.all(ctx, tx, b.rewritten(q), args...)
	return err
}

// Heartbeat extends token's lease to the server's now + lease if token
// holds the run and it is running (even if the lease ran out and nobody
// took over yet). false means the lease is lost.
func (s *RunStore) Heartbeat(ctx context.Context, in anarchon.HeartbeatInput) (bool, error) {
	b := s.b()
	if err := b.ready(ctx, "heartbeat"); err != nil {
		return false, err
	}
	if err := checkHeartbeat(in); err != nil {
		return false, b.errorf("heartbeat", err)
	}
	var held bool
	var err error
	if b.d.NoReturning {
		err = b.cfg.Conn.Transaction(ctx, func(tx Querier) (err error) {
			held, err = b.heartbeat(ctx, tx, in)
			return err
		})
	} else {
		held, err = b.heartbeat(ctx, b.cfg.Conn, in)
	}
	if err != nil {
		return false, b.errorf("heartbeat", err)
	}
	return held, nil
}

// checkHeartbeat checks a heartbeat's input.
func checkHeartbeat(in anarchon.HeartbeatInput) error {
	if in.Lease <= 0 {
		return invalid("lease %v is not positive", in.Lease)
	}
	return nil
}

// heartbeat is Heartbeat's statement, run through q: the connection (a
// transaction with SQLDialect.NoReturning) for Heartbeat, the batch's
// transaction for Heartbeats, so that both answer alike. in.Lease is
// positive.
func (b *SQLBackend) heartbeat(ctx context.Context, q Querier, in anarchon.HeartbeatInput) (bool, error) {
	rows, err := b.changed(ctx, q, b.q.heartbeat, b.q.heartbeatRead, 1, max(in.Lease.Milliseconds(), 1), in.Job, in.Slot, in.Token)
	return len(rows) > 0, err
}

// Finish marks the run done with status if token holds it (running, or
// released by the same token); a repeat with the same token and status is
// true again. It notifies watchers in the same transaction.
func (s *RunStore) Finish(ctx context.Context, in anarchon.FinishInput) (bool, error) {
	job, slot, token, status := in.Job, in.Slot, in.Token, in.Status
	if s.rt.Finish != "" {
		return s.settleRoutine(ctx, "finish", s.rt.Finish, job, slot, token, string(status))
	}
	return s.settle(ctx, "finish", job, slot, anarchon.RunFinished, func(tx Querier) ([][]any, error) {
		return s.b().changed(ctx, tx, s.q.finish, s.q.finishRead, 1, string(status), job, slot, token, string(status))
	})
}

// Release ends token's running lease at once (state released, lease until
// the server's now), so a backup takes over. false if token does not hold
// a running lease. It notifies watchers in the same transaction.
func (s *RunStore) Release(ctx context.Context, in anarchon.ReleaseInput) (bool, error) {
	job, slot, token := in.Job, in.Slot, in.Token
	if s.rt.Release != "" {
		return s.settleRoutine(ctx, "release", s.rt.Release, job, slot, token)
	}
	return s.settle(ctx, "release", job, slot, anarchon.RunReleased, func(tx Querier) ([][]any, error) {
		return s.b().changed(ctx, tx, s.q.release, s.q.releaseRead, 0, job, slot, token)
	})
}

// settleRoutine runs Routines.Finish or Routines.Release.
func (s *RunStore) settleRoutine(ctx context.Context, op, query string, args ...any) (bool, error) {
	b := s.b()
	if err := b.ready(ctx, op); err != nil {
		return false, err
	}
	ok, err := b.routineBool(ctx, query, args...)
	if err != nil {
		return false, b.errorf(op, err)
	}
	return ok, nil
}

// FinishResult implements anarchon.ResultFinisher: Finish and SaveResult
// in one transaction (one statement with Config.Routines). It locks the
// job, marks the run done with r.Status if r.Token holds it (running, or
// released by the same token; a repeat with the same status is true
// again) and notifies watchers; otherwise it stores r with status
// anarchon.StatusLeaseLost and returns false. Then it stores r and trims
// the history exactly as SaveResult does. It fails on an empty token, a
// manual result (RunNow runs have no lease: use SaveResult), and on what
// SaveResult refuses, and on an empty status (the scheduler always sends
// one, SPEC §6).
func (s *RunStore) FinishResult(ctx context.Context, in anarchon.SaveResultInput) (bool, error) {
	b := s.b()
	const op = "finish result"
	if err := b.ready(ctx, op); err != nil {
		return false, err
	}
	sr, err := checkFinishResult(in)
	if err != nil {
		return false, b.errorf(op, err)
	}
	if b.rt.FinishResult != "" {
		ok, err := b.routineBool(ctx, b.rt.FinishResult, sr.job, sr.r.Slot, sr.r.Token, sr.r.InstanceID, int64(sr.r.Attempt),
			string(sr.r.Status), msOrNil(sr.r.StartedAt), msOrNil(sr.r.FinishedAt), anarchon.EscapeText(sr.r.Error), anarchon.EscapeText(sr.r.Output), sr.size, sr.ttlMs)
		if err != nil {
			return false, b.errorf(op, err)
		}
		return ok, nil
	}
	var ok bool
	err = b.cfg.Conn.Transaction(ctx, func(tx Querier) (err error) {
		ok, err = b.finishResult(ctx, tx, sr)
		return err
	})
	if err != nil {
		return false, b.errorf(op, err)
	}
	return ok, nil
}

// checkFinishResult checks FinishResult's input as SaveResult does, and
// refuses an empty token, an empty status (SPEC §6: the scheduler always
// sends one) and a manual result.
func checkFinishResult(in anarchon.SaveResultInput) (saved, error) {
	r := in.Result
	switch {
	case r.Token == "":
		return saved{}, invalid("empty token")
	case r.Status == "":
		return saved{}, invalid("empty status")
	case r.Manual:
		return saved{}, invalid("a manual run has no lease to finish")
	}
	return newSaved(in.Job, r, in.HistorySize, in.HistoryTTL)
}

// finishResult is FinishResult's transaction body, run in tx: its own
// transaction, or FinishResults' one for the whole batch.
func (b *SQLBackend) finishResult(ctx context.Context, tx Querier, sr saved) (bool, error) {
	job, r := sr.job, sr.r
	if err := b.lockJob(ctx, tx, job); err != nil {
		return false, err
	}
	rows, err := b.changed(ctx, tx, b.q.finish, b.q.finishRead, 1, string(r.Status), job, r.Slot, r.Token, string(r.Status))
	if err != nil {
		return false, err
	}
	ok := len(rows) > 0
	rec := sr
	if ok {
		if err := b.notify(ctx, tx, job, r.Slot, anarchon.RunFinished); err != nil {
			return false, err
		}
	} else {
		rec.r.Status = anarchon.StatusLeaseLost
	}
	if err := b.upsertResult(ctx, tx, rec); err != nil {
		return false, err
	}
	return ok, b.trim(ctx, tx, rec)
}

func (s *RunStore) settle(ctx context.Context, op, job string, slot int64, kind anarchon.RunEventKind, update func(Querier) ([][]any, error)) (bool, error) {
	b := s.b()
	if err := b.ready(ctx, op); err != nil {
		return false, err
	}
	var ok bool
	run := func(tx Querier) error {
		rows, err := update(tx)
		if err != nil {
			return err
		}
		ok = len(rows) > 0
		if ok {
			return b.notify(ctx, tx, job, slot, kind)
		}
		return nil
	}
	var err error
	if b.cfg.Notify == nil && !b.d.NoReturning {
		err = run(b.cfg.Conn) // one statement is atomic on its own
	} else {
		err = b.cfg.Conn.Transaction(ctx, run)
	}
	if err != nil {
		return false, b.errorf(op, err)
	}
	return ok, nil
}

// Active lists the job's leased runs that are running or released, oldest
// slot first, with Live judged by the server's clock. Plain claims (no
// lease) are not listed.
func (s *RunStore) Active(ctx context.Context, job string) ([]anarchon.ActiveRun, error) {
	b := s.b()
	if err := b.ready(ctx, "active"); err != nil {
		return nil, err
	}
	rows, err := b.all(ctx, b.cfg.Conn, b.q.active, job)
	if err != nil {
		return nil, b.errorf("active", err)
	}
	out := make([]anarchon.ActiveRun, 0, len(rows))
	for _, r := range rows {
		rd := reader(r)
		slot, tok, inst, att, state, until, now := rd.int64(), rd.string(), rd.string(), rd.int64(), rd.string(), rd.int64(), rd.int64()
		if err := rd.Err(); err != nil {
			return nil, b.errorf("active", err)
		}
		st := anarchon.RunState(state)
		out = append(out, anarchon.ActiveRun{
			Slot: slot, Token: tok, InstanceID: inst, Attempt: int(att), State: st,
			LeaseUntil: time.UnixMilli(until).UTC(),
			Live:       st == anarchon.RunStateRunning && until > now,
		})
	}
	return out, nil
}

// changed runs write, a statement that returns the rows it changes
// (UPDATE or DELETE … RETURNING), with args through tx, and returns those
// rows. With SQLDialect.NoReturning the database cannot return them, so
// changed first runs read, the locking SELECT of write's WHERE clause
// (args without the first setArgs, which belong to write's SET), and then
// write: the rows read stay locked, so write changes exactly them. tx must
// then be a transaction.
func (b *SQLBackend) changed(ctx context.Context, tx Querier, write, read string, setArgs int, args ...any) ([][]any, error) {
	if !b.d.NoReturning {
		return b.all(ctx, tx, write, args...)
	}
	rows, err := b.all(ctx, tx, read, args[setArgs:]...)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	if _, err := b.all(ctx, tx, write, args...); err != nil {
		return nil, err
	}
	return rows, nil
}

// Replace implements [anarchon.Replacer] in one transaction that holds the
// job's lock (as every claim does, PostgreSQL's claim routine too): if
// in.Token holds the running run of (in.Job, in.Slot), every earlier run
// of the job that is running or released is settled done with status
// replaced (its token kept), its history record stored under its token
// unless one is (status replaced, its claim time), and RunFinished sent
// for it (Config.Notify). It returns those runs as they were, oldest
// first, and true; nil and false if in.Token does not hold the slot.
func (s *RunStore) Replace(ctx context.Context, in anarchon.ReplaceInput) ([]anarchon.ActiveRun, bool, error) {
	b := s.b()
	if err := b.ready(ctx, "replace"); err != nil {
		return nil, false, err
	}
	if err := checkClaim(in.ClaimInput); err != nil {
		return nil, false, b.errorf("replace", err)
	}
	var out []anarchon.ActiveRun
	var held bool
	err := b.cfg.Conn.Transaction(ctx, func(tx Querier) error {
		out, held = nil, false
		j, err := b.lockJobRow(ctx, tx, in.Job)
		if err != nil {
			return err
		}
		now := j.now
		row, found, err := b.readRun(ctx, tx, in.Job, in.Slot)
		if err != nil || !found || row.state != anarchon.RunStateRunning || row.token != in.Token {
			return err
		}
		held = true
		rows, err := b.all(ctx, tx, b.q.earlierRuns, in.Job, in.Slot)
		if err != nil {
			return err
		}
		out = make([]anarchon.ActiveRun, 0, len(rows))
		for _, r := range rows {
			rd := reader(r)
			slot, tok, inst, att, state, until := rd.int64(), rd.string(), rd.string(), rd.int64(), rd.string(), rd.int64()
			claimed, hasClaimed := rd.nullInt64()
			if err := rd.Err(); err != nil {
				return err
			}
			st := anarchon.RunState(state)
			out = append(out, anarchon.ActiveRun{
				Slot: slot, Token: tok, InstanceID: inst, Attempt: int(att), State: st,
				LeaseUntil: time.UnixMilli(until).UTC(), Live: st == anarchon.RunStateRunning && until > now,
			})
			if _, err := b.all(ctx, tx, b.q.replaceRun, in.Job, slot); err != nil {
				return err
			}
			var c any
			if hasClaimed {
				c = claimed
			}
			if _, err := b.all(ctx, tx, b.q.insertStoreResult, in.Job, tok, slot, inst, att, string(anarchon.StatusReplaced), c); err != nil {
				return err
			}
			if err := b.notify(ctx, tx, in.Job, slot, anarchon.RunFinished); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, b.errorf("replace", err)
	}
	return out, held, nil
}
