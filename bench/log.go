package bench

import (
	"io"
	"log/slog"
)

// quietLogger drops the scheduler's logs below errors, so harness output
// stays a table.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
