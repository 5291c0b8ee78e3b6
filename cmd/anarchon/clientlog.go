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

// Printf logs one line of the client at WARN: clients log only trouble
// (a reconnection, a dropped connection).
func (c clientLogger) Printf(_ context.Context, format string, args ...any) {
	log := clientLog.Load()
	if log == nil {
		log = slog.Default()
	}
	log.Warn(strings.TrimSpace(fmt.Sprintf(format, args...)), slog.String("client", c.client))
}
