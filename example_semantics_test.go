package anarchon_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// Two operators backfill the same six hours of an hourly job from two
// instances at once: each slot runs once between them.
func ExampleScheduler_Backfill() {
	ctx := context.Background()
	store := membackend.New(nil)
	to := time.Now().Truncate(time.Hour)
	from := to.Add(-6 * time.Hour)
	report := func(ctx context.Context, run *anarchon.Run) error { return nil }
	results := make(chan anarchon.BackfillResult, 2)
	for _, id := range []string{"ops-1", "ops-2"} {
		s := anarchon.New(store, &anarchon.Options{InstanceID: id, Logger: slog.New(slog.DiscardHandler)})
		if err := s.Every("report", time.Hour, report, nil); err != nil {
			panic(err)
		}
		go func() {
			res, err := s.Backfill(ctx, "report", from, to, &anarchon.BackfillOptions{Concurrency: 2})
			if err != nil {
				panic(err)
			}
			results <- res
		}()
	}
	a, b := <-results, <-results
	fmt.Println("slots:", a.Total, "- run:", a.Ran+b.Ran)

	// A range that is not one is refused with a code.
	s := anarchon.New(store, &anarchon.Options{Logger: slog.New(slog.DiscardHandler)})
	_ = s.Every("report", time.Hour, report, nil)
	_, err := s.Backfill(ctx, "report", to, from, nil)
	var ve *anarchon.ValidationError
	fmt.Println(errors.As(err, &ve), ve.Code)
	// Output:
	// slots: 6 - run: 6
	// true bad_range
}

// A handler whose errors are retried, unless it marks one permanent.
func ExampleRetry() {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: slog.New(slog.DiscardHandler)})
	errBadInput := errors.New("bad input")
	sync := func(ctx context.Context, run *anarchon.Run) error {
		if err := pull(ctx); errors.Is(err, errBadInput) {
			return anarchon.Permanent(err) // retrying cannot help: the slot ends here
		} else if err != nil {
			return err // retried as attempt run.Attempt+1, on whichever instance claims it
		}
		return nil
	}
	err := s.Every("sync", 15*time.Minute, sync, &anarchon.JobOptions{
		Retry: anarchon.Retry{MaxRetries: 3, InitialBackoff: 10 * time.Second, MaxBackoff: time.Minute},
	})
	fmt.Println(err)
	// Output: <nil>
}

func pull(context.Context) error { return nil }

// A one-off job: it runs once across the instances at its time.
func ExampleScheduler_At() {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: slog.New(slog.DiscardHandler)})
	at := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	migrate := func(ctx context.Context, run *anarchon.Run) error { return nil }
	if err := s.At("migrate-2031", at, migrate, nil); err != nil {
		panic(err)
	}
	next, _ := s.NextSlots("migrate-2031", at.Add(-time.Hour), 3)
	fmt.Println(next)
	// Output: [2031-01-01 00:00:00 +0000 UTC]
}

// Two overlap policies that need the store's help: at most three scans
// at once across every instance, and a feed whose new slot stops the run
// still going (its context's cause is ErrReplaced).
func ExampleOverlapPolicy() {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: slog.New(slog.DiscardHandler)})
	scan := func(ctx context.Context, run *anarchon.Run) error { return nil }
	feed := func(ctx context.Context, run *anarchon.Run) error {
		<-ctx.Done() // a long pull, cut short when the next slot comes
		if errors.Is(context.Cause(ctx), anarchon.ErrReplaced) {
			return nil // recorded as replaced
		}
		return ctx.Err()
	}
	fmt.Println(s.Every("scan", time.Minute, scan, &anarchon.JobOptions{Overlap: anarchon.OverlapLimit, OverlapLimit: 3}))
	fmt.Println(s.Every("feed", time.Minute, feed, &anarchon.JobOptions{Overlap: anarchon.OverlapReplace}))

	// A limit below one is refused with a code.
	err := s.Every("bad", time.Minute, scan, &anarchon.JobOptions{Overlap: anarchon.OverlapLimit})
	var ve *anarchon.ValidationError
	fmt.Println(errors.As(err, &ve), ve.Field, ve.Code)
	// Output:
	// <nil>
	// <nil>
	// true OverlapLimit bad_option
}
