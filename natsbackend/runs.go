package natsbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// runValue is the value of a run key "r.<job>.<slot>". The lease's start
// is not stored: it is the server timestamp of the entry's revision
// (KeyValueEntry.Created), so LeaseUntil = Created + LeaseMs.
type runValue struct {
	State   anarchon.RunState `json:"st"`
	Token   string            `json:"t,omitempty"`
	Holder  string            `json:"i,omitempty"`
	Attempt int               `json:"a,omitempty"`
	LeaseMs int64             `json:"l,omitempty"`
	Status  anarchon.Status   `json:"s,omitempty"`
}

// jobValue is the value of a per-job key "j.<job>": the slots that may
// still be running or released, oldest first.
type jobValue struct {
	Slots []int64 `json:"s"`
}

// casRetries bounds the read/compare-and-set loops. Each retry follows a
// write by another instance, so the bound is only reached under a storm
// of writes to one key. With the pauses of casPause, 256 turns wait about
// 6 s in all on average and 12.5 s at most, so a call's Options.Timeout
// (10 s by default) often ends a long loop first, with its deadline's
// error. At 64, 16 clients claiming 500 slots of one job without pause
// (anarchontest's Fence/Race) left a slot unwon with ErrContention in
// one run of many on a loaded machine.
const casRetries = 256

// casPauseBase and casPauseMax shape the pause before a compare-and-set
// retry (see casPause): up to 0.5, 1, 2, … ms, at most 50 ms.
const (
	casPauseBase = 250 * time.Microsecond
	casPauseMax  = 50 * time.Millisecond
)

// casPause is called at the top of turn turn (from 0) of a
// compare-and-set loop. Turn 0 goes at once; a later turn, which follows
// a lost compare-and-set, first waits a random time up to
// casPauseBase<<turn, capped at casPauseMax ("full jitter"). Writers that
// retried at once met again on every turn: 48 clients listing their slots
// of one job in its key lost 64 times in a row (then the limit) and failed with
// ErrContention (TestJobKeyContention); spread out, each turn lets more
// of them through. It returns ctx's error, as ctxErr words it for op, if
// ctx ends first.
func casPause(ctx context.Context, turn int, op string) error {
	if turn > 0 {
		limit := casPauseMax
		if turn < 16 {
			limit = min(casPauseBase<<turn, casPauseMax)
		}
		t := time.NewTimer(rand.N(limit) + 1)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	return ctxErr(ctx, op)
}

// ErrContention is returned when a compare-and-set loop lost casRetries
// (256) times in a row to other writers of the same key, each retry after
// a random pause that grows with the losses (casPause).
var ErrContention = errors.New("natsbackend: too many concurrent writers of one key")

// until is the end of v's lease, granted or renewed by the revision
// the server stamped at created.
func (v runValue) until(created time.Time) time.Time {
	return created.Add(time.Duration(v.LeaseMs) * time.Millisecond)
}

func encodeRun(v runValue) []byte {
	b, _ := json.Marshal(v)
	return b
}

func (b *Backend) readRun(ctx context.Context, h handles, key string) (jetstream.KeyValueEntry, runValue, error) {
	var v runValue
	e, err := b.getJSON(ctx, h, key, "run", &v)
	return e, v, err
}

// getJSON reads key and decodes its value into v; what names the value in
// errors. A missing or deleted key answers a nil entry and no error.
func (b *Backend) getJSON(ctx context.Context, h handles, key, what string, v any) (jetstream.KeyValueEntry, error) {
	var e jetstream.KeyValueEntry
	err := b.resendRead(ctx, func(ctx context.Context) (err error) {
		e, err = hedged(ctx, b.hedgeAfter(), func(ctx context.Context) (jetstream.KeyValueEntry, error) {
			return h.kv.Get(ctx, key)
		})
		return err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) || lagging(key) {
		return nil, nil
	}
	if err != nil {
		return nil, b.wrap("read "+what, err)
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return nil, fmt.Errorf("natsbackend: %s %s holds an unreadable value: %w", what, key, err)
	}
	return e, nil
}

// serverNow reads the server's clock: the "ts" field of a stream info
// response on the bucket's stream, which the server fills with its time
// when it answers (nats-server 2.10+). On an older server it writes the
// key "t" and reads the server timestamp of that revision.
func (b *Backend) serverNow(ctx context.Context, h handles) (time.Time, error) {
	// js.Stream answers with a fresh handle whose cached info is this
	// response; Stream.Info on a shared handle would write its cache from
	// several goroutines.
	var s jetstream.Stream
	err := b.resendRead(ctx, func(ctx context.Context) (err error) {
		s, err = b.js.Stream(ctx, "KV_"+b.opts.Bucket)
		return err
	})
	if err != nil {
		return time.Time{}, b.wrap("read server time", err)
	}
	if info := s.CachedInfo(); info != nil && !info.TimeStamp.IsZero() {
		return info.TimeStamp.UTC(), nil
	}
	rev, err := h.kv.Put(ctx, "t", nil)
	if err != nil {
		return time.Time{}, b.wrap("read server time", err)
	}
	e, err := h.kv.GetRevision(ctx, "t", rev)
	if err != nil {
		return time.Time{}, b.wrap("read server time", err)
	}
	return e.Created().UTC(), nil
}

// ServerTime returns the NATS server's current time (anarchon.ServerClock),
// read as [Backend.serverNow] describes: the time stamp of a stream info
// response. One round trip.
func (b *Backend) ServerTime(ctx context.Context) (time.Time, error) {
	h, err := b.ready(ctx)
	if err != nil {
		return time.Time{}, err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	return b.readClock(ctx, h)
}

// runArgs serves a call on a run as jobArgs does, after the checks of
// runKeyOf (a job name that cannot be a key, then an empty token), in
// that order, before any round trip.
func (b *Backend) runArgs(ctx context.Context, job string, token string) (handles, string, context.Context, context.CancelFunc, error) {
	enc, err := encodeJob(job)
	if err != nil {
		return handles{}, "", nil, nil, err
	}
	if err := checkToken(token); err != nil {
		return handles{}, "", nil, nil, err
	}
	return b.encodedArgs(ctx, enc)
}

// jobArgs serves a call that takes no token (job control and triggers):
// it returns the job's encoded name, the connection's handles and ctx
// bounded by the call timeout (the caller defers cancel).
func (b *Backend) jobArgs(ctx context.Context, job string) (handles, string, context.Context, context.CancelFunc, error) {
	enc, err := encodeJob(job)
	if err != nil {
		return handles{}, "", nil, nil, err
	}
	return b.encodedArgs(ctx, enc)
}

// encodedArgs is the rest of runArgs and jobArgs, for the job encoded as
// enc.
func (b *Backend) encodedArgs(ctx context.Context, enc string) (handles, string, context.Context, context.CancelFunc, error) {
	h, err := b.ready(ctx)
	if err != nil {
		return handles{}, "", nil, nil, err
	}
	ctx, cancel := b.bound(ctx)
	return h, enc, ctx, cancel, nil
}

// claimRun decides a lease claim by SPEC §6's table, first match wins. The
// run's state lives in the key "r.<job>.<slot>"; every change is a KV
// Create (absent key) or Update with the revision that was read, so two
// instances never both act on the same state: the one whose revision is
// stale gets a revision mismatch and decides again on the new state.
//
// Lease times come from the server: a lease ends LeaseMs after the server
// timestamp of the revision that granted or renewed it. "Now" is the
// server's clock, answered from the cached sample when the decision is
// clear outside its error bound and read from the server otherwise (see
// serverAfter). The LeaseUntil of a won claim is read back from the
// revision it wrote (see settleWin), and its Fence is that revision: a
// sequence number of the bucket's stream, which every later win of any
// job writes to after it (SPEC §6, "Fencing").
//
// The overlap check uses the per-job key "j.<job>", the list of slots
// that may be running. A new run is created first, then added to the list
// with a compare-and-set that also checks every other listed run: if one
// holds a live lease, the new run is turned into skipped and the outcome is
// overlap. Of two instances starting different slots at once, exactly one
// commits first and the other sees it.
func (b *Backend) claimRun(ctx context.Context, c anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	h, job, ctx, cancel, err := b.runArgs(ctx, c.Job, c.Token)
	if err != nil {
		return anarchon.ClaimOutcome{}, err
	}
	defer cancel()
	if err := checkLease(c); err != nil {
		return anarchon.ClaimOutcome{}, err
	}
	maxAttempts := max(c.MaxAttempts, 1)
	key := runKey(job, c.Slot)
	var pre *prefetched // the first turn's reads; a later turn reads again
	for turn := range casRetries {
		if err := casPause(ctx, turn, "claim run"); err != nil {
			return anarchon.ClaimOutcome{}, err
		}
		var e kvEntry
		var found bool
		var v runValue
		var err error
		if turn == 0 {
			pre, e, found, v, err = b.prefetch(ctx, h, job, key)
			defer pre.stop()
		} else {
			pre = nil
			e, found, v, err = b.readRunEntry(ctx, h, key)
		}
		if err != nil {
			return anarchon.ClaimOutcome{}, err
		}
		if !found {
			out, retry, err := b.claimAbsent(ctx, h, job, key, c, pre)
			if retry {
				continue
			}
			return out, err
		}
		out, decided, err := b.decideRead(ctx, h, c, v, e.created)
		if err == nil && decided && out.Kind == anarchon.OutcomeRunning {
			err = b.ensureListed(ctx, h, job, c.Slot, func() (jobValue, uint64, error) { return pre.jobOr(ctx, b, h, job) })
		}
		if err != nil || decided {
			return out, err
		}
		if v.State == anarchon.RunStateRunning && v.Token == c.Token {
			// A running run is listed in its job key from the moment its
			// claim was answered won until it settles (listed keeps it).
			// One that is not was written by this token's earlier try
			// whose answer was lost (a create or takeover that landed,
			// its acknowledgement not, and no step after it ran); no
			// one was told it won, so it is settled here as that try
			// would have: listed under the overlap check, recorded.
			jv, _, err := pre.jobOr(ctx, b, h, job)
			if err != nil {
				return anarchon.ClaimOutcome{}, err
			}
			lo, _, err := b.nowBounds(ctx, h)
			if err != nil {
				return anarchon.ClaimOutcome{}, err
			}
			v.LeaseMs = c.Lease.Milliseconds()
			rev, err := h.kv.Update(ctx, key, encodeRun(v), e.rev)
			if err != nil {
				if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
					continue
				}
				return anarchon.ClaimOutcome{}, b.wrap("renew lease", err)
			}
			if !slices.Contains(jv.Slots, c.Slot) {
				out, retry, err := b.claimCreated(ctx, h, job, key, rev, lo, c, v.Attempt, pre)
				if retry {
					continue
				}
				return out, err
			}
			// The renewal's write is a win too and takes its revision
			// as the fence (SPEC §6, "Fencing").
			return anarchon.ClaimOutcome{Kind: anarchon.OutcomeWon, Attempt: v.Attempt, Holder: v.Holder, LeaseUntil: b.leaseEnd(ctx, h, key, rev, lo, c.Lease), Fence: rev}, nil
		}
		// Expired or released: take over, or give up when attempts are used.
		if v.Attempt >= maxAttempts {
			nv := runValue{State: anarchon.RunStateDone, Token: v.Token, Holder: v.Holder, Attempt: v.Attempt, Status: anarchon.StatusAbandoned}
			if _, err := h.kv.Update(ctx, key, encodeRun(nv), e.rev); err != nil {
				if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
					continue
				}
				return anarchon.ClaimOutcome{}, b.wrap("abandon run", err)
			}
			return anarchon.ClaimOutcome{Kind: anarchon.OutcomeDone, Attempt: v.Attempt, Status: anarchon.StatusAbandoned}, nil
		}
		lo, _, err := b.nowBounds(ctx, h)
		if err != nil {
			return anarchon.ClaimOutcome{}, err
		}
		nv := runValue{State: anarchon.RunStateRunning, Token: c.Token, Holder: c.InstanceID, Attempt: v.Attempt + 1, LeaseMs: c.Lease.Milliseconds()}
		rev, err := h.kv.Update(ctx, key, encodeRun(nv), e.rev)
		if err != nil {
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue
			}
			return anarchon.ClaimOutcome{}, b.wrap("take over run", err)
		}
		until, _, err := b.settleWin(ctx, h, job, key, rev, lo, c, nv.Attempt, 0, pre)
		if err != nil {
			return anarchon.ClaimOutcome{}, err
		}
		return anarchon.ClaimOutcome{Kind: anarchon.OutcomeWon, Attempt: nv.Attempt, Holder: c.InstanceID, LeaseUntil: until, Fence: rev}, nil
	}
	return anarchon.ClaimOutcome{}, fmt.Errorf("natsbackend: claim %s: %w", key, ErrContention)
}

// decideRead answers the lease claim c of an existing run from its state
// v, written at the server time created, where SPEC §6's table decides
// it without a write: a live lease of another token (running), or a
// settled run (missed, skipped, paused: none; done: done). decided is
// false where a write follows: the claimer's own lease (renewed), an
// expired lease or a released run (taken over or abandoned). The state
// may be a read of any replica, as every read of a run is; a read behind
// the leader shows an earlier state, whose answer (running) only makes a
// backup wait for the lease's end or the next event.
func (b *Backend) decideRead(ctx context.Context, h handles, c anarchon.RunClaim, v runValue, created time.Time) (out anarchon.ClaimOutcome, decided bool, err error) {
	switch v.State {
	case anarchon.RunStateRunning:
		if v.Token == c.Token {
			return out, false, nil
		}
		until := v.until(created)
		expired, err := b.serverAfter(ctx, h, until.Add(-time.Nanosecond)) // now >= until
		if err != nil {
			return out, true, err
		}
		if expired {
			return out, false, nil
		}
		return anarchon.ClaimOutcome{Kind: anarchon.OutcomeRunning, Attempt: v.Attempt, Holder: v.Holder, LeaseUntil: until.UTC()}, true, nil
	case anarchon.RunStateReleased:
		return out, false, nil
	case anarchon.RunStateMissed, anarchon.RunStateSkipped, anarchon.RunStatePaused:
		return anarchon.ClaimOutcome{Kind: anarchon.OutcomeNone}, true, nil
	default: // done, or a state a newer version wrote
		// The last attempt: an abandonment is recorded with it.
		return anarchon.ClaimOutcome{Kind: anarchon.OutcomeDone, Attempt: v.Attempt, Status: v.Status}, true, nil
	}
}

// checkLease refuses a lease claim's bad lease or MaxLate.
func checkLease(c anarchon.RunClaim) error {
	if c.Lease <= 0 {
		return fmt.Errorf("%w: lease %v is not positive", ErrInvalid, c.Lease)
	}
	if c.MaxLate < 0 {
		return fmt.Errorf("%w: negative MaxLate %v", ErrInvalid, c.MaxLate)
	}
	return nil
}

// leaseFrom is lo plus the lease as stored (whole ms): the lease end of
// a revision the server stamped at lo, or, lo being a lower bound of the
// server time before the write, one never later than the real end.
func leaseFrom(lo time.Time, lease time.Duration) time.Time {
	return lo.Add(time.Duration(lease.Milliseconds()) * time.Millisecond).UTC()
}

// claimAbsent handles the rows of SPEC §6 for an absent run. retry is
// true when the key appeared meanwhile and the caller must decide again.
// pre, when not nil, holds the job's pause state and job key read with
// the run (prefetch), which it uses instead of reading them again.
func (b *Backend) claimAbsent(ctx context.Context, h handles, job, key string, c anarchon.RunClaim, pre *prefetched) (out anarchon.ClaimOutcome, retry bool, err error) {
	settle := func(state anarchon.RunState, kind anarchon.OutcomeKind) (anarchon.ClaimOutcome, bool, error) {
		_, err := h.kv.Create(ctx, key, encodeRun(runValue{State: state}))
		if errors.Is(err, jetstream.ErrKeyExists) {
			return anarchon.ClaimOutcome{}, true, nil
		}
		if err != nil {
			return anarchon.ClaimOutcome{}, false, b.wrap("settle run", err)
		}
		return anarchon.ClaimOutcome{Kind: kind}, false, nil
	}
	if st, paused, err := pre.admitOr(ctx, b, h, job, c.ClaimInput); err != nil {
		return out, false, err
	} else if paused {
		out, retry, err := settle(anarchon.RunStatePaused, anarchon.OutcomePaused)
		if err == nil && !retry {
			err = b.savePaused(ctx, c.ClaimInput, st)
		}
		return out, retry, err
	}
	if c.MaxLate > 0 {
		// Late when the server's Unix ms exceed Slot+MaxLate, that is when
		// its time is at or past the next millisecond.
		deadline := time.UnixMilli(c.Slot + c.MaxLate.Milliseconds() + 1)
		late, err := b.serverAfter(ctx, h, deadline.Add(-time.Nanosecond))
		if err != nil {
			return out, false, err
		}
		if late {
			return settle(anarchon.RunStateMissed, anarchon.OutcomeLate)
		}
	}
	lo, _, err := b.nowBounds(ctx, h)
	if err != nil {
		return out, false, err
	}
	// The runs commitJob probes, read beside the create.
	if err := pre.startProbes(ctx, b, h, job, c.Slot, overlapLimit(c)); err != nil {
		return out, false, err
	}
	// Not sent again (see resend). A create that landed but whose
	// answer was lost is settled by the next try of the same token:
	// claimRun finds its run unlisted in the job key and completes it
	// here (claimCreated).
	rev, err := h.kv.Create(ctx, key, encodeRun(newRun(c)))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return out, true, nil
	}
	if err != nil {
		return out, false, b.wrap("claim run", err)
	}
	return b.claimCreated(ctx, h, job, key, rev, lo, c, 1, pre)
}

// overlapLimit is the job key's limit of live runs for claim c: 0 (no
// overlap check) when it allows overlap, else its Limit, at least 1.
func overlapLimit(c anarchon.RunClaim) int {
	if c.AllowOverlap {
		return 0
	}
	return max(c.Limit, 1)
}

// newRun is the value with which a claim creates an absent run.
func newRun(c anarchon.RunClaim) runValue {
	return runValue{State: anarchon.RunStateRunning, Token: c.Token, Holder: c.InstanceID, Attempt: 1, LeaseMs: c.Lease.Milliseconds()}
}

// claimCreated completes the claim that wrote its run, running with
// attempt attempt, at revision rev: the create of an absent run (newRun,
// attempt 1), or the renewal of a run an earlier try of the same token
// wrote but never settled (see claimRun). lo is a lower bound of the
// server time before the write. The overlap check applies to a
// first attempt only, as a takeover of a later one skips it (the slot
// was admitted). retry is true when the run changed meanwhile and the
// caller must decide again. pre, when not nil, is as for claimAbsent.
func (b *Backend) claimCreated(ctx context.Context, h handles, job, key string, rev uint64, lo time.Time, c anarchon.RunClaim, attempt int, pre *prefetched) (out anarchon.ClaimOutcome, retry bool, err error) {
	limit := overlapLimit(c)
	if attempt > 1 {
		limit = 0
	}
	until, ok, err := b.settleWin(ctx, h, job, key, rev, lo, c, attempt, limit, pre)
	if err != nil {
		return out, false, err
	}
	if !ok {
		// Enough other slots committed live runs first: this one is skipped.
		if _, err := h.kv.Update(ctx, key, encodeRun(runValue{State: anarchon.RunStateSkipped}), rev); err != nil {
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				return out, true, nil
			}
			return out, false, b.wrap("skip run", err)
		}
		return anarchon.ClaimOutcome{Kind: anarchon.OutcomeOverlap}, false, nil
	}
	return anarchon.ClaimOutcome{Kind: anarchon.OutcomeWon, Attempt: attempt, Holder: c.InstanceID, LeaseUntil: until, Fence: rev}, false, nil
}

// settleWin completes a claim whose write of revision rev of key made the
// caller the holder: it lists the slot in the job key (refusing, ok false,
// when limit > 0 and limit other runs are live), publishes the claim record to
// history, and reads the lease end back from the revision. The read-back
// runs beside the job key update, and so does the publish when limit is
// 0 (the update cannot refuse then), so a won claim waits for one round
// trip of the three instead of three. The lease end is the server
// timestamp of revision rev plus the lease, exactly what another
// instance's claim reports as running; if the revision cannot be read it
// is lo, a lower bound of the server time before the write, plus the
// lease. pre, when not nil, is as for claimAbsent.
func (b *Backend) settleWin(ctx context.Context, h handles, job, key string, rev uint64, lo time.Time, c anarchon.RunClaim, attempt int, limit int, pre *prefetched) (until time.Time, ok bool, err error) {
	ends := make(chan time.Time, 1)
	go func() { ends <- b.leaseEnd(ctx, h, key, rev, lo, c.Lease) }()
	var pub chan error
	if limit == 0 {
		pub = make(chan error, 1)
		go func() { pub <- b.publishClaim(ctx, job, c.ClaimInput, attempt, false) }()
	}
	ok, err = b.commitJob(ctx, h, job, c.Slot, limit, pre)
	var perr error
	if pub != nil {
		perr = <-pub
	} else if err == nil && ok {
		perr = b.publishClaim(ctx, job, c.ClaimInput, attempt, false)
	}
	if err == nil && ok && perr != nil {
		b.recordFailed(ctx, c.ClaimInput, attempt, perr)
	}
	until = <-ends
	return until, ok, err
}

// recordFailed logs the history record of a won lease claim that failed
// with err. The run is ours in the bucket (and listed in the job key)
// with its lease: the claim is won whatever became of its history
// record. Failing it would run the slot nowhere and, worse, leave a
// running run that no one heartbeats or finishes, which every later
// slot's overlap check counts as live until its lease ends (a history
// stream electing a leader did that: 20 s of slots skipped). History
// shows the run once its result is stored.
func (b *Backend) recordFailed(ctx context.Context, c anarchon.ClaimInput, attempt int, err error) {
	b.logger().LogAttrs(ctx, slog.LevelWarn, "nats: a won claim's history record failed; the run goes on, and history shows it when its result is stored",
		slog.String("job", c.Job), slog.Time("slot", time.UnixMilli(c.Slot).UTC()), slog.Int("attempt", attempt), slog.String("error", err.Error()))
}

// leaseEnd returns the end of the lease granted by revision rev of key:
// the server timestamp of that revision plus lease, read back with one
// direct get. If the revision is already gone (a heartbeat or takeover
// replaced it) it returns lo+lease, lo being a lower bound of the server
// time before the write, so never later than the real end.
func (b *Backend) leaseEnd(ctx context.Context, h handles, key string, rev uint64, lo time.Time, lease time.Duration) time.Time {
	e, err := h.kv.GetRevision(ctx, key, rev)
	if err != nil {
		return leaseFrom(lo, lease)
	}
	return leaseFrom(e.Created(), lease)
}

// readJob reads the per-job key; a missing key is an empty list with
// revision 0.
func (b *Backend) readJob(ctx context.Context, h handles, job string) (jobValue, uint64, error) {
	var v jobValue
	e, err := b.getJSON(ctx, h, jobKey(job), "job key", &v)
	if e == nil {
		return jobValue{}, 0, err
	}
	return v, e.Revision(), nil
}

// ensureListed lists slot in job's key if it is not listed yet. A run is
// running from its create on, and its claimer lists it with a
// compare-and-set after that: a claim answered running for it before
// that step must not be followed by a claim of another slot, with
// overlap refused, that finds the job key without it. So a claim that
// answers running lists the run itself first; the holder's own
// compare-and-set then fails, reads the key again and finds its slot
// there. Its first turn takes the job key from first (a read the caller
// made already) when that is not nil; the others read it.
func (b *Backend) ensureListed(ctx context.Context, h handles, job string, slot int64, first func() (jobValue, uint64, error)) error {
	for turn := range casRetries {
		if err := casPause(ctx, turn, "update job"); err != nil {
			return err
		}
		var jv jobValue
		var rev uint64
		var err error
		if turn == 0 && first != nil {
			jv, rev, err = first()
		} else {
			jv, rev, err = b.readJob(ctx, h, job)
		}
		if err != nil {
			return err
		}
		if slices.Contains(jv.Slots, slot) {
			return nil
		}
		keep := append(slices.Clone(jv.Slots), slot)
		slices.Sort(keep)
		if changed, err := b.writeJob(ctx, h, job, keep, rev); err != nil {
			return err
		} else if changed {
			continue
		}
		return nil
	}
	return fmt.Errorf("natsbackend: job key %s: %w", jobKey(job), ErrContention)
}

// writeJob writes slots as job's key by compare-and-set on rev (0: the
// key is absent, a create). changed reports a key written by another
// since rev was read: the caller reads it again and decides again.
func (b *Backend) writeJob(ctx context.Context, h handles, job string, slots []int64, rev uint64) (changed bool, err error) {
	val, _ := json.Marshal(jobValue{Slots: slots})
	if rev == 0 {
		_, err = h.kv.Create(ctx, jobKey(job), val)
	} else {
		_, err = h.kv.Update(ctx, jobKey(job), val, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return true, nil
	}
	return false, b.wrap("update job", err)
}

// pruneProbes is how many listed slots commitJob reads, when it does not
// check overlap, to drop those no longer running or released. Probing a
// few slots at random instead of all keeps a claim's cost independent of
// the list's length; as each commit adds one slot and removes every
// settled slot it probes, the list stays within a small multiple of the
// job's unfinished runs.
const pruneProbes = 2

// commitJob adds slot to the per-job key by compare-and-set. With limit >
// 0 (the overlap check), it reads every other listed slot, drops those no
// longer running or released, and refuses (false) if limit of them hold
// live leases by the server's clock; the compare-and-set makes the count
// and the listing one step, so two slots committed at once are counted by
// one of them. With limit 0 it probes at most pruneProbes listed slots.
// The slots it reads are read in one request (readMany); listed decides.
// Its first turn takes the job key from pre when that is not nil (a read
// made before the claim's write: a key changed since fails the
// compare-and-set, and the next turn reads it again).
func (b *Backend) commitJob(ctx context.Context, h handles, job string, slot int64, limit int, pre *prefetched) (bool, error) {
	for turn := range casRetries {
		if err := casPause(ctx, turn, "update job"); err != nil {
			return false, err
		}
		if turn > 0 {
			pre = nil
		}
		jv, rev, err := pre.jobOr(ctx, b, h, job)
		if err != nil {
			return false, err
		}
		probe, runs, err := pre.probesOr(ctx, b, h, job, jv, slot, limit)
		if err != nil {
			return false, err
		}
		keep, ok, err := b.listed(ctx, h, job, slot, limit, jv, probe, runs)
		if err != nil || !ok {
			return false, err
		}
		if changed, err := b.writeJob(ctx, h, job, keep, rev); err != nil {
			return false, err
		} else if changed {
			continue
		}
		return true, nil
	}
	return false, fmt.Errorf("natsbackend: job key %s: %w", jobKey(job), ErrContention)
}

// probed is which slots of the list jv, other than slot, a commit reads:
// all of them for the overlap check (limit > 0), else at most pruneProbes
// at random.
func probed(jv jobValue, slot int64, limit int) []int64 {
	others := slices.DeleteFunc(slices.Clone(jv.Slots), func(s int64) bool { return s == slot })
	if limit > 0 || len(others) <= pruneProbes {
		return others
	}
	probe := make([]int64, 0, pruneProbes)
	for _, i := range rand.Perm(len(others))[:pruneProbes] {
		probe = append(probe, others[i])
	}
	return probe
}

// commitJobs is commitJob for the won creates of a batch: item k lists
// slots[k] in the key of jobs[k] (the jobs distinct) under limits[k].
// The job keys are read in one request and the slots commitJob would
// read (probed: all of a list for the overlap check, else at most
// pruneProbes) in one more; the lists are decided as
// commitJob decides them (settled and absent runs dropped, live leases
// counted against the limit) and written with compare-and-sets, all
// published before any acknowledgement is awaited. committed[k] is true
// where the slot is listed. An item whose limit is reached, whose job key
// another writer changed meanwhile, or whose read or write failed is left
// to commitJob (false), which reads again and refuses where it must.
func (b *Backend) commitJobs(ctx context.Context, h handles, jobs []string, slots []int64, limits []int) (committed []bool) {
	committed = make([]bool, len(jobs))
	if len(jobs) == 0 {
		return committed
	}
	jkeys := make([]string, len(jobs))
	for k, job := range jobs {
		jkeys[k] = jobKey(job)
	}
	got, err := b.readMany(ctx, h, jkeys, true)
	if err != nil {
		return committed
	}
	lists := make([]jobValue, len(jobs))
	revs := make([]uint64, len(jobs)) // 0: no key yet, written as a create
	readable := make([]bool, len(jobs))
	probes := make([][]int64, len(jobs))
	var rkeys []string
	for k := range jobs {
		if e, ok := got[jkeys[k]]; ok {
			if json.Unmarshal(e.val, &lists[k]) != nil {
				continue // commitJob reports the unreadable value
			}
			revs[k] = e.rev
		}
		readable[k] = true
		probes[k] = probed(lists[k], slots[k], limits[k])
		for _, s := range probes[k] {
			rkeys = append(rkeys, runKey(jobs[k], s))
		}
	}
	runs, err := b.readMany(ctx, h, rkeys, true)
	if err != nil {
		return committed
	}
	var idx []int
	var keys []string
	var vals [][]byte
	var wrevs []uint64
	for k := range jobs {
		if !readable[k] {
			continue
		}
		keep, ok, err := b.listed(ctx, h, jobs[k], slots[k], limits[k], lists[k], probes[k], runs)
		if err != nil || !ok {
			continue
		}
		val, _ := json.Marshal(jobValue{Slots: keep})
		idx, keys, vals, wrevs = append(idx, k), append(keys, jkeys[k]), append(vals, val), append(wrevs, revs[k])
	}
	_, errs := b.updateMany(ctx, h, "update job", keys, vals, wrevs)
	for j, k := range idx {
		committed[k] = errs[j] == nil
	}
	return committed
}

// listed decides the new list of job's key with slot added (commitJob,
// commitJobs): of the other slots of the list jv, those in probe whose
// runs (read into runs; an absent key is an absent run) are gone or
// settled are dropped, and the others kept; with limit > 0, ok is false
// when limit of the probed runs hold live leases by the server's clock.
// An unreadable run or clock is an error.
func (b *Backend) listed(ctx context.Context, h handles, job string, slot int64, limit int, jv jobValue, probe []int64, runs map[string]kvEntry) (keep []int64, ok bool, err error) {
	drop := map[int64]bool{}
	live := 0
	for _, s := range probe {
		if s == slot {
			continue
		}
		key := runKey(job, s)
		e, read := runs[key]
		if !read {
			// A replica behind the leader answers "absent" for a run it
			// has not seen yet: dropped uncounted, a live run would let
			// this commit past the limit. So the leader confirms an
			// absent run before it is dropped; a listed run whose key
			// is gone (it aged out) is rare, and dropped once.
			le, found, err := b.leaderRun(ctx, h, key)
			if err != nil {
				return nil, false, err
			}
			if !found {
				drop[s] = true
				continue
			}
			e = le
		}
		var v runValue
		if err := json.Unmarshal(e.val, &v); err != nil {
			return nil, false, fmt.Errorf("natsbackend: run %s holds an unreadable value: %w", key, err)
		}
		if v.State != anarchon.RunStateRunning && v.State != anarchon.RunStateReleased {
			drop[s] = true
			continue
		}
		if limit > 0 && v.State == anarchon.RunStateRunning {
			until := v.until(e.created)
			expired, err := b.serverAfter(ctx, h, until.Add(-time.Nanosecond))
			if err != nil {
				return nil, false, err
			}
			if live += btoi(!expired); live >= limit {
				return nil, false, nil
			}
		}
	}
	keep = []int64{slot}
	for _, s := range jv.Slots {
		if s != slot && !drop[s] {
			keep = append(keep, s)
		}
	}
	slices.Sort(keep)
	return keep, true, nil
}

// readRunLeader reads the run of key from the bucket stream's leader: the
// JetStream API's message get, which only the leader answers, where
// readRun's direct get is served by any replica. A replica may lag the
// leader: one that was cut off or frozen and has just come back answers
// what it held, a run that is absent or still an earlier holder's, at
// once. A write decided on such a read only loses its compare-and-set and
// reads again, but a refusal would be wrong: a holder's finish or
// heartbeat answered "not held", its run left running until its lease
// ran out and a backup ran the slot again. (A failure of the NATS cluster
// drill fits this: a holder's finish, sent while a replica was frozen and
// just as it resumed, was recorded lease_lost, and a backup ran the slot
// at the lease's end.) So every refusal read from a replica is confirmed
// here before it is answered; a refusal is rare (a lease really lost), so
// this costs the common path nothing.
// found is false when the key has no value (or a delete marker). Without
// the fast path (an API prefix or a domain) it reads with the KV API as
// readRun does.
func (b *Backend) readRunLeader(ctx context.Context, h handles, key string) (rev uint64, v runValue, found bool, err error) {
	e, found, err := b.leaderRun(ctx, h, key)
	if err != nil || !found {
		return 0, v, false, err
	}
	if err := json.Unmarshal(e.val, &v); err != nil {
		return 0, v, false, fmt.Errorf("natsbackend: run %s holds an unreadable value: %w", key, err)
	}
	return e.rev, v, true, nil
}

// leaderRun is readRunLeader's read: the run key's latest value, its
// revision and the server's time stamp of it, from the stream's leader
// (read as readRun reads it without the fast path).
func (b *Backend) leaderRun(ctx context.Context, h handles, key string) (kvEntry, bool, error) {
	if !b.fastPath() {
		e, found, _, err := b.readRunEntry(ctx, h, key)
		return e, found, err
	}
	var m leaderMsg
	err := b.resendRead(ctx, func(ctx context.Context) (err error) {
		m, err = b.leaderLast(ctx, "KV_"+b.opts.Bucket, "$KV."+b.opts.Bucket+"."+key)
		return err
	})
	found := err == nil && m.Seq > 0
	if found && len(m.Hdrs) > 0 {
		hdr, herr := nats.DecodeHeadersMsg(m.Hdrs)
		if herr != nil {
			err = fmt.Errorf("message get answer: %w", herr)
		} else if op := hdr.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			found = false
		}
	}
	if err != nil {
		return kvEntry{}, false, b.wrap("read run from the leader", err)
	}
	if !found {
		return kvEntry{}, false, nil
	}
	return kvEntry{val: m.Data, rev: m.Seq, created: m.Time}, true, nil
}

// change reads the run and, if decide accepts its state, writes the new
// value with the read revision, retrying on a revision mismatch. A state
// that decide refuses is read again from the leader (readRunLeader) and
// decided on that.
func (b *Backend) change(ctx context.Context, h handles, key string, decide func(runValue) (runValue, bool)) (bool, error) {
	for turn := range casRetries {
		if err := casPause(ctx, turn, "update run"); err != nil {
			return false, err
		}
		e, v, err := b.readRun(ctx, h, key)
		if err != nil {
			return false, err
		}
		var rev uint64
		var nv runValue
		ok := false
		if e != nil {
			rev = e.Revision()
			nv, ok = decide(v)
		}
		if !ok {
			// A refusal read from a replica is confirmed with the leader
			// before it is answered (readRunLeader).
			var found bool
			if rev, v, found, err = b.readRunLeader(ctx, h, key); err != nil || !found {
				return false, err
			}
			if nv, ok = decide(v); !ok {
				return false, nil
			}
		}
		if _, err := h.kv.Update(ctx, key, encodeRun(nv), rev); err != nil {
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue
			}
			return false, b.wrap("update run", err)
		}
		return true, nil
	}
	return false, fmt.Errorf("natsbackend: run %s: %w", key, ErrContention)
}

// heartbeat extends the lease to (server time of this write) + lease if
// token holds the run and it is running, by an Update with the revision
// read. false means the lease is lost (another token holds the slot, or it
// is no longer running).
func (b *Backend) heartbeat(ctx context.Context, job string, slot int64, token string, lease time.Duration) (bool, error) {
	h, enc, ctx, cancel, err := b.runArgs(ctx, job, token)
	if err != nil {
		return false, err
	}
	defer cancel()
	if err := checkBeat(lease); err != nil {
		return false, err
	}
	return b.change(ctx, h, runKey(enc, slot), func(v runValue) (runValue, bool) {
		return renew(v, token, lease)
	})
}

// checkBeat refuses a heartbeat's lease that is not positive.
func checkBeat(lease time.Duration) error {
	if lease <= 0 {
		return fmt.Errorf("%w: lease %v is not positive", ErrInvalid, lease)
	}
	return nil
}

// renew is a heartbeat's decision on a run's state: the value to write
// and true if token holds the run and it is running.
func renew(v runValue, token string, lease time.Duration) (runValue, bool) {
	if v.State != anarchon.RunStateRunning || v.Token != token {
		return v, false
	}
	v.LeaseMs = lease.Milliseconds()
	return v, true
}

// finish marks the run done with status if token holds it (running, or
// released by the same token). A repeat of the same Finish answers true.
func (b *Backend) finish(ctx context.Context, job string, slot int64, token string, status anarchon.Status) (bool, error) {
	h, enc, ctx, cancel, err := b.runArgs(ctx, job, token)
	if err != nil {
		return false, err
	}
	defer cancel()
	repeat := false
	ok, err := b.change(ctx, h, runKey(enc, slot), func(v runValue) (runValue, bool) {
		nv, write, again := settleDone(v, token, status)
		repeat = again
		return nv, write
	})
	return ok || repeat, err
}

// settleDone is a finish's decision on a run's state: the value to write
// and write true if token holds the run (running, or released by the
// same token); repeat true if the run is already done by token with the
// same status (a repeat of the same finish, which answers true).
func settleDone(v runValue, token string, status anarchon.Status) (nv runValue, write, repeat bool) {
	if v.Token != token {
		return v, false, false
	}
	switch v.State {
	case anarchon.RunStateRunning, anarchon.RunStateReleased:
		v.State, v.Status, v.LeaseMs = anarchon.RunStateDone, status, 0
		return v, true, false
	case anarchon.RunStateDone:
		return v, false, v.Status == status
	}
	return v, false, false
}

// release ends token's lease at once (state released) so that a backup's
// next claim takes the run over. false if token does not hold the run or
// it is not running.
func (b *Backend) release(ctx context.Context, job string, slot int64, token string) (bool, error) {
	h, enc, ctx, cancel, err := b.runArgs(ctx, job, token)
	if err != nil {
		return false, err
	}
	defer cancel()
	return b.change(ctx, h, runKey(enc, slot), func(v runValue) (runValue, bool) {
		if v.State != anarchon.RunStateRunning || v.Token != token {
			return v, false
		}
		v.State, v.LeaseMs = anarchon.RunStateReleased, 0
		return v, true
	})
}

// active lists the job's runs that are running or released, oldest slot
// first, from the slots of the per-job key. Live is judged by the server's
// clock.
func (b *Backend) active(ctx context.Context, job string) ([]anarchon.ActiveRun, error) {
	enc, err := encodeJob(job)
	if err != nil {
		return nil, err
	}
	h, err := b.ready(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	jv, _, err := b.readJob(ctx, h, enc)
	if err != nil {
		return nil, err
	}
	out := []anarchon.ActiveRun{}
	if len(jv.Slots) == 0 {
		return out, nil
	}
	for _, s := range jv.Slots {
		if err := ctxErr(ctx, "list active runs"); err != nil {
			return nil, err
		}
		e, v, err := b.readRun(ctx, h, runKey(enc, s))
		if err != nil {
			return nil, err
		}
		if e == nil || (v.State != anarchon.RunStateRunning && v.State != anarchon.RunStateReleased) {
			continue
		}
		until := v.until(e.Created())
		if v.State == anarchon.RunStateReleased {
			until = e.Created()
		}
		live := false
		if v.State == anarchon.RunStateRunning {
			expired, err := b.serverAfter(ctx, h, until.Add(-time.Nanosecond))
			if err != nil {
				return nil, err
			}
			live = !expired
		}
		out = append(out, anarchon.ActiveRun{Slot: s, Token: v.Token, InstanceID: v.Holder, Attempt: v.Attempt,
			State: v.State, LeaseUntil: until.UTC(), Live: live})
	}
	return out, nil
}

// WatchRuns watches the run keys "r.>" and the trigger marks "q.>" of the
// bucket (a KV watch, updates only) and sends RunReleased when a run
// becomes released, RunFinished when it becomes done, missed, skipped or
// paused, and RunTriggered for a new trigger request (anarchon.Watcher). The channel
// is closed when ctx ends or the watch breaks.
func (b *Backend) WatchRuns(ctx context.Context) (<-chan anarchon.RunEvent, error) {
	h, err := b.ready(ctx)
	if err != nil {
		return nil, err
	}
	w, err := h.kv.WatchFiltered(ctx, []string{"r.>", "q.>"}, jetstream.UpdatesOnly())
	if err != nil {
		return nil, b.wrap("watch runs", err)
	}
	ch := make(chan anarchon.RunEvent, 64)
	go func() {
		defer close(ch)
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				ev, ok := runEvent(e)
				if !ok {
					continue
				}
				select {
				case ch <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return ch, nil
}

// runningPrefix begins the value of every running run encodeRun writes
// (State is runValue's first field). Half of a burst's run writes are
// claims, and every instance's watch receives each of them: runEvent
// passes over them without decoding their keys and values.
var runningPrefix = encodeRun(runValue{State: anarchon.RunStateRunning})[:len(`{"st":"running"`)]

// runEvent is the event of a watched put, if it is one the scheduler
// waits for.
func runEvent(e jetstream.KeyValueEntry) (anarchon.RunEvent, bool) {
	if e == nil || e.Operation() != jetstream.KeyValuePut {
		return anarchon.RunEvent{}, false
	}
	parts := strings.Split(e.Key(), ".")
	if len(parts) == 3 && parts[0] == "q" {
		job, ok := decodeJob(parts[1])
		return anarchon.RunEvent{Job: job, Kind: anarchon.RunTriggered}, ok
	}
	if len(parts) != 3 || parts[0] != "r" {
		return anarchon.RunEvent{}, false
	}
	if bytes.HasPrefix(e.Value(), runningPrefix) {
		return anarchon.RunEvent{}, false // a claim or a renewal: no event
	}
	job, ok := decodeJob(parts[1])
	if !ok {
		return anarchon.RunEvent{}, false
	}
	slot, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return anarchon.RunEvent{}, false
	}
	var v runValue
	if json.Unmarshal(e.Value(), &v) != nil {
		return anarchon.RunEvent{}, false
	}
	ev := anarchon.RunEvent{Job: job, Slot: slot}
	switch v.State {
	case anarchon.RunStateReleased:
		ev.Kind = anarchon.RunReleased
	case anarchon.RunStateDone, anarchon.RunStateMissed, anarchon.RunStateSkipped, anarchon.RunStatePaused:
		ev.Kind = anarchon.RunFinished
	default:
		return anarchon.RunEvent{}, false
	}
	return ev, true
}

// RunStore is the backend's anarchon.RunStore, returned by
// [Backend.Runs]: the lease side of the backend (SPEC §6). It also
// implements anarchon.Watcher, anarchon.ServerClock and
// anarchon.ResultFinisher, and the batches anarchon.RunBatchClaimer,
// anarchon.HeartbeatBatcher and anarchon.FinishBatcher.
type RunStore struct{ b *Backend }

var (
	_ anarchon.RunStore       = (*RunStore)(nil)
	_ anarchon.Watcher        = (*RunStore)(nil)
	_ anarchon.ServerClock    = (*RunStore)(nil)
	_ anarchon.ResultFinisher = (*RunStore)(nil)
)

// Claim decides a lease claim by SPEC §6's table, first match wins, with
// KV Create and revision compare-and-set on the key "r.<job>.<slot>"; see
// the package docs, "Leases". Errors: ErrInvalid for an empty job or
// token, a lease <= 0 or a negative MaxLate; ErrContention if other
// writers kept winning; anarchon.ErrClosed after Close.
func (r *RunStore) Claim(ctx context.Context, c anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	return r.b.claimRun(ctx, c)
}

// Heartbeat extends the lease to (server time of this write) + lease if
// token holds the run and it is running. false means the lease is lost.
func (r *RunStore) Heartbeat(ctx context.Context, in anarchon.HeartbeatInput) (bool, error) {
	job, slot, token, lease := in.Job, in.Slot, in.Token, in.Lease
	return r.b.heartbeat(ctx, job, slot, token, lease)
}

// Finish marks the run done with status if token holds it (running, or
// released by the same token); a repeat of the same Finish answers true.
func (r *RunStore) Finish(ctx context.Context, in anarchon.FinishInput) (bool, error) {
	job, slot, token, status := in.Job, in.Slot, in.Token, in.Status
	return r.b.finish(ctx, job, slot, token, status)
}

// FinishResult is Finish and [Backend.SaveResult] in one call
// (anarchon.ResultFinisher): it marks the run (in.Job, in.Result.Slot)
// done with in.Result.Status if in.Result.Token holds it, as Finish
// does, then appends in.Result to the job's history and trims it, as
// SaveResult does; if the token no longer holds the run, it appends the
// result with Status StatusLeaseLost and returns false. It takes the
// steps of both calls in turn (four requests: the run's read and
// compare-and-set, the record's publish, the trim); a repeat after a lost
// reply answers as the first call did. Errors: ErrInvalid for an empty
// job, token or status or a negative history size or TTL; those of
// Finish and SaveResult otherwise (no result is stored when the finish
// failed).
func (r *RunStore) FinishResult(ctx context.Context, in anarchon.SaveResultInput) (bool, error) {
	if err := checkFinishResult(in); err != nil {
		return false, err
	}
	held, err := r.b.finish(ctx, in.Job, in.Result.Slot, in.Result.Token, in.Result.Status)
	if err != nil {
		return false, err
	}
	return held, r.b.SaveResult(ctx, heldResult(in, held))
}

// checkFinishResult refuses a FinishResult's bad input before any I/O.
func checkFinishResult(in anarchon.SaveResultInput) error {
	if _, err := encodeJob(in.Job); err != nil {
		return err
	}
	if err := checkToken(in.Result.Token); err != nil {
		return err
	}
	if in.Result.Status == "" {
		return fmt.Errorf("%w: job %q: empty status", ErrInvalid, in.Job)
	}
	return checkHistory(in)
}

// heldResult is the result FinishResult stores: in's, with Status
// StatusLeaseLost when the token no longer held the run.
func heldResult(in anarchon.SaveResultInput, held bool) anarchon.SaveResultInput {
	if !held {
		in.Result.Status = anarchon.StatusLeaseLost
	}
	return in
}

// Release ends token's live lease at once (state released) so that a
// backup takes over. false if token does not hold a running lease.
func (r *RunStore) Release(ctx context.Context, in anarchon.ReleaseInput) (bool, error) {
	job, slot, token := in.Job, in.Slot, in.Token
	return r.b.release(ctx, job, slot, token)
}

// Active lists the job's running or released runs, oldest slot first,
// with Live judged by the server's clock.
func (r *RunStore) Active(ctx context.Context, job string) ([]anarchon.ActiveRun, error) {
	return r.b.active(ctx, job)
}

// WatchRuns is [Backend.WatchRuns].
func (r *RunStore) WatchRuns(ctx context.Context) (<-chan anarchon.RunEvent, error) {
	return r.b.WatchRuns(ctx)
}

// ServerTime is [Backend.ServerTime].
func (r *RunStore) ServerTime(ctx context.Context) (time.Time, error) {
	return r.b.ServerTime(ctx)
}

// btoi is 1 for true, 0 for false.
func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}
