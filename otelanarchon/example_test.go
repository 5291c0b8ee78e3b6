package otelanarchon_test

import (
	"context"
	"fmt"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
	"github.com/anarchon/anarchon/otelanarchon"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Trace a scheduler: the handler's context carries the run span, whose
// parent is the span of the claim that won it.
func Example() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tel, err := otelanarchon.New(&otelanarchon.Options{TracerProvider: tp})
	if err != nil {
		panic(err)
	}
	opts := &anarchon.Options{InstanceID: "worker-1"}
	tel.Install(opts)
	s := anarchon.New(membackend.New(nil), opts)
	_ = s.Every("report", time.Hour, func(ctx context.Context, run *anarchon.Run) error {
		fmt.Println("traced:", trace.SpanFromContext(ctx).SpanContext().IsValid())
		return nil
	}, nil)
	if _, err := s.RunNow(context.Background(), "report"); err != nil {
		panic(err)
	}
	for _, span := range rec.Ended() {
		fmt.Println(span.Name())
	}
	// Output:
	// traced: true
	// claim report
	// run report
}
