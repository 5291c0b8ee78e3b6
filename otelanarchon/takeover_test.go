package otelanarchon_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
	"github.com/anarchon/anarchon/otelanarchon"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// lossy is the shared memory store as one instance sees it when its
// heartbeats never land: its lease runs out while it runs.
type lossy struct{ *membackend.Backend }

func (l lossy) Runs() anarchon.RunStore  { return lossyRuns{l.Backend.Runs()} }
func (l lossy) Unwrap() anarchon.Backend { return l.Backend }

type lossyRuns struct{ anarchon.RunStore }

func (lossyRuns) Heartbeat(context.Context, anarchon.HeartbeatInput) (bool, error) { return false, nil }

// A takeover is traced as two runs of one slot: attempt 1 on the instance
// that lost its lease, attempt 2 under the won claim (attempt 2) of the
// backup that took the slot over.
func TestTakeoverSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sr := tracetest.NewSpanRecorder()
		tel, err := otelanarchon.New(&otelanarchon.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))})
		if err != nil {
			t.Fatal(err)
		}
		store := membackend.New(nil)
		start := func(id string, b anarchon.Backend) *anarchon.Scheduler {
			o := &anarchon.Options{InstanceID: id, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: 100 * time.Millisecond}
			tel.Install(o)
			s := anarchon.New(b, o)
			err := s.Every("job", time.Minute, func(ctx context.Context, run *anarchon.Run) error {
				if run.InstanceID == "holder" {
					<-ctx.Done() // runs until its lease is lost
					return context.Cause(ctx)
				}
				return nil
			}, &anarchon.JobOptions{Lease: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			return s
		}
		holder := start("holder", lossy{store})
		slot := time.Now().Truncate(time.Minute).Add(time.Minute)
		time.Sleep(time.Until(slot) + 500*time.Millisecond) // the holder has claimed the slot alone
		backups := []*anarchon.Scheduler{start("backup-1", store), start("backup-2", store)}
		time.Sleep(20 * time.Second)
		for _, s := range append(backups, holder) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = s.Stop(ctx)
			cancel()
		}
		synctest.Wait()

		byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
		for _, s := range sr.Ended() {
			byID[s.SpanContext().SpanID()] = s
		}
		want := slot.UTC().Format("2006-01-02T15:04:05.000Z07:00")
		var runs []string
		var fences []int64
		for _, s := range sr.Ended() {
			a := attrs(s)
			if s.Name() != "run job" || a[otelanarchon.KeySlot].AsString() != want {
				continue
			}
			fences = append(fences, a[otelanarchon.KeyFence].AsInt64())
			c := attrs(byID[s.Parent().SpanID()])
			runs = append(runs, fmt.Sprintf("attempt %d on %s: %s, under claim %s attempt %d by %s",
				a[otelanarchon.KeyAttempt].AsInt64(), a[otelanarchon.KeyInstance].AsString(), a[otelanarchon.KeyOutcome].AsString(),
				c[otelanarchon.KeyOutcome].AsString(), c[otelanarchon.KeyAttempt].AsInt64(), c[otelanarchon.KeyInstance].AsString()))
		}
		if len(runs) != 2 {
			t.Fatalf("runs of slot %s: %q, want the holder's and one backup's", want, runs)
		}
		if fences[0] <= 0 || fences[1] <= fences[0] {
			t.Errorf("fences of the two runs %v, want the backup's above the holder's", fences)
		}
		if runs[0] != "attempt 1 on holder: error, under claim won attempt 1 by holder" {
			t.Errorf("first run: %s", runs[0])
		}
		if r := runs[1]; r != "attempt 2 on backup-1: success, under claim won attempt 2 by backup-1" &&
			r != "attempt 2 on backup-2: success, under claim won attempt 2 by backup-2" {
			t.Errorf("second run: %s", r)
		}
	})
}
