package bench

import (
	"io"
	"log/slog"
)

// quietLogger drops the scheduler's logs below errors without formatting
// them, so harness output stays a table and logging costs nothing.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 1}))
}
