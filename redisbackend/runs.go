package redisbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/redis/go-redis/v9"
)

// RunStore is the lease store of a [Backend] (SPEC §6), returned by
// [Backend.Runs]. Each method is one Lua script, judged by the server's
// TIME. It also implements [anarchon.ResultFinisher], [anarchon.Watcher]
// and [anarchon.ServerClock], and the batches [anarchon.RunBatchClaimer],
// [anarchon.HeartbeatBatcher] and [anarchon.FinishBatcher].
type RunStore struct {
	b *Backend
}

// Claim decides a lease claim per the table of SPEC §6, first match wins,
// in one script. Repeating a won claim with the same token answers won
// again and renews the lease. A slot at or below the job's trim watermark
// answers done (status unknown). With Options.Replicas a won claim whose
// WAIT falls short fails with ErrNotReplicated and is withdrawn: a first
// attempt is deleted (the slot is absent again, so a claim past its
// MaxLate is answered late), a takeover released (the next claim is the
// next attempt). So a repeat of the claim is judged as a new claim, never
// won back as the one the caller was told not to run.
//
// c.Lease must be at least 1 ms; c.MaxLate must not be negative;
// c.MaxAttempts <= 0 means 1.
func (s *RunStore) Claim(ctx context.Context, c anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	b := s.b
	if err := checkRunClaim(b, c); err != nil {
		return anarchon.ClaimOutcome{}, err
	}
	if err := b.epoch.check(ctx, b); err != nil {
		return anarchon.ClaimOutcome{}, err
	}
	keys, args := b.leaseClaimArgs(c)
	res, err := b.runWrite(ctx, scriptLeaseClaim, keys, args...)
	if err != nil {
		return anarchon.ClaimOutcome{}, b.wrap(fmt.Sprintf("lease claim %q slot %d", c.Job, c.Slot), b.withdraw(ctx, c.Job, c.Slot, c.Token, err))
	}
	return b.leaseClaimAnswer(c, res)
}

// checkRunClaim refuses a lease claim's bad input before any I/O.
func checkRunClaim(b *Backend, c anarchon.RunClaim) error {
	if err := b.checkRun(c.Job, c.Slot, c.Token); err != nil {
		return err
	}
	if c.Lease < time.Millisecond {
		return fmt.Errorf("%w: job %q: lease %v is below 1ms", ErrInvalidInput, c.Job, c.Lease)
	}
	if c.MaxLate < 0 {
		return fmt.Errorf("%w: job %q: negative MaxLate", ErrInvalidInput, c.Job)
	}
	return nil
}

// leaseClaimArgs are the KEYS and ARGV of scriptLeaseClaim for c.
func (b *Backend) leaseClaimArgs(c anarchon.RunClaim) (keys []string, args []any) {
	overlap := "0"
	if c.AllowOverlap {
		overlap = "1"
	}
	k := b.keys(c.Job)
	size, ttl := historyArgs(c.ClaimInput)
	return append(k.finishKeys(), k.ctl, k.fence), []any{
		slotArg(c.Slot), c.Token, c.InstanceID,
		c.Lease.Milliseconds(), c.MaxLate.Milliseconds(), overlap, max(c.MaxAttempts, 1),
		b.channel, c.Job, anarchon.EarlyTolerance.Milliseconds(), size, ttl, max(c.Limit, 1)}
}

// leaseClaimAnswer is Claim's answer for a reply of scriptLeaseClaim.
func (b *Backend) leaseClaimAnswer(c anarchon.RunClaim, res any) (anarchon.ClaimOutcome, error) {
	arr, ok := res.([]any)
	if !ok || len(arr) < 5 {
		return anarchon.ClaimOutcome{}, b.unexpected("lease claim", res)
	}
	kind, _ := arr[0].(int64)
	att, _ := arr[1].(int64)
	holder, _ := arr[2].(string)
	lu, _ := arr[3].(string)
	status, _ := arr[4].(string)
	if kind == -1 { // never early: lu holds the server's now
		ms, _ := strconv.ParseInt(lu, 10, 64)
		return anarchon.ClaimOutcome{}, &anarchon.EarlyError{Job: c.Job, Slot: c.Slot, StoreNow: ms}
	}
	out := anarchon.ClaimOutcome{Kind: anarchon.OutcomeKind(kind), Attempt: int(att), Holder: holder}
	switch out.Kind {
	case anarchon.OutcomeWon:
		out.LeaseUntil = msTime(lu)
		// A win answers its fence, the job's counter after the script's
		// INCR, as a sixth element.
		var fence int64
		if len(arr) == 6 {
			fence, _ = arr[5].(int64)
		}
		if fence <= 0 {
			return anarchon.ClaimOutcome{}, b.unexpected("lease claim", res)
		}
		out.Fence = uint64(fence)
	case anarchon.OutcomeRunning:
		out.LeaseUntil = msTime(lu)
	case anarchon.OutcomeDone:
		out.Status = anarchon.Status(status)
	case 0:
		return anarchon.ClaimOutcome{}, b.unexpected("lease claim", res)
	}
	return out, nil
}

// Heartbeat extends the lease to server-now + lease if token holds the run
// and it is running (even if the lease ran out while nobody took over).
// false means the lease is lost. With Options.Replicas a renewal fewer
// replicas acknowledged fails with ErrNotReplicated (it stands on the
// primary; the holder must not count on it).
func (s *RunStore) Heartbeat(ctx context.Context, in anarchon.HeartbeatInput) (bool, error) {
	b := s.b
	keys, args, err := b.heartbeatArgs(in)
	if err != nil {
		return false, err
	}
	res, err := b.runWrite(ctx, scriptHeartbeat, keys, args...)
	return b.heartbeatAnswer(in, res, err)
}

// heartbeatArgs refuses a heartbeat's bad input before any I/O, and
// returns the KEYS and ARGV of scriptHeartbeat for it.
func (b *Backend) heartbeatArgs(in anarchon.HeartbeatInput) (keys []string, args []any, err error) {
	if err := b.checkRun(in.Job, in.Slot, in.Token); err != nil {
		return nil, nil, err
	}
	if in.Lease < time.Millisecond {
		return nil, nil, fmt.Errorf("%w: job %q: lease %v is below 1ms", ErrInvalidInput, in.Job, in.Lease)
	}
	return []string{b.keys(in.Job).run}, []any{slotArg(in.Slot), in.Token, in.Lease.Milliseconds()}, nil
}

// heartbeatAnswer is Heartbeat's answer for a reply (or error) of
// scriptHeartbeat.
func (b *Backend) heartbeatAnswer(in anarchon.HeartbeatInput, res any, err error) (bool, error) {
	if err != nil {
		return false, b.wrap(fmt.Sprintf("heartbeat %q slot %d", in.Job, in.Slot), err)
	}
	arr, ok := res.([]any)
	if !ok || len(arr) != 2 {
		return false, b.unexpected("heartbeat", res)
	}
	n, _ := arr[0].(int64)
	return n == 1, nil
}

// Finish marks the run done with status if token holds it (running, or
// released by the same token), and publishes a finished event. Repeating a
// successful Finish answers true again and keeps the first status. false if
// another token holds the slot or it is not claimed. With Options.Replicas
// a finish fewer replicas acknowledged fails with ErrNotReplicated (the
// scheduler repeats it until a replica has it). FinishResult does the same.
func (s *RunStore) Finish(ctx context.Context, in anarchon.FinishInput) (bool, error) {
	job, slot, token, status := in.Job, in.Slot, in.Token, in.Status
	b := s.b
	if err := b.checkRun(job, slot, token); err != nil {
		return false, err
	}
	if status == "" {
		return false, fmt.Errorf("%w: job %q: empty status", ErrInvalidInput, job)
	}
	k := b.keys(job)
	res, err := b.runWrite(ctx, scriptFinish, k.finishKeys(),
		slotArg(slot), token, string(status), b.channel, job)
	return s.flag("finish", job, slot, res, err)
}

// FinishResult is Finish and Backend.SaveResult in one script, one round
// trip ([anarchon.ResultFinisher]): it marks the run (job, r.Slot) done
// with r.Status if r.Token holds it (running, or released by the same
// token) and stores r, trimming history as SaveResult does. If r.Token no
// longer holds the run it stores r with Status StatusLeaseLost and returns
// false. A repeat after a lost reply answers as the first call did.
func (s *RunStore) FinishResult(ctx context.Context, in anarchon.SaveResultInput) (bool, error) {
	b := s.b
	keys, args, err := b.finishResultArgs(in)
	if err != nil {
		return false, err
	}
	res, err := b.runWrite(ctx, scriptFinishResult, keys, args...)
	return s.flag("finish result", in.Job, in.Result.Slot, res, err)
}

// finishResultArgs refuses a FinishResult's bad input before any I/O, and
// returns the KEYS and ARGV of scriptFinishResult for it.
func (b *Backend) finishResultArgs(in anarchon.SaveResultInput) (keys []string, args []any, err error) {
	job, r, historySize, historyTTL := in.Job, in.Result, in.HistorySize, in.HistoryTTL
	if err := b.checkRun(job, r.Slot, r.Token); err != nil {
		return nil, nil, err
	}
	if r.Status == "" {
		return nil, nil, fmt.Errorf("%w: job %q: empty status", ErrInvalidInput, job)
	}
	if historyTTL < 0 {
		return nil, nil, fmt.Errorf("%w: negative history TTL", ErrInvalidInput)
	}
	if historySize <= 0 {
		historySize = anarchon.DefaultHistorySize
	}
	won, err := json.Marshal(encodeResult(r))
	if err != nil {
		return nil, nil, fmt.Errorf("redisbackend: finish result %q: %w", job, err)
	}
	lostR := r
	lostR.Status = anarchon.StatusLeaseLost
	lost, err := json.Marshal(encodeResult(lostR))
	if err != nil {
		return nil, nil, fmt.Errorf("redisbackend: finish result %q: %w", job, err)
	}
	return b.keys(job).finishKeys(), []any{
		slotArg(r.Slot), r.Token, string(r.Status), b.channel, job,
		string(won), string(lost), historySize, historyTTL.Milliseconds()}, nil
}

// Release ends token's running lease at once (state released) so a backup
// takes over, and publishes a released event. Repeating a successful
// Release answers true again. false if token does not hold a running lease.
func (s *RunStore) Release(ctx context.Context, in anarchon.ReleaseInput) (bool, error) {
	job, slot, token := in.Job, in.Slot, in.Token
	b := s.b
	if err := b.checkRun(job, slot, token); err != nil {
		return false, err
	}
	k := b.keys(job)
	res, err := scriptRelease.Run(ctx, b.client, []string{k.run},
		slotArg(slot), token, b.channel, job).Result()
	return s.flag("release", job, slot, res, err)
}

func (s *RunStore) flag(op, job string, slot int64, res any, err error) (bool, error) {
	if err != nil {
		return false, s.b.wrap(fmt.Sprintf("%s %q slot %d", op, job, slot), err)
	}
	n, ok := res.(int64)
	if !ok {
		return false, s.b.unexpected(op, res)
	}
	return n == 1, nil
}

// Active lists the job's unfinished runs (running or released), oldest slot
// first; Live is judged by the server's clock at the time of the read.
func (s *RunStore) Active(ctx context.Context, job string) ([]anarchon.ActiveRun, error) {
	b := s.b
	if err := b.check(); err != nil {
		return nil, err
	}
	if job == "" {
		return nil, fmt.Errorf("%w: empty job name", ErrInvalidInput)
	}
	k := b.keys(job)
	res, err := scriptActive.Run(ctx, b.client, []string{k.run, k.active}).Result()
	if err != nil {
		return nil, b.wrap(fmt.Sprintf("active %q", job), err)
	}
	arr, ok := res.([]any)
	if !ok || len(arr)%2 != 1 {
		return nil, b.unexpected("active", res)
	}
	nowStr, _ := arr[0].(string)
	now, _ := strconv.ParseInt(nowStr, 10, 64)
	var out []anarchon.ActiveRun
	for i := 1; i < len(arr); i += 2 {
		slotStr, _ := arr[i].(string)
		data, _ := arr[i+1].(string)
		var w wireRun
		if err := json.Unmarshal([]byte(data), &w); err != nil {
			return nil, fmt.Errorf("%w: active %q: run record: %w", ErrUnexpectedReply, job, err)
		}
		state := anarchon.RunState(w.State)
		if state != anarchon.RunStateRunning && state != anarchon.RunStateReleased {
			continue
		}
		slot, _ := strconv.ParseInt(slotStr, 10, 64)
		lu, _ := strconv.ParseInt(w.LeaseUntil, 10, 64)
		att, _ := strconv.Atoi(w.Attempt)
		out = append(out, anarchon.ActiveRun{
			Slot:       slot,
			Token:      w.Token,
			InstanceID: w.Instance,
			Attempt:    att,
			State:      state,
			LeaseUntil: time.UnixMilli(lu).UTC(),
			Live:       state == anarchon.RunStateRunning && lu > now,
		})
	}
	return out, nil
}

// Replace implements [anarchon.Replacer] in one script: if in.Token holds
// the running run of (in.Job, in.Slot), every earlier run of the job that
// is running or released is settled done with status replaced (its token
// kept), a replaced result is saved for it unless one is stored (history
// trimmed to in.HistorySize and in.HistoryTTL as by SaveResult), and a
// finished event is published for it. It returns those runs as they were,
// oldest first, and true; nil and false if in.Token does not hold the slot.
func (s *RunStore) Replace(ctx context.Context, in anarchon.ReplaceInput) ([]anarchon.ActiveRun, bool, error) {
	b := s.b
	if err := b.checkRun(in.Job, in.Slot, in.Token); err != nil {
		return nil, false, err
	}
	k := b.keys(in.Job)
	size, ttl := historyArgs(in.ClaimInput)
	res, err := scriptReplace.Run(ctx, b.client, k.finishKeys(),
		slotArg(in.Slot), in.Token, b.channel, in.Job, size, ttl).Result()
	if err != nil {
		return nil, false, b.wrap(fmt.Sprintf("replace %q slot %d", in.Job, in.Slot), err)
	}
	arr, ok := res.([]any)
	if !ok || len(arr) == 0 {
		return nil, false, b.unexpected("replace", res)
	}
	if held, _ := arr[0].(int64); held != 1 {
		return nil, false, nil
	}
	if len(arr)%2 != 0 {
		return nil, false, b.unexpected("replace", res)
	}
	nowStr, _ := arr[1].(string)
	now, _ := strconv.ParseInt(nowStr, 10, 64)
	out := []anarchon.ActiveRun{}
	for i := 2; i < len(arr); i += 2 {
		slotStr, _ := arr[i].(string)
		data, _ := arr[i+1].(string)
		var w wireRun
		if err := json.Unmarshal([]byte(data), &w); err != nil {
			return nil, false, fmt.Errorf("%w: replace %q: run record: %w", ErrUnexpectedReply, in.Job, err)
		}
		state := anarchon.RunState(w.State)
		slot, _ := strconv.ParseInt(slotStr, 10, 64)
		lu, _ := strconv.ParseInt(w.LeaseUntil, 10, 64)
		att, _ := strconv.Atoi(w.Attempt)
		out = append(out, anarchon.ActiveRun{
			Slot: slot, Token: w.Token, InstanceID: w.Instance, Attempt: att, State: state,
			LeaseUntil: time.UnixMilli(lu).UTC(), Live: state == anarchon.RunStateRunning && lu > now,
		})
	}
	return out, true, nil
}

// WatchRuns is [Backend.WatchRuns].
func (s *RunStore) WatchRuns(ctx context.Context) (<-chan anarchon.RunEvent, error) {
	return s.b.WatchRuns(ctx)
}

// ServerTime is [Backend.ServerTime].
func (s *RunStore) ServerTime(ctx context.Context) (time.Time, error) {
	return s.b.ServerTime(ctx)
}

// WatchRuns subscribes to the "<prefix>:runs" pub/sub channel, on which the
// release and finish scripts publish, and delivers an event per message for
// every job (SPEC §6, anarchon.Watcher). It returns once the subscription
// is confirmed. The channel is closed when ctx ends, the backend is closed
// or the subscription breaks (go-redis does not hide a broken connection
// here: the caller polls and watches again). An event published while no
// subscription is open is lost. The channel holds 128 events; while the
// caller is behind, the subscription is not read and Redis keeps the
// messages in the connection's output buffer, up to its
// client-output-buffer-limit for pub/sub (by default 32 MB, or 8 MB for
// 60 s), past which it closes the subscription: the channel closes and
// the caller polls and watches again.
func (b *Backend) WatchRuns(ctx context.Context) (<-chan anarchon.RunEvent, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	ps := b.client.Subscribe(ctx, b.channel)
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, b.wrap("watch runs: subscribe", err)
	}
	b.mu.Lock()
	if b.subs == nil {
		b.mu.Unlock()
		_ = ps.Close()
		return nil, b.check()
	}
	b.subs[ps] = struct{}{}
	b.mu.Unlock()

	out := make(chan anarchon.RunEvent, 128)
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	go func() {
		defer close(out)
		defer func() {
			stop()
			b.mu.Lock()
			delete(b.subs, ps)
			b.mu.Unlock()
			_ = ps.Close()
		}()
		for {
			msg, err := ps.ReceiveMessage(context.WithoutCancel(ctx))
			if err != nil {
				return
			}
			ev, ok := decodeEvent(msg)
			if !ok {
				continue
			}
			// Wait for the caller rather than drop: a backup that misses
			// its slot's event claims again only at the lease's end, so
			// a burst's dropped finishes came back as one claim each.
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func decodeEvent(msg *redis.Message) (anarchon.RunEvent, bool) {
	var w wireEvent
	if err := json.Unmarshal([]byte(msg.Payload), &w); err != nil {
		return anarchon.RunEvent{}, false
	}
	slot, err := strconv.ParseInt(w.Slot, 10, 64)
	if err != nil {
		return anarchon.RunEvent{}, false
	}
	ev := anarchon.RunEvent{Job: w.Job, Slot: slot}
	switch w.Kind {
	case "released":
		ev.Kind = anarchon.RunReleased
	case "finished":
		ev.Kind = anarchon.RunFinished
	case "triggered":
		ev.Kind = anarchon.RunTriggered
	default:
		return anarchon.RunEvent{}, false
	}
	return ev, true
}

func msTime(s string) time.Time {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.UnixMilli(n).UTC()
}
