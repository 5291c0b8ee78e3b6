package redisbackend

import (
	"context"

	"github.com/anarchon/anarchon"
)

var (
	_ anarchon.HeartbeatBatcher = (*RunStore)(nil)
	_ anarchon.ResultBatcher    = (*Backend)(nil)
	_ anarchon.FinishBatcher    = (*RunStore)(nil)
)

// Heartbeats renews many leases (anarchon.HeartbeatBatcher) with the
// script of [RunStore.Heartbeat], in its batch form, one EVALSHA for up
// to 512 runs (per cluster slot), in one pipeline: one round trip for the batch (one more after NOSCRIPT; per
// master on a cluster). With Options.Replicas each master's pipeline ends
// with one WAIT, which covers every renewal in it: a renewal fewer
// replicas acknowledged fails with ErrNotReplicated, as a single
// Heartbeat's does. Each answer is the one Heartbeat gives for that
// input; a run's bad input (an empty job or token, a lease below 1 ms)
// or error reply is its own answer's Err. The error is non-nil only when
// no run got an answer (the connection failed, the context ended, the
// backend is closed).
func (s *RunStore) Heartbeats(ctx context.Context, in []anarchon.HeartbeatInput) ([]anarchon.HeldAnswer, error) {
	b := s.b
	if err := b.check(); err != nil {
		return nil, err
	}
	calls, errs, err := b.evalBatch(ctx, len(in), scriptHeartbeat, true, func(i int) ([]string, []any, error) {
		return b.heartbeatArgs(in[i])
	})
	if err != nil {
		return nil, b.wrap("heartbeat batch", err)
	}
	out := make([]anarchon.HeldAnswer, len(in))
	for i, c := range calls {
		if c == nil {
			out[i].Err = errs[i]
			continue
		}
		out[i].Held, out[i].Err = b.heartbeatAnswer(in[i], c.res, c.err)
	}
	return out, nil
}

// SaveResults stores many results (anarchon.ResultBatcher) with the
// script of [Backend.SaveResult], in its batch form, one EVALSHA for up
// to 512 results (per cluster slot), in one pipeline: one round trip for the batch (one more after NOSCRIPT;
// per node on a cluster). Like SaveResult it waits for no replica. Each
// error is the one SaveResult gives for that input (a bad input, an
// error reply); the error is non-nil only when no result got an answer
// (the connection failed, the context ended, the backend is closed).
func (b *Backend) SaveResults(ctx context.Context, in []anarchon.SaveResultInput) ([]error, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	calls, errs, err := b.evalBatch(ctx, len(in), scriptSave, false, func(i int) ([]string, []any, error) {
		return b.saveArgs(in[i])
	})
	if err != nil {
		return nil, b.wrap("save result batch", err)
	}
	for i, c := range calls {
		if c != nil {
			errs[i] = b.saveAnswer(in[i], c.err)
		}
	}
	return errs, nil
}

// FinishResults finishes many leased runs with their results
// (anarchon.FinishBatcher) with the script of [RunStore.FinishResult],
// in its batch form, one EVALSHA for up to 512 runs (per cluster slot),
// in one pipeline: one round trip for the batch (one more after NOSCRIPT; per master on a cluster). With
// Options.Replicas each master's pipeline ends with one WAIT, which
// covers every finish in it: a finish fewer replicas acknowledged fails
// with ErrNotReplicated, as a single FinishResult's does (it is safe to
// repeat). Each answer is the one FinishResult gives for that input; the
// error is non-nil only when no run got an answer.
func (s *RunStore) FinishResults(ctx context.Context, in []anarchon.SaveResultInput) ([]anarchon.HeldAnswer, error) {
	b := s.b
	if err := b.check(); err != nil {
		return nil, err
	}
	calls, errs, err := b.evalBatch(ctx, len(in), scriptFinishResult, true, func(i int) ([]string, []any, error) {
		return b.finishResultArgs(in[i])
	})
	if err != nil {
		return nil, b.wrap("finish result batch", err)
	}
	out := make([]anarchon.HeldAnswer, len(in))
	for i, c := range calls {
		if c == nil {
			out[i].Err = errs[i]
			continue
		}
		out[i].Held, out[i].Err = s.flag("finish result", in[i].Job, in[i].Result.Slot, c.res, c.err)
	}
	return out, nil
}

// evalBatch builds one call of s for each of n entries, from args(i),
// and runs them, packed into batch scripts (batched), in one pipeline: with wait, as runCalls runs claims (a
// WAIT per master with Options.Replicas, as runWrite adds to one call);
// without, as Script.Run runs one call. calls[i] is entry i's call with
// its reply, or nil when args refused the entry with errs[i]. err is
// non-nil when every call failed without a reply (allFailed): then no
// entry has an answer.
func (b *Backend) evalBatch(ctx context.Context, n int, s *script, wait bool, args func(i int) ([]string, []any, error)) (calls []*evalCall, errs []error, err error) {
	calls, errs = make([]*evalCall, n), make([]error, n)
	run := make([]*evalCall, 0, n)
	for i := range n {
		keys, a, err := args(i)
		if err != nil {
			errs[i] = err
			continue
		}
		calls[i] = &evalCall{s: s, keys: keys, args: a}
		run = append(run, calls[i])
	}
	if len(run) == 0 {
		return calls, errs, nil
	}
	if wait {
		b.runCalls(ctx, run)
	} else {
		b.pipeline(ctx, b.client, b.batched(run), false)
	}
	return calls, errs, allFailed(run)
}
