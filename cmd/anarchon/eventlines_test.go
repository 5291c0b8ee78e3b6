package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// The scheduler's own lines for what the daemon logs itself are dropped
// from the daemon's log (eventLines): a failed attempt that is retried
// logs "run failed" with its retry attribute (TestRunFailedSaysRetry), not
// also the scheduler's "slot to be retried". Run with and without the
// filter, so that the test sees the scheduler log the line it drops.
func TestRetryLoggedOnce(t *testing.T) {
	for _, filtered := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var buf bytes.Buffer
			var h slog.Handler = slog.NewTextHandler(&buf, nil)
			if filtered {
				h = withoutEventLines{h}
			}
			s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: slog.New(h), InstanceID: "a"})
			done := make(chan struct{})
			err := s.Every("j", time.Hour, func(_ context.Context, r *anarchon.Run) error {
				if r.Attempt == 1 {
					return errors.New("first attempt fails")
				}
				close(done)
				return nil
			}, &anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			<-done
			if err := s.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(buf.String(), `msg="slot to be retried"`); got == filtered {
				t.Errorf("filtered %v: \"slot to be retried\" logged %v:\n%s", filtered, got, buf.String())
			}
		})
	}
}
