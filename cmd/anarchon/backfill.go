package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/spf13/cobra"
)

func backfillCmd(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	var from, to string
	var concurrency, maxSlots int
	var yes, asJSON bool
	c := &cobra.Command{
		Use:   "backfill JOB --from TIME --to TIME",
		Short: "Run a job's past slots in [from, to) that have not run, once across the replicas",
		Long: `backfill runs every slot of JOB in [--from, --to) (RFC 3339 times) that has
not run yet, here, each claimed in the store so that no slot runs twice:
slots already settled (run, missed or skipped) are skipped, and two
operators backfilling the same range run each slot once between them. It
needs --crontab or --config to know the command, and a store with leases.

Progress goes to stdout: a progress bar on a terminal, otherwise (or with
--json) one JSON object per slot, {"slot", "ran", "status", "done",
"total"} ("status" only for a slot run here), then a summary {"total",
"ran", "skipped", "failed"}. A range of more than --max-slots slots is
refused unless --yes. SIGINT or SIGTERM stops the backfill: running slots
are handed over to whoever claims them next. It exits 0 when every slot
it ran succeeded, 1 otherwise, and 2 for a range or option it refuses
before running any (with the refusal's code).`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name := args[0]
			if from == "" || to == "" {
				return usageError{codeBadFlag, errors.New("--from and --to are required: RFC 3339 times, like 2026-11-30T00:00:00Z")}
			}
			fromT, err1 := time.Parse(time.RFC3339Nano, from)
			toT, err2 := time.Parse(time.RFC3339Nano, to)
			if err := errors.Join(err1, err2); err != nil {
				return usageError{codeBadFlag, fmt.Errorf("--from and --to must be RFC 3339 times (like 2026-11-30T00:00:00Z): %v", err)}
			}
			// A backfill refused before it ran anything leaves no new
			// SQLite file behind (one the command created just to refuse).
			undo := sqliteUndo(storeOrDefault(g.store))
			d, err := openForRead(g, stderr, true, false)
			if err != nil {
				undo()
				return err
			}
			refused := true
			defer func() {
				d.close()
				if refused {
					undo()
				}
			}()
			var spec *jobSpec
			for _, j := range d.jobs {
				if j.Name == name {
					spec = j
				}
			}
			if spec == nil {
				return unknownJob(name)
			}
			if spec.Reboot {
				return codedError{codeRebootJob, fmt.Errorf("job %q is an @reboot job: it has no slots to backfill; \"anarchon run-now %s\" runs it on this host", name, name)}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			p := newBackfillPrinter(stdout, asJSON)
			res, err := d.schedFor(name).Backfill(ctx, name, fromT, toT, &anarchon.BackfillOptions{
				Concurrency: concurrency, MaxSlots: maxSlots, Confirm: yes,
				OnProgress: p.progress,
			})
			var ve *anarchon.ValidationError
			if errors.As(err, &ve) {
				// Refused before any slot ran: no summary, and the
				// reason in the words of the flags.
				// Every such refusal is about the flags' values: exit 2,
				// as for any bad flag.
				return usageError{"", &backfillInputError{ve: ve}}
			}
			if err != nil && ctx.Err() == nil {
				// The store's failure (its Init, the job's record),
				// before any slot ran: no summary, and the error in the
				// words and code run gives it.
				return storeErrorFor(err, storeOrDefault(g.store), false)
			}
			refused = false
			p.done(res)
			if err != nil {
				return err
			}
			if res.Skipped > 0 {
				trimmedNote(stderr, d.backend, spec, fromT)
			}
			if p.failed() > 0 {
				return exitError{code: 1}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&from, "from", "", "first `TIME` of the range (RFC 3339, inclusive)")
	f.StringVar(&to, "to", "", "end `TIME` of the range (RFC 3339, exclusive; not after now)")
	f.IntVar(&concurrency, "concurrency", 1, "slots run at once")
	f.IntVar(&maxSlots, "max-slots", anarchon.DefaultBackfillMaxSlots, "largest range run without --yes")
	f.BoolVar(&yes, "yes", false, "run a range of more than --max-slots slots")
	f.BoolVar(&asJSON, "json", false, "print JSON lines even on a terminal")
	return c
}

// backfillInputError is a backfill the scheduler refused before running
// any slot, told in the command's terms (--from, --to, --concurrency …)
// rather than BackfillOptions' field names; its code is kept.
type backfillInputError struct{ ve *anarchon.ValidationError }

func (e *backfillInputError) Error() string {
	r := e.ve.Reason
	switch e.ve.Code {
	case anarchon.CodeBadOption:
		if e.ve.Field == "Concurrency" {
			r = "--concurrency and --max-slots must not be negative"
		}
	case anarchon.CodeBadRange, anarchon.CodeDedupeWindow:
		// The reasons begin "from T …" or "to T …" and may name the other.
		r = strings.Replace(r, " is not before to ", " is not before --to ", 1)
		if strings.HasPrefix(r, "from ") || strings.HasPrefix(r, "to ") {
			r = "--" + r
		}
		r = strings.Replace(r, "the backend's dedupe window", "the store's dedupe window", 1)
	case anarchon.CodeTooManySlots:
		r = strings.Replace(r, "; confirm to run them all", ": pass --yes to run them all, or raise --max-slots", 1)
	}
	return fmt.Sprintf("job %q: %s (%s)", e.ve.Job, r, e.ve.Code)
}

func (e *backfillInputError) Unwrap() error { return e.ve }

// backfillPrinter shows a backfill's progress: a bar redrawn in place on a
// terminal, JSON lines otherwise.
type backfillPrinter struct {
	mu   sync.Mutex
	w    io.Writer
	bar  bool
	ran  int
	fail int
}

func newBackfillPrinter(w io.Writer, asJSON bool) *backfillPrinter {
	return &backfillPrinter{w: w, bar: !asJSON && isTerminal(w)}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

type backfillLine struct {
	Slot   string `json:"slot"`
	Ran    bool   `json:"ran"`
	Status string `json:"status,omitempty"`
	Done   int    `json:"done"`
	Total  int    `json:"total"`
}

func (p *backfillPrinter) progress(bp anarchon.BackfillProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if bp.Ran {
		p.ran++
		if bp.Status != anarchon.StatusSuccess {
			p.fail++
		}
	}
	if !p.bar {
		line, _ := json.Marshal(backfillLine{Slot: formatSlot(bp.Slot), Ran: bp.Ran, Status: string(bp.Status), Done: bp.Done, Total: bp.Total})
		fmt.Fprintf(p.w, "%s\n", line)
		return
	}
	const width = 30
	filled := width * bp.Done / max(bp.Total, 1)
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d  ran %d  failed %d  %s",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), bp.Done, bp.Total, p.ran, p.fail, formatSlot(bp.Slot))
}

func (p *backfillPrinter) failed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fail
}

func (p *backfillPrinter) done(res anarchon.BackfillResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar {
		fmt.Fprintf(p.w, "\n%d slots: %d ran here (%d failed), %d skipped (settled, or run elsewhere)\n", res.Total, res.Ran, p.fail, res.Skipped)
		return
	}
	line, _ := json.Marshal(map[string]int{"total": res.Total, "ran": res.Ran, "skipped": res.Skipped, "failed": p.fail})
	fmt.Fprintf(p.w, "%s\n", line)
}

// trimmedNote says, after a backfill that skipped slots, when the range
// starts before the oldest record the store keeps of the job and its
// history is full: the store trimmed what it knew of older slots and
// answers each of them done (SPEC §4, the watermark; §6, backfill), so
// those were skipped unrun, not because they ran.
func trimmedNote(w io.Writer, b anarchon.Backend, j *jobSpec, from time.Time) {
	size := j.Options.HistorySize
	if size <= 0 {
		size = anarchon.DefaultHistorySize
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs, err := b.History(ctx, j.Name, size)
	if err != nil || len(recs) < size {
		return
	}
	oldest := recs[len(recs)-1].Slot
	if !from.Before(oldest) {
		return
	}
	fmt.Fprintf(w, "note: slots before %s, the oldest of the %d records the store keeps of %q (history_size), count as done: the store keeps a mark in place of older slots, so those were skipped whether or not they ran; a larger history_size keeps more\n",
		formatTime(oldest), size, j.Name)
}
