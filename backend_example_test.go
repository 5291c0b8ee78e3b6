package anarchon_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/anarchon/anarchon"
)

// MapBackend is a whole anarchon backend: claims and history in maps under
// a mutex, shared by the schedulers of one process. It has no leases (no
// RunStore), so its jobs run with plain claims.
type MapBackend struct {
	mu      sync.Mutex
	claimed map[string]string                 // "job/slot" -> winning token; never trimmed, so DedupeWindow is Forever
	claims  map[string][]anarchon.ClaimRecord // per job, as BuildHistory reads them
	results map[string][]savedResult          // per job, in the order saved
	closed  bool
}

type savedResult struct {
	anarchon.StoredResult
	saved time.Time
}

var _ anarchon.Backend = (*MapBackend)(nil)

func NewMapBackend() *MapBackend {
	return &MapBackend{claimed: map[string]string{}, claims: map[string][]anarchon.ClaimRecord{}, results: map[string][]savedResult{}}
}

func (b *MapBackend) Name() string                                               { return "map" }
func (b *MapBackend) DedupeWindow() time.Duration                                { return anarchon.Forever }
func (b *MapBackend) Init(context.Context) error                                 { return b.check() }
func (b *MapBackend) PrepareJob(context.Context, anarchon.PrepareJobInput) error { return b.check() }

// check reports ErrClosed after Close; b.mu may be held or not.
func (b *MapBackend) check() error {
	if b.closed {
		return fmt.Errorf("map backend: %w", anarchon.ErrClosed)
	}
	return nil
}

// Claim is the one atomic step: under the mutex, the first token for a slot
// wins, and only that token wins again (repeat safety).
func (b *MapBackend) Claim(_ context.Context, in anarchon.ClaimInput) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.check(); err != nil {
		return false, err
	}
	key := fmt.Sprintf("%s/%d", in.Job, in.Slot)
	if tok, ok := b.claimed[key]; ok {
		return tok == in.Token, nil
	}
	// Never early (SPEC §4): this store's clock is the machine's.
	if now := time.Now().UnixMilli(); anarchon.TooEarly(in.Slot, now) {
		return false, &anarchon.EarlyError{Job: in.Job, Slot: in.Slot, StoreNow: now}
	}
	b.claimed[key] = in.Token
	b.claims[in.Job] = append(b.claims[in.Job], anarchon.ClaimRecord{Slot: in.Slot, Token: in.Token, InstanceID: in.InstanceID, ClaimedAt: time.Now()})
	return true, nil
}

func (b *MapBackend) RecordManualRun(_ context.Context, in anarchon.ClaimInput) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.check(); err != nil {
		return 0, err
	}
	b.claims[in.Job] = append(b.claims[in.Job], anarchon.ClaimRecord{Slot: in.Slot, Token: in.Token, InstanceID: in.InstanceID, ClaimedAt: time.Now(), Manual: true})
	return in.Slot, nil
}

// SaveResult stores the result, then trims the job's history: one record
// is a claim and the result of the same token, or either alone.
func (b *MapBackend) SaveResult(_ context.Context, in anarchon.SaveResultInput) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.check(); err != nil {
		return err
	}
	now := time.Now()
	b.results[in.Job] = append(b.results[in.Job], savedResult{in.Result, now})
	size := in.HistorySize
	if size <= 0 {
		size = anarchon.DefaultHistorySize
	}
	keep := map[string]bool{}
	for _, r := range b.history(in.Job, size) {
		keep[r.Token] = true
	}
	for _, r := range b.results[in.Job] {
		if in.HistoryTTL > 0 && now.Sub(r.saved) >= in.HistoryTTL {
			keep[r.Token] = false
		}
	}
	b.claims[in.Job] = slices.DeleteFunc(b.claims[in.Job], func(c anarchon.ClaimRecord) bool { return !keep[c.Token] })
	b.results[in.Job] = slices.DeleteFunc(b.results[in.Job], func(r savedResult) bool { return !keep[r.Token] })
	return nil
}

func (b *MapBackend) History(_ context.Context, job string, limit int) ([]anarchon.RunRecord, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.check(); err != nil {
		return nil, err
	}
	return b.history(job, limit), nil
}

func (b *MapBackend) history(job string, limit int) []anarchon.RunRecord {
	results := make([]anarchon.StoredResult, len(b.results[job]))
	for i, r := range b.results[job] {
		results[i] = r.StoredResult
	}
	return anarchon.BuildHistory(job, b.claims[job], results, limit)
}

func (b *MapBackend) Close(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// A backend needs Claim (one atomic step, repeat-safe) and History (built
// with BuildHistory); MapBackend above is a complete one in about a
// hundred lines, checked by anarchontest.Run.
func Example_writeABackend() {
	ctx := context.Background()
	s := anarchon.New(NewMapBackend(), &anarchon.Options{InstanceID: "web-1", Logger: slog.New(slog.DiscardHandler)})
	hello := func(ctx context.Context, run *anarchon.Run) error { return nil }
	if err := s.Every("hello", time.Hour, hello, nil); err != nil {
		panic(err)
	}
	rec, err := s.RunNow(ctx, "hello")
	if err != nil {
		panic(err)
	}
	history, _ := s.History(ctx, "hello", 0)
	fmt.Println(rec.Status, len(history), history[0].Status, history[0].Manual)
	// Output: success 1 success true
}
