package anarchon

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// nopStore answers every call at once: claims are won, heartbeats and
// finishes accepted. It isolates the scheduler's own cost per slot.
type nopStore struct{}

func (nopStore) Name() string                                      { return "nop" }
func (nopStore) DedupeWindow() time.Duration                       { return Forever }
func (nopStore) Init(context.Context) error                        { return nil }
func (nopStore) PrepareJob(context.Context, PrepareJobInput) error { return nil }
func (nopStore) Claim(context.Context, ClaimInput) (bool, error)   { return true, nil }
func (nopStore) SaveResult(context.Context, SaveResultInput) error { return nil }
func (nopStore) Close(context.Context) error                       { return nil }
func (nopStore) RecordManualRun(_ context.Context, in ClaimInput) (int64, error) {
	return in.Slot, nil
}
func (nopStore) History(context.Context, string, int) ([]RunRecord, error) { return nil, nil }

type nopLeases struct{ nopStore }

func (nopLeases) Runs() RunStore { return nopRuns{} }

type nopRuns struct{}

func (nopRuns) Claim(context.Context, RunClaim) (ClaimOutcome, error) {
	return ClaimOutcome{Kind: OutcomeWon, Attempt: 1}, nil
}
func (nopRuns) Heartbeat(context.Context, HeartbeatInput) (bool, error) { return true, nil }
func (nopRuns) Finish(context.Context, FinishInput) (bool, error)       { return true, nil }
func (nopRuns) Release(context.Context, ReleaseInput) (bool, error)     { return true, nil }
func (nopRuns) Active(context.Context, string) ([]ActiveRun, error)     { return nil, nil }

// BenchmarkRunPath measures one won slot end to end (claim, handler,
// result) on a store that answers at once: allocations per slot are the
// figure to watch.
func BenchmarkRunPath(b *testing.B) {
	for _, tc := range []struct {
		name string
		be   Backend
	}{{"plain", nopStore{}}, {"leased", nopLeases{}}} {
		b.Run(tc.name, func(b *testing.B) {
			s := New(tc.be, &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err := s.Every("j", time.Hour, func(context.Context, *Run) error { return nil }, nil); err != nil {
				b.Fatal(err)
			}
			if err := s.Start(b.Context()); err != nil {
				b.Fatal(err)
			}
			defer s.Stop(context.Background())
			j := s.jobs["j"]
			slot := time.Now().Truncate(time.Millisecond)
			b.ReportAllocs()
			for b.Loop() {
				s.fire(s.loopCtx, j, slot)
			}
		})
	}
}
