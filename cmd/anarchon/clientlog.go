package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
)

// clientLog is the logger the store clients' own log lines go to, so JSON
// logs stay JSON; logger sets it. Client goroutines read it at any time.
var clientLog atomic.Pointer[slog.Logger]

// clientLogger adapts a client library's Printf-style logging to slog.
type clientLogger struct{ client string }

// Printf logs one line of the client at WARN: clients log mostly trouble
// (a reconnection, a dropped connection). go-redis's Sentinel client also
// logs the master it found, on every start and failover: that is news, not
// trouble, and goes at INFO.
func (c clientLogger) Printf(_ context.Context, format string, args ...any) {
	log := clientLog.Load()
	if log == nil {
		log = slog.Default()
	}
	msg := strings.TrimSpace(fmt.Sprintf(format, args...))
	level := slog.LevelWarn
	if strings.HasPrefix(msg, "sentinel: new master") || strings.HasPrefix(msg, "sentinel: selected addr") {
		level = slog.LevelInfo
	}
	log.Log(context.Background(), level, msg, slog.String("client", c.client))
}
