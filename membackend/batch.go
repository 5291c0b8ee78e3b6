package membackend

import (
	"context"

	"github.com/anarchon/anarchon"
)

var (
	_ anarchon.BatchClaimer       = (*Backend)(nil)
	_ anarchon.RunBatchClaimer    = (*RunStore)(nil)
	_ anarchon.HeartbeatBatcher   = (*RunStore)(nil)
	_ anarchon.ResultBatcher      = (*Backend)(nil)
	_ anarchon.ClaimRecordBatcher = (*Backend)(nil)
	_ anarchon.FinishBatcher      = (*RunStore)(nil)
)

// ClaimBatch implements [anarchon.BatchClaimer]: it answers each claim of
// in as [Backend.Claim] would, in order, under one hold of the store's
// mutex. The fault hook is called once per claim as "Claim" (its error is
// that claim's Err), then once as "ClaimBatch" (its error fails the
// batch). A claim's bad input or early slot is that claim's Err; the
// others are decided. It fails as a whole only after Close (ErrClosed) or
// when the fault hook fails it.
func (b *Backend) ClaimBatch(ctx context.Context, in []anarchon.ClaimInput) ([]anarchon.ClaimAnswer, error) {
	out := make([]anarchon.ClaimAnswer, len(in))
	b.faults("Claim", len(in), func(i int, err error) { out[i].Err = err })
	if err := b.op(ctx, "ClaimBatch"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	for i := range in {
		if out[i].Err == nil {
			out[i].Won, out[i].Err = b.claim(in[i])
		}
	}
	return out, nil
}

// ClaimRuns implements [anarchon.RunBatchClaimer]: it answers each lease
// claim of in as [RunStore.Claim] would, in order, under one hold of the
// store's mutex. The fault hook is called once per claim as "RunClaim"
// (its error is that claim's Err), then once as "ClaimRuns" (its error
// fails the batch). A claim's bad input or early slot is that claim's
// Err; the others are decided. It fails as a whole only after Close
// (ErrClosed) or when the fault hook fails it.
func (s *RunStore) ClaimRuns(ctx context.Context, in []anarchon.RunClaim) ([]anarchon.RunClaimAnswer, error) {
	b := s.b
	out := make([]anarchon.RunClaimAnswer, len(in))
	b.faults("RunClaim", len(in), func(i int, err error) { out[i].Err = err })
	if err := b.op(ctx, "ClaimRuns"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	for i := range in {
		if out[i].Err == nil {
			out[i].Outcome, out[i].Err = s.claim(in[i])
		}
	}
	return out, nil
}

// Heartbeats implements [anarchon.HeartbeatBatcher]: it renews each lease
// of in as [RunStore.Heartbeat] would, in order, under one hold of the
// store's mutex. The fault hook is called once per heartbeat as
// "Heartbeat" (its error is that run's Err), then once as "Heartbeats"
// (its error fails the batch). A non-positive lease is that run's Err.
func (s *RunStore) Heartbeats(ctx context.Context, in []anarchon.HeartbeatInput) ([]anarchon.HeldAnswer, error) {
	b := s.b
	out := make([]anarchon.HeldAnswer, len(in))
	b.faults("Heartbeat", len(in), func(i int, err error) { out[i].Err = err })
	if err := b.op(ctx, "Heartbeats"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	for i := range in {
		if out[i].Err == nil {
			out[i].Held, out[i].Err = b.heartbeat(in[i])
		}
	}
	return out, nil
}

// SaveResults implements [anarchon.ResultBatcher]: it stores each result
// of in as [Backend.SaveResult] would, in order, under one hold of the
// store's mutex. The fault hook is called once per result as
// "SaveResult" (its error is that result's), then once as "SaveResults"
// (its error fails the batch).
func (b *Backend) SaveResults(ctx context.Context, in []anarchon.SaveResultInput) ([]error, error) {
	out := make([]error, len(in))
	b.faults("SaveResult", len(in), func(i int, err error) { out[i] = err })
	if err := b.op(ctx, "SaveResults"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	for i := range in {
		if out[i] == nil {
			out[i] = b.saveResult(in[i])
		}
	}
	return out, nil
}

// RecordClaims implements [anarchon.ClaimRecordBatcher]: it records each
// claim of in as [Backend.RecordClaim] would, in order, under one hold of
// the store's mutex. The fault hook is called once per claim as
// "RecordClaim" (its error is that claim's), then once as "RecordClaims"
// (its error fails the batch).
func (b *Backend) RecordClaims(ctx context.Context, in []anarchon.ClaimInput) ([]error, error) {
	out := make([]error, len(in))
	b.faults("RecordClaim", len(in), func(i int, err error) { out[i] = err })
	if err := b.op(ctx, "RecordClaims"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	for i := range in {
		if out[i] == nil {
			out[i] = b.recordClaim(in[i])
		}
	}
	return out, nil
}

// FinishResults implements [anarchon.FinishBatcher]: it finishes each run
// of in as [RunStore.FinishResult] would, in order, under one hold of the
// store's mutex. The fault hook is called once per run as "FinishResult"
// (its error is that run's Err), then once as "FinishResults" (its error
// fails the batch).
func (s *RunStore) FinishResults(ctx context.Context, in []anarchon.SaveResultInput) ([]anarchon.HeldAnswer, error) {
	b := s.b
	out := make([]anarchon.HeldAnswer, len(in))
	b.faults("FinishResult", len(in), func(i int, err error) { out[i].Err = err })
	if err := b.op(ctx, "FinishResults"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	for i := range in {
		if out[i].Err == nil {
			out[i].Held, out[i].Err = b.finishResult(in[i])
		}
	}
	return out, nil
}

// faults calls the fault hook once per claim of a batch with the single
// call's name, before the lock is taken, and passes each error to set:
// that claim fails as the single call would have, and the rest of the
// batch is decided.
func (b *Backend) faults(op string, n int, set func(i int, err error)) {
	if b.fault == nil {
		return
	}
	for i := range n {
		if err := b.fault(op); err != nil {
			set(i, err)
		}
	}
}
