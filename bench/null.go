package bench

import (
	"context"
	"time"

	"github.com/anarchon/anarchon"
)

// NullBackend is a Backend whose every claim wins and whose writes are
// dropped, with no lock: it isolates the scheduler's own cost from a
// store's. It is not a correct store (every instance wins every claim).
type NullBackend struct{}

// Name returns "null".
func (NullBackend) Name() string { return "null" }

// DedupeWindow returns anarchon.Forever.
func (NullBackend) DedupeWindow() time.Duration { return anarchon.Forever }

// Init returns nil.
func (NullBackend) Init(context.Context) error { return nil }

// PrepareJob returns nil.
func (NullBackend) PrepareJob(context.Context, anarchon.PrepareJobInput) error { return nil }

// Claim returns true.
func (NullBackend) Claim(context.Context, anarchon.ClaimInput) (bool, error) { return true, nil }

// RecordManualRun returns in.Slot.
func (NullBackend) RecordManualRun(_ context.Context, in anarchon.ClaimInput) (int64, error) {
	return in.Slot, nil
}

// SaveResult drops r.
func (NullBackend) SaveResult(context.Context, anarchon.SaveResultInput) error {
	return nil
}

// History returns nothing.
func (NullBackend) History(context.Context, string, int) ([]anarchon.RunRecord, error) {
	return nil, nil
}

// Close returns nil.
func (NullBackend) Close(context.Context) error { return nil }
