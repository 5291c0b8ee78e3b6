package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/internal/cron"
)

// cronFieldsWant is what a schedule of next and of a YAML job may be.
const cronFieldsWant = `want 5 (minute hour day-of-month month day-of-week), 6 (a second first) or a descriptor such as @daily or "@every 10s"`

// scheduleReason is the reason of a job the scheduler refused, as the
// daemon reports it. For a cron expression the engine refused it is the
// engine's error with two changes: an expression with too few or too many
// fields says how many it has and what is wanted, and a position is given
// only when it points at a term of the expression (the engine gives the
// end of the expression for what is missing there: a field, @every's
// duration). Any other reason is the library's.
func scheduleReason(ve *anarchon.ValidationError) string {
	var pe *cron.ParseError
	if ve.Code != anarchon.CodeBadCron || !errors.As(ve, &pe) {
		return ve.Reason
	}
	at := ""
	if pe.Pos < len(pe.Expr) {
		at = fmt.Sprintf(" at %d", pe.Pos)
	}
	field := ""
	if pe.Field != "" {
		field = " (" + pe.Field + ")"
	}
	msg := pe.Msg
	fields := strings.FieldsFunc(pe.Expr, func(r rune) bool { return r == ' ' || r == '\t' })
	if n := len(fields); pe.Field == "" && n > 0 && n != 5 && n != 6 && !strings.HasPrefix(fields[0], "@") {
		msg = fmt.Sprintf("%d fields: %s", n, cronFieldsWant)
		if n == 1 {
			msg = "1 field: " + cronFieldsWant
		}
	}
	return fmt.Sprintf("cron: %q%s%s: %s", pe.Expr, at, field, msg)
}
