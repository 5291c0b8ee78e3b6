package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
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

// With --start-timeout 0 and a Redis that refuses connections, the
// daemon's own error is the one line: go-redis's "failed to dial" lines,
// which say the same, are logged at DEBUG.
func TestStartFailureWithoutClientWarnings(t *testing.T) {
	ct := writeFile(t, t.TempDir(), "jobs.cron", "# name: a\n@daily echo hi\n")
	code, _, errOut := cli(t, "run", "--store", "redis://127.0.0.1:1/0", "--crontab", ct, "--start-timeout", "0")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "anarchon: store URL \"redis://127.0.0.1:1/0\": start: ") ||
		!strings.Contains(lines[0], "connection refused") || !strings.HasSuffix(lines[0], "(open_failed)") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and the daemon's error alone", code, errOut)
	}
	// history and status read the store: theirs is the same error.
	for _, cmd := range [][]string{{"history", "a"}, {"status"}} {
		code, _, errOut := cli(t, append(cmd, "--store", "redis://127.0.0.1:1/0")...)
		if lines := strings.Split(strings.TrimSpace(errOut), "\n"); code != 1 || len(lines) != 1 || !strings.HasSuffix(lines[0], "connection refused (open_failed)") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 1 and the error alone", cmd[0], code, errOut)
		}
	}
	code, _, errOut = cli(t, "run", "--store", "redis://127.0.0.1:1/0", "--crontab", ct, "--start-timeout", "0", "--log-level", "debug")
	if code != 1 || !strings.Contains(errOut, `level=DEBUG msg="redis: connection pool: failed to dial`) || strings.Contains(errOut, "level=WARN") {
		t.Errorf("--log-level debug: exit %d, stderr:\n%s\nwant the client's lines at DEBUG", code, errOut)
	}
}

// Client lines held during a start are logged as they came (WARN) when
// the start succeeds, at DEBUG when it fails (its error says the same);
// after the start they are logged at once.
func TestClientLinesHeldDuringStart(t *testing.T) {
	var buf bytes.Buffer
	clientLog.Store(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { clientLog.Store(nil); clientLines.release() })
	l := clientLogger{client: "redis"}
	dial := "redis: connection pool: failed to dial after %d attempts: %v"

	clientLines.hold()
	l.Printf(context.Background(), dial, 5, "attempt one")
	if buf.Len() != 0 {
		t.Fatalf("logged while held: %s", buf.String())
	}
	clientLines.discard() // the start failed and will be made again
	l.Printf(context.Background(), dial, 5, "attempt two")
	clientLines.release() // the start succeeded
	l.Printf(context.Background(), dial, 5, "running")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "level=DEBUG") || !strings.Contains(lines[0], "attempt one") ||
		!strings.Contains(lines[1], "level=WARN") || !strings.Contains(lines[1], "attempt two") ||
		!strings.Contains(lines[2], "level=WARN") || !strings.Contains(lines[2], "running") {
		t.Errorf("lines:\n%s\nwant attempt one at DEBUG, attempt two and running at WARN", buf.String())
	}
}

// A time in a JSON log line has three decimals, as in the text log, the
// history and status (a slot at .860 was ".86Z"); the record's own time
// keeps the handler's full precision.
func TestJSONLogTimes(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var buf bytes.Buffer
		g := &globalFlags{logFormat: format, logLevel: "info"}
		log, err := g.newLogger(&buf)
		if err != nil {
			t.Fatal(err)
		}
		slot := time.UnixMilli(1796558400860).UTC() // 2026-12-06T...:00.860Z
		log.Info("run started", slog.Time("slot", slot), slog.Group("g", slog.Time("at", slot.Add(100*time.Millisecond))))
		line := buf.String()
		for _, want := range []string{"2026-12-06T12:00:00.860Z", "2026-12-06T12:00:00.960Z"} {
			if !strings.Contains(line, want) {
				t.Errorf("%s: %s\nwant %s", format, line, want)
			}
		}
	}
}
