package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// The clients' lines are WARNs but for go-redis's report of the Sentinel
// master it found, which every start and failover logs.
func TestClientLoggerLevels(t *testing.T) {
	var buf bytes.Buffer
	clientLog.Store(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { clientLog.Store(nil) })
	l := clientLogger{client: "redis"}
	l.Printf(context.Background(), "sentinel: new master=%q addr=%q", "jobs", "127.0.0.1:6379")
	l.Printf(context.Background(), "sentinel: selected addr=%s masterAddr=%s", "127.0.0.1:26379", "127.0.0.1:6379")
	l.Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts: %v", 5, "connection refused")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[1], "level=INFO") || !strings.Contains(lines[2], "level=WARN") {
		t.Errorf("levels:\n%s\nwant INFO, INFO, WARN", buf.String())
	}
}
