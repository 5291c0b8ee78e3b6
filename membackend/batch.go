package membackend

import (
	"context"

	"github.com/anarchon/anarchon"
)

var (
	_ anarchon.BatchClaimer    = (*Backend)(nil)
	_ anarchon.RunBatchClaimer = (*RunStore)(nil)
)

// ClaimBatch implements [anarchon.BatchClaimer]: it answers each claim of
// in as [Backend.Claim] would, in order, under one hold of the store's
// mutex (one call of the fault hook, named "ClaimBatch"). A claim's bad
// input or early slot is that claim's Err; the others are decided. It
// fails as a whole only after Close (ErrClosed) or when the fault hook
// fails it.
func (b *Backend) ClaimBatch(ctx context.Context, in []anarchon.ClaimInput) ([]anarchon.ClaimAnswer, error) {
	if err := b.op("ClaimBatch"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	out := make([]anarchon.ClaimAnswer, len(in))
	for i := range in {
		out[i].Won, out[i].Err = b.claim(in[i])
	}
	return out, nil
}

// ClaimRuns implements [anarchon.RunBatchClaimer]: it answers each lease
// claim of in as [RunStore.Claim] would, in order, under one hold of the
// store's mutex (one call of the fault hook, named "ClaimRuns"). A
// claim's bad input or early slot is that claim's Err; the others are
// decided. It fails as a whole only after Close (ErrClosed) or when the
// fault hook fails it.
func (s *RunStore) ClaimRuns(ctx context.Context, in []anarchon.RunClaim) ([]anarchon.RunClaimAnswer, error) {
	b := s.b
	if err := b.op("ClaimRuns"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	out := make([]anarchon.RunClaimAnswer, len(in))
	for i := range in {
		out[i].Outcome, out[i].Err = s.claim(in[i])
	}
	return out, nil
}
