package anarchon_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// frozenClock reads one instant: every manual run begins in the same
// millisecond.
type frozenClock struct{ t time.Time }

func (c frozenClock) Now() time.Time { return c.t }

// Manual runs of one instance never share a slot (SPEC §3, "RunNow"):
// runs begun in one millisecond, of one job or of two, and from many
// goroutines at once, each get a slot of their own, 1 ms after the last.
func TestManualRunsOwnSlots(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	s := anarchon.New(membackend.New(&membackend.Options{Now: func() time.Time { return at }}), &anarchon.Options{Logger: quiet, Clock: frozenClock{at}})
	nop := func(context.Context, *anarchon.Run) error { return nil }
	for _, name := range []string{"a", "b"} {
		if err := s.Every(name, time.Hour, nop, nil); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	const n = 40
	slots := make([]time.Time, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			rec, err := s.RunNow(ctx, []string{"a", "b"}[i%2])
			if err != nil {
				errs <- fmt.Errorf("RunNow %d: %w", i, err)
				return
			}
			slots[i] = rec.Slot
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[time.Time]bool{}
	for _, sl := range slots {
		if seen[sl] {
			t.Fatalf("slot %v of two manual runs", sl)
		}
		seen[sl] = true
		// the store's now, as the instance measured its offset to it
		// (a millisecond either way)
		if sl.Before(at.Add(-time.Millisecond)) || !sl.Before(at.Add((n+1)*time.Millisecond)) {
			t.Errorf("slot %v, want one of the %d ms from %v", sl, n, at)
		}
	}
	// The records in history have those slots too.
	for _, name := range []string{"a", "b"} {
		recs, err := s.History(ctx, name, 2*n)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != n/2 {
			t.Fatalf("%s: %d records, want %d", name, len(recs), n/2)
		}
		for _, r := range recs {
			if !seen[r.Slot] {
				t.Errorf("%s: record of slot %v, which no RunNow returned", name, r.Slot)
			}
		}
	}
}
