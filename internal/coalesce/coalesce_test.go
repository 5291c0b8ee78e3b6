package coalesce

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Calls within the window go as one batch, each gets its own answer, and
// a call after the window starts the next batch.
func TestBatchesWithinWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sizes []int
		b := &Batcher[int, int]{Window: 2 * time.Millisecond, Max: 100,
			Send: func(_ context.Context, in []int) ([]int, error) {
				mu.Lock()
				sizes = append(sizes, len(in))
				mu.Unlock()
				out := make([]int, len(in))
				for i, v := range in {
					out[i] = v * 10
				}
				return out, nil
			}}
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				if out, err := b.Do(t.Context(), i); err != nil || out != i*10 {
					t.Errorf("Do(%d) = %d, %v", i, out, err)
				}
			})
		}
		wg.Wait()
		time.Sleep(time.Second)
		if out, err := b.Do(t.Context(), 7); err != nil || out != 70 {
			t.Errorf("Do(7) = %d, %v", out, err)
		}
		if len(sizes) != 2 || sizes[0] != 50 || sizes[1] != 1 {
			t.Errorf("batch sizes %v, want [50 1]", sizes)
		}
	})
}

// A full batch goes without waiting for the window, and the batch call's
// context has the earliest deadline of its callers.
func TestMaxAndDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var deadlines []time.Duration
		var sent []time.Duration
		b := &Batcher[int, bool]{Window: time.Hour, Max: 3,
			Send: func(ctx context.Context, in []int) ([]bool, error) {
				d, _ := ctx.Deadline()
				deadlines = append(deadlines, d.Sub(start))
				sent = append(sent, time.Since(start))
				return make([]bool, len(in)), nil
			}}
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration(i+1)*time.Second)
				defer cancel()
				if _, err := b.Do(ctx, i); err != nil {
					t.Errorf("Do: %v", err)
				}
			})
		}
		wg.Wait()
		if len(sent) != 1 || sent[0] != 0 || deadlines[0] != time.Second {
			t.Errorf("sent at %v with deadline %v; want at once, deadline 1s", sent, deadlines)
		}
	})
}

// A batch error reaches every caller; a wrong count is an error; a caller
// whose context ends returns at once and is left out of the batch.
func TestErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		var got [][]int
		answer := func(in []int) ([]int, error) { return nil, boom }
		b := &Batcher[int, int]{Window: time.Millisecond, Max: 10,
			Send: func(_ context.Context, in []int) ([]int, error) {
				got = append(got, in)
				return answer(in)
			}}
		if _, err := b.Do(t.Context(), 1); !errors.Is(err, boom) {
			t.Errorf("batch error: %v", err)
		}
		answer = func(in []int) ([]int, error) { return []int{1, 2, 3}, nil }
		var ce *CountError
		if _, err := b.Do(t.Context(), 1); !errors.As(err, &ce) || ce.Sent != 1 || ce.Answered != 3 {
			t.Errorf("count error: %v", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := b.Do(ctx, 99); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled caller: %v", err)
		}
		time.Sleep(time.Second)
		for _, in := range got {
			for _, v := range in {
				if v == 99 {
					t.Errorf("a cancelled call was sent: %v", got)
				}
			}
		}
	})
}
