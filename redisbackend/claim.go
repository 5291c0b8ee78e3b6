package redisbackend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/redis/go-redis/v9"
)

// PrepareJob checks the job name. Redis needs no per-job setup: the job's
// keys appear with its first claim.
func (b *Backend) PrepareJob(ctx context.Context, in anarchon.PrepareJobInput) error {
	job, historySize := in.Job, in.HistorySize
	if err := b.check(); err != nil {
		return err
	}
	if job == "" {
		return fmt.Errorf("%w: empty job name", ErrInvalidInput)
	}
	if historySize < 0 {
		return fmt.Errorf("%w: job %q: negative history size %d", ErrInvalidInput, job, historySize)
	}
	return nil
}

// Claim is the plain claim of SPEC §4, one Lua script: it returns true if
// the slot was free (and records the claim) or is already claimed with
// in.Token (repeat safety), false if another token holds it or the slot is
// at or below the job's trim watermark. A new slot of a paused job takes
// a second script, which settles it and saves its history record in one
// step (SPEC §12). With Options.Replicas a won claim whose WAIT falls
// short is withdrawn (the slot is unclaimed again) and Claim fails with
// ErrNotReplicated.
func (b *Backend) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	if err := b.checkRun(in.Job, in.Slot, in.Token); err != nil {
		return false, err
	}
	if err := b.epoch.check(ctx, b); err != nil {
		return false, err
	}
	keys, args := b.claimArgs(in)
	res, err := b.runWrite(ctx, scriptClaim, keys, args...)
	if err == nil && isPausedReply(res) { // {2}: paused
		size, ttl := historyArgs(in)
		res, err = b.runWrite(ctx, scriptClaimPaused, b.pausedClaimKeys(in.Job), append(args, size, ttl)...)
	}
	if err != nil {
		return false, b.wrap(fmt.Sprintf("claim %q slot %d", in.Job, in.Slot), b.withdraw(ctx, in.Job, in.Slot, in.Token, err))
	}
	return b.claimAnswer(in, res)
}

// claimArgs are the KEYS and ARGV of scriptClaim for in; the paused
// script takes pausedClaimKeys and the same ARGV plus historyArgs.
func (b *Backend) claimArgs(in anarchon.ClaimInput) (keys []string, args []any) {
	k := b.keys(in.Job)
	return []string{k.run, k.ctl}, []any{slotArg(in.Slot), in.Token, in.InstanceID, anarchon.EarlyTolerance.Milliseconds()}
}

func (b *Backend) pausedClaimKeys(job string) []string {
	k := b.keys(job)
	return []string{k.run, k.claims, k.hist, k.results, k.age, k.ctl}
}

// isPausedReply reports the reply {2} of scriptClaim: a new slot of a
// paused job, which scriptClaimPaused settles.
func isPausedReply(res any) bool {
	arr, ok := res.([]any)
	return ok && len(arr) == 1
}

// claimAnswer is Claim's answer for the final reply of a claim script.
func (b *Backend) claimAnswer(in anarchon.ClaimInput, res any) (bool, error) {
	if arr, ok := res.([]any); ok && len(arr) == 2 { // {-1, now}: early
		now, _ := arr[1].(string)
		ms, _ := strconv.ParseInt(now, 10, 64)
		return false, &anarchon.EarlyError{Job: in.Job, Slot: in.Slot, StoreNow: ms}
	}
	n, ok := res.(int64)
	if !ok {
		return false, b.unexpected("claim", res)
	}
	return n == 1, nil
}

// historyArgs are the history size and TTL (ms) with which a claim
// script saves the record of a slot it settles as paused.
func historyArgs(in anarchon.ClaimInput) (size int, ttlMs int64) {
	size = in.HistorySize
	if size <= 0 {
		size = anarchon.DefaultHistorySize
	}
	return size, max(in.HistoryTTL.Milliseconds(), 0)
}

// RecordManualRun records a RunNow run with no deduplication and returns
// in.Slot. Repeating it with the same token rewrites the same record.
func (b *Backend) RecordManualRun(ctx context.Context, in anarchon.ClaimInput) (int64, error) {
	if err := b.checkRun(in.Job, in.Slot, in.Token); err != nil {
		return 0, err
	}
	k := b.keys(in.Job)
	_, err := scriptManual.Run(ctx, b.client, []string{k.claims, k.hist},
		slotArg(in.Slot), in.Token, in.InstanceID).Result()
	if err != nil {
		return 0, b.wrap(fmt.Sprintf("record manual run %q", in.Job), err)
	}
	return in.Slot, nil
}

// runWrite runs a script that may win a claim, renew a lease or finish a
// run. With Options.Replicas the script and a WAIT go in one pipeline on
// the connection of the key's master, so the WAIT covers exactly this
// write, and a success (a won claim, a renewal, a finish: won) that fewer
// replicas acknowledged is ErrNotReplicated. A renewal or finish a
// failover lost would let a backup take the run over while its holder
// still runs, or after it finished (a rerun); failing them makes the
// holder stop at its lease's safe end, and retry the finish, instead.
func (b *Backend) runWrite(ctx context.Context, s *script, keys []string, args ...any) (any, error) {
	if b.replicas == 0 {
		return s.Run(ctx, b.client, keys, args...).Result()
	}
	var node *redis.Client
	switch c := b.client.(type) {
	case *redis.Client:
		node = c
	case *redis.ClusterClient:
		n, err := c.MasterForKey(ctx, keys[0])
		if err != nil {
			return nil, err
		}
		node = n
	}
	run := func(useSHA bool) (any, int64, error) {
		var ev *redis.Cmd
		var wait *redis.Cmd
		_, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
			if useSHA {
				ev = p.EvalSha(ctx, s.Hash(), keys, args...)
			} else {
				ev = p.Eval(ctx, s.src, keys, args...)
			}
			wait = p.Do(ctx, "wait", b.replicas, b.waitFor.Milliseconds())
			return nil
		})
		if err := ev.Err(); err != nil {
			return nil, 0, err
		}
		if err != nil {
			return nil, 0, err
		}
		n, err := wait.Int64()
		if err != nil {
			return nil, 0, err
		}
		return ev.Val(), n, nil
	}
	val, acked, err := run(true)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		val, acked, err = run(false)
	}
	if err != nil {
		return nil, err
	}
	if won(val) && acked < int64(b.replicas) {
		return nil, fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, acked, b.replicas, b.waitFor)
	}
	return val, nil
}

// withdraw takes back a won claim whose WAIT fell short (err wraps
// ErrNotReplicated; other errors are returned as they are), so that the
// store does not keep a claim its caller was told not to run: left in
// place, a later claim with the same token would win it again once a
// replica is back, long after the slot's MaxLate. A first claim is
// deleted, so the slot is absent again (a claim after its MaxLate is then
// answered late); a lease takeover is released, so the next claim is the
// next attempt. The withdrawal is not waited for: if it is lost with the
// primary, the claim it took back is lost with it, or, if a replica had it
// after all, that run's lease runs out and the slot is taken over as for a
// holder that died. When the withdrawal itself fails, the claim stays
// until its lease runs out (lease claims) and the error says so.
func (b *Backend) withdraw(ctx context.Context, job string, slot int64, token string, err error) error {
	if !errors.Is(err, ErrNotReplicated) {
		return err
	}
	k := b.keys(job)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(b.waitFor, time.Second))
	defer cancel()
	if werr := scriptWithdraw.Run(wctx, b.client, []string{k.run, k.hist, k.active},
		slotArg(slot), token, b.channel, job).Err(); werr != nil {
		b.log.LogAttrs(ctx, slog.LevelWarn, "redis: a claim that failed WAIT could not be withdrawn; it stays on the primary",
			slog.String("job", job), slog.Int64("slot", slot), slog.String("error", werr.Error()))
		return fmt.Errorf("%w; withdrawing it failed: %w", err, werr)
	}
	return fmt.Errorf("%w (withdrawn)", err)
}

// won reports whether a script's reply is a success that must be
// replicated: 1 for the plain claim and finish, {1, ...} for the lease
// claim and heartbeat.
func won(v any) bool {
	switch v := v.(type) {
	case int64:
		return v == 1
	case []any:
		if len(v) > 0 {
			n, _ := v[0].(int64)
			return n == int64(anarchon.OutcomeWon)
		}
	}
	return false
}
