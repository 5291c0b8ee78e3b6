package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchonui"
	"github.com/anarchon/anarchon/otelanarchon"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// mountUI serves the dashboard (anarchonui) at /ui/ and redirects / to it.
// Its credentials are cfg's (httpConfigFrom): the token, which opens
// /status and /metrics too, or a user and password. They are not needed
// when --http listens on loopback only, and required on any other address:
// without any, the dashboard answers 403 with lockedMessage.
// ANARCHON_UI_READONLY=1 hides the actions.
func mountUI(mux *http.ServeMux, d *daemon, addr string, cfg httpConfig) {
	if cfg.locked && cfg.password == "" {
		locked := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { refuseLocked(w) })
		mux.Handle("/ui/", locked)
		mux.Handle("GET /{$}", locked)
		return
	}
	auth := anarchonui.Auth{Token: cfg.token, User: cfg.user, Password: cfg.password, Required: !anarchonui.IsLoopback(addr)}
	h := anarchonui.Handler(d.sched, &anarchonui.Options{
		BasePath: "/ui/",
		Auth:     auth,
		Store:    d.store,
		Secrets:  pageSecrets(d.rawStore),
		ReadOnly: os.Getenv("ANARCHON_UI_READONLY") == "1",
		Logger:   d.log,
	})
	mux.Handle("/ui/", http.StripPrefix("/ui", h))
	mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusFound))
}

// pageSecrets are the store URL's credentials the dashboard removes from
// its pages (a store error, a run's error or output may repeat them): the
// redactor's secrets of minBare characters or more. Options.Store gets the
// URL redacted already, so the dashboard could not find them there; and it
// replaces a secret wherever it appears, which would mangle the pages
// with a shorter one.
func pageSecrets(rawStore string) []string {
	var out []string
	for _, s := range secrets(rawStore) {
		if len(s) >= minBare {
			out = append(out, s)
		}
	}
	return out
}

// otelShutdown flushes the spans of the OTLP exporter, when there is one.
var otelShutdown = func() {}

// otelTracer returns a tracer that exports spans over OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set, configured by the standard OTEL_* variables, and nil otherwise.
// The gRPC protocol is not built in: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is
// reported and tracing stays off.
func otelTracer(log *slog.Logger, instance string) anarchon.Tracer {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil
	}
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		log.Error("OTLP tracing off: only OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf is built in", slog.String("protocol", proto))
		return nil
	}
	exp, err := otlptracehttp.New(context.Background())
	if err != nil {
		log.Error("OTLP tracing off", slog.Any("error", err))
		return nil
	}
	res, _ := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(strings.TrimSpace(envOr("OTEL_SERVICE_NAME", "anarchon"))),
		semconv.ServiceVersion(version()),
		semconv.ServiceInstanceID(instance),
	))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	tel, err := otelanarchon.New(&otelanarchon.Options{TracerProvider: tp})
	if err != nil {
		log.Error("OTLP tracing off", slog.Any("error", err))
		return nil
	}
	otelShutdown = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			log.Warn("OTLP: spans not flushed", slog.Any("error", err))
		}
	}
	log.Info("OTLP tracing on")
	return tel
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
