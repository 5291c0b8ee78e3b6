package natsbackend

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestHedgedAnswersFromALaterCopy plays a direct get whose first copy
// went to a frozen replica (no answer until its context ends): hedged
// sends a second copy after its delay and returns that copy's answer,
// then, once it returned, the first copy's context is ended.
func TestHedgedAnswersFromALaterCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var copies atomic.Int32
		frozenEnded := make(chan struct{})
		start := time.Now()
		v, err := hedged(t.Context(), time.Second, func(ctx context.Context) (int, error) {
			if copies.Add(1) == 1 {
				<-ctx.Done()
				close(frozenEnded)
				return 0, ctx.Err()
			}
			return 42, nil
		})
		if v != 42 || err != nil {
			t.Fatalf("hedged = %d, %v; want the second copy's 42, nil", v, err)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("answered after %v, want the hedge delay 1s", took)
		}
		<-frozenEnded // a copy left waiting would leak: synctest fails on it
		if n := copies.Load(); n != 2 {
			t.Errorf("%d copies sent, want 2", n)
		}
	})
}

// TestHedgedBoundsCopies checks that a read nobody answers is sent
// hedgeCopies times, no more, and ends with ctx, with ctx's error.
func TestHedgedBoundsCopies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var copies atomic.Int32
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err := hedged(ctx, time.Second, func(ctx context.Context) (int, error) {
			copies.Add(1)
			<-ctx.Done()
			return 0, ctx.Err()
		})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the deadline's", err)
		}
		if n := copies.Load(); n != hedgeCopies {
			t.Errorf("%d copies sent, want %d", n, hedgeCopies)
		}
	})
}

// TestHedgedFirstAnswer checks that an answer before the delay sends no
// copy, and that an error is an answer like any other.
func TestHedgedFirstAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var copies atomic.Int32
		boom := errors.New("boom")
		_, err := hedged(t.Context(), time.Second, func(ctx context.Context) (int, error) {
			copies.Add(1)
			time.Sleep(999 * time.Millisecond)
			return 0, boom
		})
		if !errors.Is(err, boom) || copies.Load() != 1 {
			t.Errorf("hedged = %v after %d copies; want boom after 1", err, copies.Load())
		}
	})
}
