package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
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
	if clientLines.add(heldLine{level: level, msg: msg, client: c.client}) {
		return
	}
	log.Log(context.Background(), level, msg, slog.String("client", c.client))
}

// clientLines holds the clients' lines while the daemon starts on its
// store ("run" until its start succeeded, "history" and "status" until
// they found the store's data). A start that fails reports the store's
// error itself (the WARN before a retry, or the error the command ends
// with), which the client's lines only repeat: go-redis logs "failed to
// dial" once per attempt of a PING, four lines before the daemon's own
// error. So the lines of a failed start are logged at DEBUG, and those of
// a start that succeeded as they came, after it. Once the store has
// answered, lines are logged at once: trouble while running is a WARN.
var clientLines heldLines

// maxHeldLines bounds clientLines; further lines are logged at once.
const maxHeldLines = 256

type heldLine struct {
	level  slog.Level
	msg    string
	client string
}

type heldLines struct {
	mu      sync.Mutex
	holding bool
	lines   []heldLine
}

// hold starts holding lines.
func (h *heldLines) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holding = true
}

// add holds l; false when not holding (or full): log it at once.
func (h *heldLines) add(l heldLine) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.holding || len(h.lines) >= maxHeldLines {
		return false
	}
	h.lines = append(h.lines, l)
	return true
}

// take returns the held lines and forgets them; stop ends the holding.
func (h *heldLines) take(stop bool) []heldLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	lines := h.lines
	h.lines = nil
	if stop {
		h.holding = false
	}
	return lines
}

// discard logs the held lines at DEBUG: a start failed, and its error
// says what they said. It keeps holding, for a start made again.
func (h *heldLines) discard() { logLines(h.take(false), true) }

// release logs the held lines at their levels and ends the holding.
func (h *heldLines) release() { logLines(h.take(true), false) }

func logLines(lines []heldLine, debug bool) {
	log := clientLog.Load()
	if log == nil {
		log = slog.Default()
	}
	for _, l := range lines {
		level := l.level
		if debug {
			level = slog.LevelDebug
		}
		log.Log(context.Background(), level, l.msg, slog.String("client", l.client))
	}
}

// holdClientLines holds the clients' lines during a start (clientLines);
// end(true) logs them as they came, end(false) at DEBUG. Either ends the
// holding.
func holdClientLines() (end func(started bool)) {
	clientLines.hold()
	return func(started bool) {
		if !started {
			clientLines.discard()
		}
		clientLines.release()
	}
}

// storeLog is the logger a backend opened for --store logs to: clientLog,
// and for the read-only commands (mustExist: history, status) only its
// errors. A backend's start report (Redis persistence off, the servers it
// found) is for the daemon's log; repeated on every history or status
// call it said nothing about what was read.
func storeLog(mustExist bool) *slog.Logger {
	log := clientLog.Load()
	if log == nil {
		log = slog.Default()
	}
	if !mustExist {
		return log
	}
	return slog.New(levelAtLeast{log.Handler(), slog.LevelError})
}

// levelAtLeast is h without the records below min.
type levelAtLeast struct {
	slog.Handler
	min slog.Level
}

func (h levelAtLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h levelAtLeast) WithAttrs(as []slog.Attr) slog.Handler {
	return levelAtLeast{h.Handler.WithAttrs(as), h.min}
}

func (h levelAtLeast) WithGroup(name string) slog.Handler {
	return levelAtLeast{h.Handler.WithGroup(name), h.min}
}
