package anarchontest_test

import (
	"context"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
	"github.com/anarchon/anarchon/membackend"
)

// plainOnly hides every optional interface of the memory store: the suite
// must run its plain-claim and history tests and skip the rest.
type plainOnly struct{ b *membackend.Backend }

func (p plainOnly) Name() string                    { return p.b.Name() }
func (p plainOnly) DedupeWindow() time.Duration     { return p.b.DedupeWindow() }
func (p plainOnly) Init(ctx context.Context) error  { return p.b.Init(ctx) }
func (p plainOnly) Close(ctx context.Context) error { return p.b.Close(ctx) }
func (p plainOnly) PrepareJob(ctx context.Context, in anarchon.PrepareJobInput) error {
	return p.b.PrepareJob(ctx, in)
}
func (p plainOnly) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	return p.b.Claim(ctx, in)
}
func (p plainOnly) RecordManualRun(ctx context.Context, in anarchon.ClaimInput) (int64, error) {
	return p.b.RecordManualRun(ctx, in)
}
func (p plainOnly) SaveResult(ctx context.Context, in anarchon.SaveResultInput) error {
	return p.b.SaveResult(ctx, in)
}
func (p plainOnly) History(ctx context.Context, job string, limit int) ([]anarchon.RunRecord, error) {
	return p.b.History(ctx, job, limit)
}

func TestPlainBackend(t *testing.T) {
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			b := plainOnly{membackend.New(nil)}
			bs := make([]anarchon.Backend, n)
			for i := range bs {
				bs[i] = b
			}
			return bs
		},
		Lease:  50 * time.Millisecond,
		Racers: 4,
		Rounds: 20,
	})
}
