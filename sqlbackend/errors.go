package sqlbackend

import (
	"fmt"

	"github.com/anarchon/anarchon"
)

// errorf wraps err, keeping it reachable with errors.Is and errors.As,
// and marks it anarchon.Permanent if the dialect's IsPermanent says a
// retry cannot fix it (errors the base marked stay marked).
func (b *SQLBackend) errorf(op string, err error) error {
	e := fmt.Errorf("%s: %s: %w", b.cfg.Name, op, err)
	if b.d.IsPermanent != nil && b.d.IsPermanent(err) {
		return anarchon.Permanent(e)
	}
	return e
}

// invalid is an error in the caller's input: repeating the call cannot
// fix it.
func invalid(format string, args ...any) error {
	return anarchon.Permanent(fmt.Errorf(format, args...))
}
