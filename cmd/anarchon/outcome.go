package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/anarchon/anarchon"
)

// failureLines is how many of a failed run's last output lines its WARN
// line carries.
const failureLines = 10

// outcomes logs what became of each run and slot, from the scheduler's
// events: one line per run end (INFO, WARN for a failure), one when this
// replica wins a later attempt of a slot (a retry, or a takeover of a run
// that did not finish), one when a slot is not run.
type outcomes struct {
	log      *slog.Logger
	instance string
	exec     *executor
	// history reads a job's newest history records (the store's
	// Backend.History), for the line of a later attempt: how the attempt
	// before it ended. nil: not read, and the line says so.
	history func(ctx context.Context, job string, limit int) ([]anarchon.RunRecord, error)
}

// previousScan is how many of a job's newest history records are read
// for the record of the attempt before a later one: the slot's own
// records come first unless later slots of the job have started since.
const previousScan = 64

// previousRead bounds that read: the command of the later attempt waits
// for its line (executor.awaitLine).
const previousRead = 5 * time.Second

func newOutcomes(log *slog.Logger, instance string, e *executor) *outcomes {
	return &outcomes{log: log, instance: instance, exec: e}
}

// observe logs one event; it is quick and never calls the scheduler (the
// store read of a later attempt's line is made on a goroutine of its own).
func (o *outcomes) observe(e anarchon.Event) {
	base := []any{slog.String("job", e.Job), slog.String("slot", formatSlot(e.Slot)), slog.Int("attempt", e.Attempt), slog.String("instance", o.instance)}
	switch e.Kind {
	case anarchon.EventRunEnd:
		output := ""
		if o.exec != nil {
			output = o.exec.takeOutput(e.Job, e.Slot, e.Attempt)
		}
		attrs := append(base, slog.Duration("duration", e.Duration.Round(time.Millisecond)))
		if e.Status == anarchon.StatusSuccess {
			o.log.Info("run succeeded", append(attrs, slog.Int("exit_code", 0))...)
			return
		}
		if errors.Is(e.Err, anarchon.ErrStopped) && e.Manual {
			// a manual run has no lease and no replica standing by
			o.log.Warn("manual run stopped", append(attrs, slog.String("reason",
				"this replica is stopping and --stop-timeout has passed: the command was stopped and the run recorded as an error; nothing runs it again unless it is triggered again"))...)
			return
		}
		if errors.Is(e.Err, anarchon.ErrStopped) {
			// Stop's deadline came: the run is released to a replica
			// standing by (every daemon job holds a lease), not failed.
			o.log.Info("run handed over", append(attrs, slog.String("reason",
				"this replica is stopping and --stop-timeout has passed: the command was stopped and its lease released, so a replica standing by, if any, runs the slot again as the next attempt"))...)
			return
		}
		code, sig := exitOf(e.Err)
		switch {
		case sig != "":
			attrs = append(attrs, slog.String("signal", sig))
		case code >= 0:
			attrs = append(attrs, slog.Int("exit_code", code))
		}
		if e.Err != nil {
			attrs = append(attrs, slog.String("error", e.Err.Error()))
		}
		if why := retryNote(e, code); why != "" {
			attrs = append(attrs, slog.String("retry", why))
		}
		if last := lastLines(output, failureLines); last != "" {
			attrs = append(attrs, slog.String("output", last))
		}
		o.log.Warn("run failed", attrs...)
	case anarchon.EventClaim:
		if e.Outcome != "won" || e.Attempt <= 1 {
			break
		}
		o.laterAttempt(e, base)
	case anarchon.EventSlotSkipped:
		// A missed slot is a job that did not run when it should have:
		// trouble, so it stays in the log at --log-level warn.
		level := slog.LevelInfo
		if e.Status == anarchon.StatusMissed {
			level = slog.LevelWarn
		}
		o.log.Log(context.Background(), level, "slot skipped", append(base[:2:2], slog.String("instance", o.instance),
			slog.String("status", string(e.Status)), slog.String("reason", skipReason(e)))...)
	}
}

// laterAttempt logs a won claim of attempt 2 or more: a retry, when the
// attempt before it ran its command and failed (on this replica or on
// another), or a takeover of a run whose holder did not finish it (it
// stopped, was killed, or lost its lease). The claim's answer does not
// tell them apart: it carries the new attempt's number, and the store's
// row of the slot looks the same after a failed attempt's backoff as
// after a dead holder's lease (Event.Retry says only that this replica's
// own failed run set the retry up). The slot's history does: the attempt
// before is recorded with its error when it failed and was retried, and
// as lease_lost or handed_over when it did not finish. The read goes on a
// goroutine of its own, since OnEvent must be quick; the attempt's
// command waits for the line (executor.awaitLine), so that the line comes
// before the command's output.
func (o *outcomes) laterAttempt(e anarchon.Event, base []any) {
	if o.history == nil {
		o.logLaterAttempt(e, base, anarchon.RunRecord{}, errors.New("the store's history is not read"))
		return
	}
	key := runKey(e.Job, e.Slot, e.Attempt)
	done := make(chan struct{})
	if o.exec != nil {
		o.exec.lineDue(key, done)
	}
	go func() {
		defer close(done)
		if o.exec != nil {
			defer o.exec.lineDone(key)
		}
		ctx, cancel := context.WithTimeout(context.Background(), previousRead)
		defer cancel()
		prev, err := o.previous(ctx, e)
		o.logLaterAttempt(e, base, prev, err)
	}()
}

// previous finds the history record of the attempt before e's.
func (o *outcomes) previous(ctx context.Context, e anarchon.Event) (anarchon.RunRecord, error) {
	recs, err := o.history(ctx, e.Job, previousScan)
	if err != nil {
		return anarchon.RunRecord{}, fmt.Errorf("the job's history could not be read: %w", err)
	}
	for _, r := range recs {
		if !r.Manual && r.Slot.Equal(e.Slot) && r.Attempt == e.Attempt-1 {
			return r, nil
		}
	}
	return anarchon.RunRecord{}, fmt.Errorf("attempt %d of the slot is not among the job's newest %d history records", e.Attempt-1, previousScan)
}

// logLaterAttempt writes laterAttempt's line from prev, the record of the
// attempt before e's, or from err, why it is not known.
func (o *outcomes) logLaterAttempt(e anarchon.Event, base []any, prev anarchon.RunRecord, err error) {
	switch {
	case err == nil && prev.Status == anarchon.StatusError:
		// Only a retry follows an attempt recorded as an error: a
		// failure that is not retried settles the slot.
		o.log.Info("retrying the slot after its failed attempt", append(base,
			slog.Int("failed_attempt", prev.Attempt), slog.String("failed_on", prev.InstanceID))...)
	case err == nil:
		o.log.Info("taking over a run another instance did not finish", append(base,
			slog.Int("previous_attempt", prev.Attempt), slog.String("previous_instance", prev.InstanceID),
			slog.String("previous_status", string(prev.Status)))...)
	case e.Retry:
		// This replica's own failed run set the retry up (Event.Retry).
		o.log.Info("retrying the slot after its failed attempt", append(base, slog.String("failed_on", o.instance))...)
	default:
		o.log.Info("running a later attempt of the slot", append(base,
			slog.String("previous", "how the attempt before it ended is not known: "+err.Error()))...)
	}
}

// retryNote says, for the "run failed" line of a job with retry:, whether
// a further attempt of the slot follows, which and when, or why not (the
// scheduler's Event.Reason), so that the last attempt reads apart from one
// that is retried; an exit code the job marked permanent is named. "" for
// a job without retries. The history record does not carry it.
func retryNote(e anarchon.Event, code int) string {
	if e.Reason != "" && !e.Retry && code > 0 && anarchon.IsPermanent(e.Err) {
		return fmt.Sprintf("no retry: exit code %d is one of the job's permanent_exit_codes", code)
	}
	return e.Reason
}

// eventLines are the scheduler's own log lines for the events observe
// logs itself: a slot not run (host.go), which observe logs as "slot
// skipped" with a reason, a failed run (run.go), which it logs with
// the command's exit code and output, and the retry that follows one. The daemon drops them so that each
// is logged once.
var eventLines = map[string]bool{
	"slot not run":                 true, // settled: skipped, replaced, abandoned
	"slot missed: too late to run": true,
	// a handler's error: observe logs each run's end with its exit code
	// and output
	"run failed":   true,
	"run panicked": true,
	"run cut short: the scheduler is stopping": true,
	// a retry: observe's "run failed" line says which attempt follows
	// and when (its retry attribute)
	"slot to be retried": true,
	// a takeover or a retry: observe logs "taking over a run another
	// instance did not finish" or "retrying the slot after its failed
	// attempt" from the won claim
	"slot taken over from another instance": true,
}

// withoutEventLines is the handler of the logger the daemon gives its
// schedulers: every record but the eventLines.
type withoutEventLines struct{ slog.Handler }

func (h withoutEventLines) Handle(ctx context.Context, r slog.Record) error {
	if eventLines[r.Message] {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h withoutEventLines) WithAttrs(attrs []slog.Attr) slog.Handler {
	return withoutEventLines{h.Handler.WithAttrs(attrs)}
}

func (h withoutEventLines) WithGroup(name string) slog.Handler {
	return withoutEventLines{h.Handler.WithGroup(name)}
}

// skipReason says in words why a slot was not run: the reason its history
// record gives, when the scheduler wrote one (so that the log and
// `history` agree), else one from its status.
func skipReason(e anarchon.Event) string {
	if e.Reason != "" {
		return e.Reason
	}
	switch e.Status {
	case anarchon.StatusMissed:
		return "too late to start: " + e.Lateness.Round(time.Millisecond).String() + " after the slot, past max_late"
	case anarchon.StatusSkipped:
		if e.Attempt > 1 {
			return fmt.Sprintf("attempt %d took over a run whose holder stopped while other runs of the job held live leases (overlap: skip, limit or buffer_one): it is recorded skipped instead of running beside them", e.Attempt)
		}
		// The store's view: a run it holds as live may be one whose claim
		// answer or finish was lost (a store failing over), which no
		// instance works until its lease ends.
		return "the store still held another run of the job as live (overlap: skip, buffer_one or limit): running, or left by a claim or finish that failed until its lease ends; a slot whose claim came late, as after a store failover, can meet a later slot's run"
	case anarchon.StatusReplaced:
		return "a later slot replaced the run (overlap: replace)"
	case anarchon.StatusAbandoned:
		return "every attempt lost its lease (max_attempts reached)"
	case anarchon.StatusPaused:
		// The claim's answer carries no pause record; status names who
		// paused the job and why.
		return "the job is paused: the slot is recorded paused, not run (anarchon status shows who paused it and why; anarchon resume lets it run again)"
	}
	return string(e.Status)
}

// exitOf finds a command's exit code or terminating signal in err; code is
// -1 when there is neither.
func exitOf(err error) (code int, signal string) {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -1, ""
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	return ee.ExitCode(), ""
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
