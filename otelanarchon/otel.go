// Package otelanarchon traces and measures an anarchon scheduler with
// OpenTelemetry.
//
// # Spans
//
// Every claim is a span named "claim JOB", and every run a span named "run
// JOB" whose parent is the claim that won it (a RunNow run's parent is the
// span of its record). The handler's context carries the run span, so
// spans the handler starts are its children; the claim's store calls get
// the claim span's context, so an instrumented store client traces under
// it. Attributes:
//
//	anarchon.job           the job's name
//	anarchon.slot          the slot, RFC 3339 with milliseconds, UTC
//	anarchon.instance      the instance that claimed or ran
//	anarchon.attempt       the attempt (claim: the one the answer names)
//	anarchon.fence         run of a lease: its fencing token (Run.Fence), when the store gives one
//	anarchon.outcome       claim: won, lost, running, done, overlap, none, late, manual;
//	                       run: success or error
//	anarchon.lateness_s    claim: store clock at the send minus the slot;
//	                       run: the handler's start minus the slot (seconds)
//	anarchon.leased        claim: a lease claim
//	anarchon.manual        a RunNow run
//
// A failed store call or handler sets the span's status to Error and
// records the error.
//
// # Metrics
//
// The instruments mirror the daemon's Prometheus metrics:
// anarchon.claims{job,outcome}, anarchon.runs{job,status},
// anarchon.slots.skipped{job,status} and anarchon.store.errors{op}
// (counters), anarchon.run.duration{job} and anarchon.slot.lateness{job}
// (histograms, seconds; lateness of won claims), and anarchon.clock.offset
// (gauge, seconds, the store's clock minus the instance's).
//
// # Setup
//
//	tel, err := otelanarchon.New(nil) // the global providers
//	opts := &anarchon.Options{}
//	tel.Install(opts)
//	s := anarchon.New(backend, opts)
package otelanarchon

import (
	"context"
	"time"

	"github.com/anarchon/anarchon"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/anarchon/anarchon/otelanarchon"

// Attribute keys.
const (
	KeyJob      = attribute.Key("anarchon.job")
	KeySlot     = attribute.Key("anarchon.slot")
	KeyInstance = attribute.Key("anarchon.instance")
	KeyAttempt  = attribute.Key("anarchon.attempt")
	KeyFence    = attribute.Key("anarchon.fence")
	KeyOutcome  = attribute.Key("anarchon.outcome")
	KeyLateness = attribute.Key("anarchon.lateness_s")
	KeyLeased   = attribute.Key("anarchon.leased")
	KeyManual   = attribute.Key("anarchon.manual")
)

// Options configure the telemetry. A nil *Options, and each zero field,
// means the default stated on the field.
type Options struct {
	// TracerProvider makes the spans. Defaults to otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments. Defaults to
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
}

// Telemetry is an [anarchon.Tracer] and an event hook for
// [anarchon.Options.OnEvent] that records OpenTelemetry spans and metrics.
// One Telemetry may serve several schedulers.
type Telemetry struct {
	tracer trace.Tracer

	claims    metric.Int64Counter
	runs      metric.Int64Counter
	skipped   metric.Int64Counter
	storeErrs metric.Int64Counter
	duration  metric.Float64Histogram
	lateness  metric.Float64Histogram
	offset    metric.Float64Gauge
}

var _ anarchon.Tracer = (*Telemetry)(nil)

// New creates the tracer and the instruments. It returns the meter's error
// if an instrument cannot be created.
func New(opts *Options) (*Telemetry, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	if o.MeterProvider == nil {
		o.MeterProvider = otel.GetMeterProvider()
	}
	t := &Telemetry{tracer: o.TracerProvider.Tracer(ScopeName)}
	m := o.MeterProvider.Meter(ScopeName)
	var err error
	if t.claims, err = m.Int64Counter("anarchon.claims", metric.WithUnit("{claim}"),
		metric.WithDescription("Claims answered by the store, by job and outcome (won, lost, running, done, overlap, none, late).")); err != nil {
		return nil, err
	}
	if t.runs, err = m.Int64Counter("anarchon.runs", metric.WithUnit("{run}"),
		metric.WithDescription("Runs this instance executed, by job and status.")); err != nil {
		return nil, err
	}
	if t.skipped, err = m.Int64Counter("anarchon.slots.skipped", metric.WithUnit("{slot}"),
		metric.WithDescription("Slots not run, by job and status (missed, skipped, abandoned).")); err != nil {
		return nil, err
	}
	if t.storeErrs, err = m.Int64Counter("anarchon.store.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Failed store calls, by operation (Claim, SaveResult, Heartbeat, …).")); err != nil {
		return nil, err
	}
	if t.duration, err = m.Float64Histogram("anarchon.run.duration", metric.WithUnit("s"),
		metric.WithDescription("How long a job's handler ran.")); err != nil {
		return nil, err
	}
	if t.lateness, err = m.Float64Histogram("anarchon.slot.lateness", metric.WithUnit("s"),
		metric.WithDescription("How late after its slot a run started (its winning claim was answered), by the store's clock.")); err != nil {
		return nil, err
	}
	if t.offset, err = m.Float64Gauge("anarchon.clock.offset", metric.WithUnit("s"),
		metric.WithDescription("The store's clock minus this instance's clock (positive: the store is ahead).")); err != nil {
		return nil, err
	}
	return t, nil
}

// Install sets t as o's Tracer and adds t.OnEvent to o's OnEvent (an
// OnEvent already set is still called, first).
func (t *Telemetry) Install(o *anarchon.Options) {
	o.Tracer = t
	if prev := o.OnEvent; prev != nil {
		o.OnEvent = func(e anarchon.Event) { prev(e); t.OnEvent(e) }
		return
	}
	o.OnEvent = t.OnEvent
}

// OnEvent records a scheduler event in the instruments; set it as (or
// call it from) [anarchon.Options.OnEvent].
func (t *Telemetry) OnEvent(e anarchon.Event) {
	ctx := context.Background()
	job := metric.WithAttributes(KeyJob.String(e.Job))
	switch e.Kind {
	case anarchon.EventClaim:
		t.claims.Add(ctx, 1, metric.WithAttributes(KeyJob.String(e.Job), KeyOutcome.String(e.Outcome)))
		if e.Outcome == "won" {
			t.lateness.Record(ctx, max(e.Lateness, 0).Seconds(), job)
		}
	case anarchon.EventRunEnd:
		t.runs.Add(ctx, 1, metric.WithAttributes(KeyJob.String(e.Job), attribute.String("anarchon.status", string(e.Status))))
		t.duration.Record(ctx, e.Duration.Seconds(), job)
	case anarchon.EventSlotSkipped:
		t.skipped.Add(ctx, 1, metric.WithAttributes(KeyJob.String(e.Job), attribute.String("anarchon.status", string(e.Status))))
	case anarchon.EventStoreError:
		t.storeErrs.Add(ctx, 1, metric.WithAttributes(attribute.String("anarchon.op", e.Op)))
	case anarchon.EventClockOffset:
		t.offset.Record(ctx, e.Offset.Seconds())
	}
}

func slotAttr(slot time.Time) attribute.KeyValue {
	return KeySlot.String(slot.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
}

// StartClaim implements [anarchon.Tracer]: it starts the claim's span.
func (t *Telemetry) StartClaim(ctx context.Context, c anarchon.ClaimStart) (context.Context, anarchon.ClaimSpan) {
	attrs := []attribute.KeyValue{
		KeyJob.String(c.Job), slotAttr(c.Slot), KeyInstance.String(c.InstanceID),
		KeyLeased.Bool(c.Leased), KeyManual.Bool(c.Manual),
	}
	if !c.Manual {
		attrs = append(attrs, KeyLateness.Float64(c.Lateness.Seconds()))
	}
	ctx, span := t.tracer.Start(ctx, "claim "+c.Job, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, &claimSpan{t: t, span: span, start: c}
}

type claimSpan struct {
	t     *Telemetry
	span  trace.Span
	start anarchon.ClaimStart
}

func (c *claimSpan) End(e anarchon.ClaimEnd) {
	if e.Err != nil {
		c.span.RecordError(e.Err)
		c.span.SetStatus(codes.Error, e.Err.Error())
	} else {
		c.span.SetAttributes(KeyOutcome.String(e.Outcome))
	}
	if e.Attempt > 0 {
		c.span.SetAttributes(KeyAttempt.Int(e.Attempt))
	}
	c.span.End()
}

// StartRun starts the run's span as a child of the claim's, in the
// handler's context (which keeps its cancellation).
func (c *claimSpan) StartRun(ctx context.Context, run *anarchon.Run) (context.Context, anarchon.RunSpan) {
	ctx = trace.ContextWithSpan(ctx, c.span)
	ctx, span := c.t.tracer.Start(ctx, "run "+run.Job, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		KeyJob.String(run.Job), slotAttr(run.Slot), KeyInstance.String(run.InstanceID),
		KeyAttempt.Int(run.Attempt), KeyManual.Bool(run.Manual),
	))
	if run.Fence > 0 {
		// An int64 attribute: a store's counter stays far below 2^63.
		span.SetAttributes(KeyFence.Int64(int64(run.Fence)))
	}
	return ctx, runSpan{span}
}

type runSpan struct{ span trace.Span }

func (r runSpan) End(e anarchon.RunEnd) {
	r.span.SetAttributes(KeyOutcome.String(string(e.Status)), KeyLateness.Float64(e.Lateness.Seconds()))
	if e.Err != nil {
		r.span.RecordError(e.Err)
		r.span.SetStatus(codes.Error, e.Err.Error())
	}
	r.span.End()
}
