package otelanarchon_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
	"github.com/anarchon/anarchon/otelanarchon"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// Three schedulers on one memory store, each with the telemetry: the
// in-memory span recorder sees one run span per run, with the job, slot,
// attempt, instance, outcome and lateness, parented under a claim span
// whose outcome is won; the handler's context carries the run span; the
// instruments count the claims and runs.
func TestThreeSchedulersSpans(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts anarchon.JobOptions
	}{
		{"plain", anarchon.JobOptions{NoLease: true}},
		{"leased", anarchon.JobOptions{Lease: 3 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sr := tracetest.NewSpanRecorder()
				tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
				reader := sdkmetric.NewManualReader()
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
				tel, err := otelanarchon.New(&otelanarchon.Options{TracerProvider: tp, MeterProvider: mp})
				if err != nil {
					t.Fatal(err)
				}
				b := membackend.New(nil)
				var mu sync.Mutex
				handlerSpans := map[trace.SpanID]int{}
				var ss []*anarchon.Scheduler
				for i := range 3 {
					o := &anarchon.Options{InstanceID: fmt.Sprintf("inst-%d", i), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
					tel.Install(o)
					s := anarchon.New(b, o)
					opts := tc.opts
					err := s.Every("tick", time.Second, func(ctx context.Context, run *anarchon.Run) error {
						mu.Lock()
						handlerSpans[trace.SpanContextFromContext(ctx).SpanID()]++
						mu.Unlock()
						if run.Slot.Unix()%4 == 0 {
							return fmt.Errorf("slot %d fails", run.Slot.Unix())
						}
						return nil
					}, &opts)
					if err != nil {
						t.Fatal(err)
					}
					if err := s.Start(context.Background()); err != nil {
						t.Fatal(err)
					}
					ss = append(ss, s)
				}
				time.Sleep(12 * time.Second)
				for _, s := range ss {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					if err := s.Stop(ctx); err != nil {
						t.Error(err)
					}
					cancel()
				}
				synctest.Wait()

				spans := sr.Ended()
				byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
				for _, s := range spans {
					byID[s.SpanContext().SpanID()] = s
				}
				hist, err := ss[0].History(context.Background(), "tick", 0)
				if err != nil {
					t.Fatal(err)
				}
				runs := map[string]int{} // slot → run spans
				claims := 0
				for _, s := range spans {
					a := attrs(s)
					switch s.Name() {
					case "claim tick":
						claims++
						if a[otelanarchon.KeyInstance].AsString() == "" || a[otelanarchon.KeySlot].AsString() == "" {
							t.Errorf("claim span without instance or slot: %v", a)
						}
						continue
					case "run tick":
					default:
						t.Errorf("unexpected span %q", s.Name())
						continue
					}
					slot := a[otelanarchon.KeySlot].AsString()
					runs[slot]++
					parent, ok := byID[s.Parent().SpanID()]
					if !ok || parent.Name() != "claim tick" || s.Parent().TraceID() != s.SpanContext().TraceID() {
						t.Errorf("run span of %s has parent %v, want its claim span", slot, s.Parent().SpanID())
						continue
					}
					pa := attrs(parent)
					if pa[otelanarchon.KeyOutcome].AsString() != "won" || pa[otelanarchon.KeySlot].AsString() != slot ||
						pa[otelanarchon.KeyInstance] != a[otelanarchon.KeyInstance] {
						t.Errorf("run span %v under claim span %v", a, pa)
					}
					if handlerSpans[s.SpanContext().SpanID()] != 1 {
						t.Errorf("run span of %s: the handler's context carried it %d times, want 1", slot, handlerSpans[s.SpanContext().SpanID()])
					}
					if a[otelanarchon.KeyAttempt].AsInt64() != 1 || a[otelanarchon.KeyLateness].Type() != attribute.FLOAT64 ||
						a[otelanarchon.KeyLateness].AsFloat64() < 0 || a[otelanarchon.KeyJob].AsString() != "tick" {
						t.Errorf("run span attributes %v", a)
					}
					slotT, _ := time.Parse(time.RFC3339Nano, slot)
					want := "success"
					if slotT.Unix()%4 == 0 {
						want = "error"
					}
					if got := a[otelanarchon.KeyOutcome].AsString(); got != want {
						t.Errorf("run span of %s: outcome %s, want %s", slot, got, want)
					}
					if (want == "error") != (s.Status().Code == codes.Error) {
						t.Errorf("run span of %s: status %v", slot, s.Status())
					}
				}
				if len(runs) < 10 || len(runs) != len(hist) {
					t.Errorf("%d slots have run spans, history has %d runs; want the same, at least 10", len(runs), len(hist))
				}
				for slot, n := range runs {
					if n != 1 {
						t.Errorf("slot %s: %d run spans", slot, n)
					}
				}
				if claims < 3*len(runs)-3 {
					t.Errorf("%d claim spans for %d slots on 3 instances", claims, len(runs))
				}

				var rm metricdata.ResourceMetrics
				if err := reader.Collect(context.Background(), &rm); err != nil {
					t.Fatal(err)
				}
				sums := map[string]int64{}
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						if d, ok := m.Data.(metricdata.Sum[int64]); ok {
							for _, p := range d.DataPoints {
								if st, ok := p.Attributes.Value("anarchon.status"); ok {
									sums[m.Name+"/"+st.AsString()] += p.Value
								} else if oc, ok := p.Attributes.Value(otelanarchon.KeyOutcome); ok {
									sums[m.Name+"/"+oc.AsString()] += p.Value
								}
							}
						}
					}
				}
				if got := sums["anarchon.runs/success"] + sums["anarchon.runs/error"]; got != int64(len(runs)) {
					t.Errorf("anarchon.runs counted %d, want %d (%v)", got, len(runs), sums)
				}
				if got := sums["anarchon.claims/won"]; got != int64(len(runs)) {
					t.Errorf("anarchon.claims{won} counted %d, want %d", got, len(runs))
				}
			})
		})
	}
}

// RunNow's run span is parented under the span of its record, outcome
// manual.
func TestRunNowSpan(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tel, err := otelanarchon.New(&otelanarchon.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))})
	if err != nil {
		t.Fatal(err)
	}
	o := &anarchon.Options{InstanceID: "solo"}
	tel.Install(o)
	s := anarchon.New(membackend.New(nil), o)
	if err := s.Every("tick", time.Hour, func(context.Context, *anarchon.Run) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunNow(context.Background(), "tick"); err != nil {
		t.Fatal(err)
	}
	spans := sr.Ended()
	// The claim's span ends when the run is recorded, before the run.
	if len(spans) != 2 || spans[0].Name() != "claim tick" || spans[1].Name() != "run tick" {
		t.Fatalf("%d spans, want the claim and its run", len(spans))
	}
	claim, run := spans[0], spans[1]
	if run.Parent().SpanID() != claim.SpanContext().SpanID() {
		t.Errorf("run span not under the claim span")
	}
	if a := attrs(claim); a[otelanarchon.KeyOutcome].AsString() != "manual" || !a[otelanarchon.KeyManual].AsBool() {
		t.Errorf("claim attributes %v", a)
	}
	if a := attrs(run); a[otelanarchon.KeyOutcome].AsString() != "success" || a[otelanarchon.KeyInstance].AsString() != "solo" {
		t.Errorf("run attributes %v", a)
	}
}

// Each kind of event reaches its instrument: claims, runs, skipped slots,
// store errors, run duration, lateness and clock offset, with the values
// of the events.
func TestEventInstruments(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	tel, err := otelanarchon.New(&otelanarchon.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []anarchon.Event{
		{Kind: anarchon.EventClaim, Job: "j", Outcome: "won", Lateness: 250 * time.Millisecond},
		{Kind: anarchon.EventClaim, Job: "j", Outcome: "lost"},
		{Kind: anarchon.EventRunEnd, Job: "j", Status: anarchon.StatusSuccess, Duration: 2 * time.Second},
		{Kind: anarchon.EventSlotSkipped, Job: "j", Status: anarchon.StatusMissed},
		{Kind: anarchon.EventStoreError, Op: "Claim"},
		{Kind: anarchon.EventClockOffset, Offset: -3 * time.Second},
	} {
		tel.OnEvent(e)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[m.Name] += float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[m.Name] += p.Sum
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					got[m.Name] = p.Value
				}
			}
		}
	}
	want := map[string]float64{"anarchon.claims": 2, "anarchon.runs": 1, "anarchon.slots.skipped": 1, "anarchon.store.errors": 1,
		"anarchon.run.duration": 2, "anarchon.slot.lateness": 0.25, "anarchon.clock.offset": -3}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s = %v, want %v (all: %v)", name, got[name], w, got)
		}
	}
}
