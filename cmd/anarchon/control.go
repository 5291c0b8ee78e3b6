package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/anarchon/anarchon"
	"github.com/spf13/cobra"
)

// Error codes of the job control commands (unknown_job of history too),
// printed as "(code)" and in --json output; stable, like anarchon's
// validation codes.
const (
	codeUnknownJob   = "unknown_job"   // the job is not in the given files (history: nor in the store's history)
	codeNotSupported = "not_supported" // the store has no job control or triggers
	codeTimeout      = "timeout"       // no replica ran the trigger within --timeout
	codeInterrupted  = "interrupted"   // a signal ended the trigger's wait (exit 130)
	codeRunnerGone   = "runner_gone"   // the replica running the trigger is gone by the registry
	codeTaken        = "taken"         // trigger --cancel: a replica took the request first
	codeUnknownKey   = "unknown_key"   // trigger --cancel: no request with this key for the job
	codeCanceled     = "canceled"      // the trigger waited for was canceled (trigger --cancel)
	codeRebootJob    = "reboot_job"    // trigger, backfill, pause or resume of an @reboot job (next of @reboot), which has no slots
)

// codedError is a control command's failure with a stable code.
type codedError struct {
	code string
	err  error
}

func (e codedError) Error() string { return withCode(e.err.Error(), e.code) }
func (e codedError) Unwrap() error { return e.err }

// unknownJob is the error of a command given a job its files do not have.
func unknownJob(name string) error {
	return codedError{codeUnknownJob, fmt.Errorf("no job %q in the given files (give the --crontab or --config the replicas run)", name)}
}

// classify gives err its code.
func classify(name string, err error) error {
	switch {
	case errors.Is(err, anarchon.ErrNotFound):
		return unknownJob(name)
	case errors.Is(err, anarchon.ErrNotSupported):
		return codedError{codeNotSupported, err}
	case errors.Is(err, context.DeadlineExceeded):
		return codedError{codeTimeout, err}
	}
	return err
}

// who names the person or process that asks: user@host. The user is
// $USER, else $LOGNAME, else the name of the process's uid (a container or
// a service often sets neither variable), else "uid N".
func who() string {
	host, _ := os.Hostname()
	name := cmp.Or(os.Getenv("USER"), os.Getenv("LOGNAME"))
	if name == "" {
		if u, err := user.Current(); err == nil && u.Username != "" {
			name = u.Username
		} else {
			name = "uid " + strconv.Itoa(os.Getuid())
		}
	}
	return name + "@" + host + " (cli)"
}

// stateJSON is a job's control state as the commands print it.
type stateJSON struct {
	Job    string `json:"job"`
	Paused bool   `json:"paused"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
	At     string `json:"at,omitempty"`
	// Unchanged (pause and resume only): the job was paused already, or
	// not paused, so the command changed nothing. A pause prints the
	// stored pause (its reason stays the first one's), a resume the job
	// alone, not paused: the stored state's by and at are an earlier
	// command's.
	Unchanged bool `json:"unchanged,omitempty"`
	// CatchUpKey (resume --catch-up only) is the trigger key of the
	// catch-up run requested (anarchon.CatchUpKey).
	CatchUpKey string `json:"catch_up_key,omitempty"`
}

func toStateJSON(st anarchon.JobState) stateJSON {
	return stateJSON{Job: st.Job, Paused: st.Paused, By: st.By, Reason: st.Reason, At: formatTime(st.At)}
}

// maxReason is the longest pause --reason, in characters: the
// dashboard's bound too (anarchonui). The reason is repeated in the
// history record of every slot the pause settles and printed beside the
// job by status, history and the dashboard, so it is a line, not a
// report.
const maxReason = 200

// checkReason refuses, as a usage error (bad_flag), a --reason that is
// longer than maxReason, not valid UTF-8 or has a control character:
// status, history and the dashboard print it, where a newline breaks
// their tables and an escape sequence drives the operator's terminal,
// and a store may refuse bytes that are not UTF-8 (PostgreSQL's text).
// Nothing is stored then.
func checkReason(reason string) error {
	if n := utf8.RuneCountInString(reason); n > maxReason {
		return usageError{codeBadFlag, fmt.Errorf("--reason is %d characters long, more than the %d a pause reason may have: shorten it; nothing was paused", n, maxReason)}
	}
	if !utf8.ValidString(reason) {
		return usageError{codeBadFlag, errors.New("--reason is not valid UTF-8: give one line of printable text; nothing was paused")}
	}
	if i := strings.IndexFunc(reason, unicode.IsControl); i >= 0 {
		return usageError{codeBadFlag, fmt.Errorf("--reason has a control character (%q at byte %d): give one line of printable text", reason[i:i+1], i)}
	}
	return nil
}

// controlCmd is pause or resume.
func controlCmd(g *globalFlags, stdout, stderr io.Writer, pause bool) *cobra.Command {
	var asJSON, catchUp bool
	var reason, catchUpKey string
	use, short := "resume JOB", "Let a paused job run again on every replica from its next slot"
	if pause {
		use, short = "pause JOB", "Pause a job on every replica that shares the store"
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Long: `pause stores the job's paused state in the store: no replica runs a slot of
it whose claim reaches the store afterwards, and each such slot is recorded
in the history as paused (a job paused already is left as it is). resume
clears it; paused slots are not replayed
unless --catch-up asks for one run in their place (requested only when a
slot of the job came due while it was paused). Both need --crontab or
--config to know the job, and print the stored state.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name := args[0]
			if err := checkReason(reason); err != nil {
				return err
			}
			d, err := openForWrite(g, stderr, c.Name(), true)
			if err != nil {
				return err
			}
			defer d.close()
			if d.schedFor(name) == d.reboot {
				// no slot to hold off, and a catch-up would be a trigger
				// request no replica takes
				return codedError{codeRebootJob, fmt.Errorf("job %q is an @reboot job: it has no slots to %s; each replica runs it once as it starts", name, c.Name())}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var st anarchon.JobState
			if pause {
				// A job paused already keeps its pause (who, when, why:
				// a resume's catch-up is keyed by that time), and the
				// command says so rather than "paused".
				if st, err = d.schedFor(name).JobState(ctx, name); err == nil && st.Paused {
					if asJSON {
						out := toStateJSON(st)
						out.Unchanged = true
						return writeJSON(stdout, out)
					}
					fmt.Fprintf(stdout, "%s is paused already, by %s at %s", name, st.By, formatTime(st.At))
					if st.Reason != "" {
						fmt.Fprintf(stdout, ": %s", st.Reason)
					}
					fmt.Fprintln(stdout, "; nothing changed (resume it first to pause it anew)")
					return nil
				}
				if err == nil {
					st, err = d.schedFor(name).Pause(ctx, name, anarchon.PauseOptions{Reason: reason, By: who()})
				}
			} else {
				// A job that is not paused is left as it is, and the
				// command says so rather than "resumed". With a catch-up,
				// Resume reads the state itself, says whether it resumed
				// the job, and names the key of the catch-up it requested:
				// "" when the pause covered no slot of the job.
				resumed := false
				if catchUp {
					st, err = d.schedFor(name).Resume(ctx, name, anarchon.ResumeOptions{By: who(), CatchUp: true})
					catchUpKey, resumed = st.CatchUpKey, st.Resumed
				} else if st, err = d.schedFor(name).JobState(ctx, name); err == nil && st.Paused {
					st, err = d.schedFor(name).Resume(ctx, name, anarchon.ResumeOptions{By: who()})
					resumed = true
				}
				if err == nil && !resumed {
					if asJSON {
						// The stored state names who last resumed the
						// job and when, or is empty: nothing of this
						// command's, which changed nothing, as the text
						// form says.
						return writeJSON(stdout, stateJSON{Job: name, Unchanged: true})
					}
					fmt.Fprintf(stdout, "%s is not paused: nothing to resume\n", name)
					return nil
				}
			}
			if err != nil && catchUpKey != "" {
				// The resume is stored and only the catch-up's request
				// failed: run again, the command finds the job not paused
				// and requests nothing, so the key is said with the error.
				return classify(name, fmt.Errorf("%s resumed, but the catch-up run was not requested: request it with \"anarchon trigger %s --key %s\": %w", name, name, catchUpKey, err))
			}
			if err != nil {
				return classify(name, err)
			}
			if asJSON {
				out := toStateJSON(st)
				out.CatchUpKey = catchUpKey
				return writeJSON(stdout, out)
			}
			verb := "resumed"
			if st.Paused {
				verb = "paused"
			}
			fmt.Fprintf(stdout, "%s %s by %s at %s", name, verb, st.By, formatTime(st.At))
			if st.Reason != "" {
				fmt.Fprintf(stdout, ": %s", st.Reason)
			}
			fmt.Fprintln(stdout)
			switch {
			case catchUpKey != "":
				fmt.Fprintf(stdout, "catch-up run requested from the replicas under trigger key %s; \"anarchon trigger %s --key %s\" waits for it and prints how it ended\n", catchUpKey, name, catchUpKey)
			case catchUp:
				fmt.Fprintln(stdout, "no catch-up run requested: no slot of the job came due while it was paused")
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the stored state as JSON")
	if pause {
		c.Flags().StringVar(&reason, "reason", "", "why, kept in the store and shown by status")
	} else {
		c.Flags().BoolVar(&catchUp, "catch-up", false, "run the job once at once in place of the slots it missed while paused, if a slot came due while it was paused")
	}
	return c
}

// cancelTrigger is "trigger JOB --cancel --key K": it withdraws the
// request if no replica took it yet (exit 0, also when it was canceled
// before), and otherwise says where it stands (code taken, exit 1; code
// runner_gone when the replica running it is gone by the registry).
func cancelTrigger(g *globalFlags, stdout, stderr io.Writer, name, key string, asJSON bool) error {
	if key == "" {
		return usageError{codeBadFlag, errors.New("--cancel needs --key: the request to withdraw")}
	}
	d, err := openForWrite(g, stderr, "trigger", false)
	if err != nil {
		return err
	}
	defer d.close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := d.sched.CancelTrigger(ctx, name, key, who())
	// A request whose runner is gone is answered as the waiting trigger
	// answers it (runner_gone), after its record.
	gone := errors.Is(err, anarchon.ErrTriggerRunnerGone)
	switch {
	case errors.Is(err, anarchon.ErrNotFound):
		return codedError{codeUnknownKey, fmt.Errorf("job %q has no trigger request with --key %q", name, key)}
	case err != nil && !gone:
		return classify(name, err)
	}
	if asJSON {
		out := triggerJSON{Job: rec.Job, Key: rec.Key, By: rec.By, State: string(rec.State), Instance: rec.InstanceID, Status: string(rec.Status), Error: rec.Error, ClaimedAt: formatTime(rec.ClaimedAt)}
		if rec.State == anarchon.TriggerDone && rec.Status != anarchon.StatusCanceled {
			// it ran: its result, as trigger prints it
			code := 0
			if rec.Status != anarchon.StatusSuccess {
				code = exitCode(rec.Error)
			}
			out.Slot, out.ExitCode = formatTime(time.UnixMilli(rec.Slot)), &code
		}
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	}
	switch {
	case rec.Status == anarchon.StatusCanceled:
		if !asJSON {
			fmt.Fprintf(stdout, "%s: trigger %s canceled (%s)\n", name, key, rec.Error)
		}
		return nil
	case gone:
		return codedError{codeRunnerGone, fmt.Errorf("%w; a trigger with another --key runs the job again", err)}
	case rec.State == anarchon.TriggerRunning:
		return codedError{codeTaken, fmt.Errorf("job %q: trigger %s not canceled: running on %s since %s; a run a replica took goes on",
			name, key, rec.InstanceID, formatTime(rec.ClaimedAt))}
	}
	return codedError{codeTaken, fmt.Errorf("job %q: trigger %s not canceled: it ran on %s (slot %s): %s",
		name, key, rec.InstanceID, formatTime(time.UnixMilli(rec.Slot)), rec.Status)}
}

// writeUnfinished prints, for "trigger --json", a request that ran
// nothing to report: one the wait gave up on (pending, or running with its
// instance) or one canceled (done, status canceled), with no slot or exit
// code. The error and exit status follow as for any error, so a script
// reads the key to wait under from stdout.
func writeUnfinished(stdout io.Writer, req, rec anarchon.TriggerRecord) {
	if rec.State == "" {
		rec = req // no look at the store answered: what the request said
	}
	_ = writeJSON(stdout, triggerJSON{Job: req.Job, Key: req.Key, By: req.By, State: string(rec.State), Instance: rec.InstanceID,
		Status: string(rec.Status), Error: rec.Error, ClaimedAt: formatTime(rec.ClaimedAt)})
}

// triggerJSON is a trigger's result as "trigger --json" prints it. State
// is the request's: done, or pending or running when the wait gave up,
// and then Slot and Status are empty and ExitCode is left out.
type triggerJSON struct {
	Job      string `json:"job"`
	Key      string `json:"key"`
	By       string `json:"by"`
	State    string `json:"state"`
	Instance string `json:"instance"`
	Slot     string `json:"slot"`
	Status   string `json:"status"`
	Error    string `json:"error"`
	ExitCode *int   `json:"exit_code,omitempty"`
	// ClaimedAt is when a replica took the request (running or done),
	// by the store's clock; left out while it is pending.
	ClaimedAt string `json:"claimed_at,omitempty"`
	// Earlier says the key's run had ended before this request: the
	// result is that earlier run's, and the job was not run again.
	Earlier bool `json:"earlier,omitempty"`
}

func triggerCmd(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	var asJSON, cancelReq bool
	var key string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "trigger JOB",
		Short: "Run a job once now on a live replica and wait for its result",
		Long: `trigger asks the store for one run of the job by a live replica (not this
process), waits until a replica has run it, prints where it ran and how it
ended, and exits with the job's exit status. Triggers with the same --key run
once however many are sent. With no replica that knows the job, it gives up
after --timeout (exit 1, code timeout). Ctrl-C ends the wait, not the
request (exit 130, naming the --key to wait for it under). It needs
--crontab or --config to know the job.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name := args[0]
			if c.Flags().Changed("key") && key == "" && !cancelReq { // --cancel says what it needs
				return usageError{codeBadFlag, errors.New("--key is empty: leave it out for a random key")}
			}
			if cancelReq {
				if c.Flags().Changed("timeout") {
					return usageError{codeBadFlag, errors.New("--timeout does not apply to --cancel, which does not wait")}
				}
				return cancelTrigger(g, stdout, stderr, name, key, asJSON)
			}
			if timeout <= 0 {
				return usageError{codeBadFlag, errors.New("--timeout must be positive")}
			}
			d, err := openForWrite(g, stderr, "trigger", true)
			if err != nil {
				return err
			}
			defer d.close()
			s := d.schedFor(name)
			if s == d.reboot {
				// A replica runs its @reboot jobs as it starts, outside
				// its scheduler: a request for one would stay pending.
				return codedError{codeRebootJob, fmt.Errorf("job %q is an @reboot job: each replica runs it once as it starts, and no running replica takes a trigger for it; run it on this host with \"anarchon run-now %s\"", name, name)}
			}
			// --timeout bounds the wait, not the request: a short one
			// still stores the request and names its key. The request
			// gets the 30 s of every other command's store call.
			rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
			req, err := s.RequestTrigger(rctx, name, key)
			rcancel()
			if err != nil {
				return classify(name, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			// Ctrl-C ends the wait, not the request, and says so
			wctx, stopSignals := stopOnSignal(ctx, nil)
			defer stopSignals()
			d.log.Debug("waiting for a replica to run the trigger", slog.String("job", name), slog.String("key", req.Key),
				slog.String("state", string(req.State)), slog.Duration("timeout", timeout))
			rec, err := s.WaitTrigger(wctx, name, req.Key)
			// The request is kept, pending or running: waiting again
			// under its key runs the job no second time, where a new
			// trigger could.
			kept := "the request is kept and runs once, whoever asks: wait for it by running this command again with --key " + req.Key
			switch {
			case errors.Is(err, context.DeadlineExceeded):
				err = fmt.Errorf("%w; %s", err, kept)
				if asJSON {
					writeUnfinished(stdout, req, rec)
				}
			case err != nil && wctx.Err() != nil && ctx.Err() == nil:
				// the wait's error names the request's state and the signal
				if asJSON {
					writeUnfinished(stdout, req, rec)
				}
				return exitError{code: 130, err: codedError{codeInterrupted, fmt.Errorf("%w; %s", err, kept)}}
			case errors.Is(err, anarchon.ErrTriggerRunnerGone):
				// the error says why; the request stays running
				if asJSON {
					writeUnfinished(stdout, req, rec)
				}
				return codedError{codeRunnerGone, fmt.Errorf("%w; a trigger with another --key runs the job again", err)}
			}
			if err != nil {
				return classify(name, err)
			}
			if rec.Status == anarchon.StatusCanceled {
				// withdrawn before any replica took it: nothing ran
				if asJSON {
					writeUnfinished(stdout, req, rec)
				}
				return codedError{codeCanceled, fmt.Errorf("job %q: trigger %s did not run: %s", name, rec.Key, rec.Error)}
			}
			code := 0
			if rec.Status != anarchon.StatusSuccess {
				code = exitCode(rec.Error)
			}
			if asJSON {
				if err := writeJSON(stdout, triggerJSON{Job: name, Key: rec.Key, By: rec.By, State: string(rec.State), Instance: rec.InstanceID,
					Slot: formatTime(time.UnixMilli(rec.Slot)), Status: string(rec.Status), Error: rec.Error, ExitCode: &code, ClaimedAt: formatTime(rec.ClaimedAt),
					Earlier: req.State == anarchon.TriggerDone}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(stdout, "%s ran on %s (slot %s): %s", name, rec.InstanceID, formatTime(time.UnixMilli(rec.Slot)), rec.Status)
				if rec.Error != "" {
					fmt.Fprintf(stdout, ": %s", firstLine(rec.Error))
				}
				fmt.Fprintln(stdout)
				if req.State == anarchon.TriggerDone {
					// The same key again: the answer is the first run's.
					// Said as "not run again", not "nothing ran": that run
					// did happen (a catch-up waited for after it ended).
					fmt.Fprintf(stdout, "(key %s had run already, requested by %s at %s: the result above is of that earlier run; this trigger did not run the job again, another --key does)\n",
						rec.Key, dash(rec.By), formatTime(rec.RequestedAt))
				}
			}
			if code != 0 {
				return exitError{code: code}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().BoolVar(&cancelReq, "cancel", false, "withdraw the pending request --key instead of requesting a run (the job need not be in the files)")
	c.Flags().StringVar(&key, "key", "", "the trigger's identity: triggers with one key run once (default: a random key)")
	c.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait for a replica to run the job")
	return c
}

// printPendingTriggers prints the trigger requests of a status report
// that no replica has taken yet.
func printPendingTriggers(w io.Writer, rep statusReport) {
	printSection(w, "pending triggers", "pending triggers (no replica took them yet: does a live one have the job?)", rep.TriggersError, rep.PendingTriggers,
		func(p pendingTriggerJSON) string {
			return fmt.Sprintf("%s\tkey %s\tby %s at %s", p.Job, p.Key, p.By, p.RequestedAt)
		})
}

// printPaused prints the paused jobs of a status report.
func printPaused(w io.Writer, rep statusReport) {
	printSection(w, "paused", "paused", rep.PausedError, rep.Paused, func(p stateJSON) string {
		line := fmt.Sprintf("%s\tby %s at %s", p.Job, p.By, p.At)
		if p.Reason != "" {
			line += ": " + p.Reason
		}
		return line
	})
}

// printSection prints one list of a status report after a blank line:
// "name: cannot read: …" when readErr says so, "name: none" when it is
// empty, else the heading and one indented line per item, whose cells
// (tab-separated by line) are aligned in columns, two spaces apart.
func printSection[T any](w io.Writer, name, heading, readErr string, items []T, line func(T) string) {
	switch {
	case readErr != "":
		fmt.Fprintf(w, "\n%s: cannot read: %s\n", name, readErr)
	case len(items) == 0:
		fmt.Fprintf(w, "\n%s: none\n", name)
	default:
		fmt.Fprintf(w, "\n%s:\n", heading)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, it := range items {
			fmt.Fprintf(tw, "  %s\n", line(it))
		}
		_ = tw.Flush()
	}
}
