package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// jobSpec is one job as a crontab line or a YAML entry describes it, before
// it is registered on a Scheduler.
type jobSpec struct {
	Name     string
	Schedule string   // a cron expression or descriptor, as the scheduler reads it
	Zone     string   // IANA zone for cron schedules; "" means UTC
	Argv     []string // the command to execute (a shell line is ["sh", "-c", line])
	Stdin    string   // text fed to the command's standard input (crontab % lines)
	Env      []string // KEY=value pairs added to the child's environment
	Workdir  string   // the child's working directory; "" is the daemon's

	Options anarchon.JobOptions

	File  string         // where the job was defined
	Line  int            // the line of its definition
	Lines map[string]int // YAML: the line of each key, for errors about one option
}

// pos returns "FILE:LINE" for field (a YAML key) or for the job itself.
func (j *jobSpec) pos(field string) (string, int) {
	if l, ok := j.Lines[field]; ok && l > 0 {
		return j.File, l
	}
	return j.File, j.Line
}

// posError is a mistake in a crontab or YAML file, reported as FILE:LINE.
type posError struct {
	File string
	Line int
	Msg  string
	Err  error // the underlying error, if any (a *anarchon.ValidationError)
}

// Error returns "FILE:LINE: message".
func (e *posError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Unwrap returns the underlying error.
func (e *posError) Unwrap() error { return e.Err }

// yamlKeys maps the Field of an anarchon.ValidationError to the YAML key
// that sets it, so an error points at the right line.
var yamlKeys = map[string]string{
	"Name":           "name",
	"Schedule":       "schedule",
	"Zone":           "zone",
	"Jitter":         "jitter",
	"MaxLate":        "max_late",
	"Timeout":        "timeout",
	"HistorySize":    "history_size",
	"Lease":          "lease",
	"Overlap":        "overlap",
	"CatchUp.Window": "catch_up",
	"CatchUp.Max":    "catch_up",
	"MaxAttempts":    "max_attempts",
}

// sortByPosition orders errors by line within each file, files in the
// order they first appear, so a report reads from the top of each file
// down; errors without a position keep their order, last.
func sortByPosition(errs []error) {
	type item struct {
		file, line int
		err        error
	}
	files := map[string]int{}
	items := make([]item, len(errs))
	for i, err := range errs {
		items[i] = item{math.MaxInt, 0, err}
		var pe *posError
		if errors.As(err, &pe) {
			if _, ok := files[pe.File]; !ok {
				files[pe.File] = len(files)
			}
			items[i].file, items[i].line = files[pe.File], pe.Line
		}
	}
	slices.SortStableFunc(items, func(a, b item) int {
		if c := cmp.Compare(a.file, b.file); c != 0 {
			return c
		}
		return cmp.Compare(a.line, b.line)
	})
	for i, it := range items {
		errs[i] = it.err
	}
}

// register adds every job to s with handler(job) as its handler and returns
// one positioned error per job that the scheduler refused.
func register(s *anarchon.Scheduler, jobs []*jobSpec, handler func(*jobSpec) anarchon.Handler) []error {
	var errs []error
	first := make(map[string]*jobSpec, len(jobs))
	for _, j := range jobs {
		opts := j.Options
		opts.Zone = j.Zone
		err := s.Cron(j.Name, j.Schedule, handler(j), &opts)
		if err == nil {
			first[j.Name] = j
			continue
		}
		var ve *anarchon.ValidationError
		if !errors.As(err, &ve) {
			errs = append(errs, &posError{File: j.File, Line: j.Line, Msg: fmt.Sprintf("job %q: %v", j.Name, err), Err: err})
			continue
		}
		key := yamlKeys[ve.Field]
		if key == "" {
			key = strings.ToLower(ve.Field)
		}
		file, line := j.pos(key)
		msg := fmt.Sprintf("job %q: %s: %s", j.Name, key, ve.Reason)
		if ve.Code == anarchon.CodeDuplicateName {
			if f := first[j.Name]; f != nil {
				msg = fmt.Sprintf("job %q: duplicate name (first defined at %s:%d)", j.Name, f.File, f.Line)
			}
			file, line = j.pos("name")
		}
		errs = append(errs, &posError{File: file, Line: line, Msg: msg, Err: err})
	}
	return errs
}

// checkJobs registers jobs on a scratch scheduler over an in-memory store
// (which has leases and never forgets a claim) and returns every refusal.
// The real store may refuse more (a shorter dedupe window): run checks again.
func checkJobs(jobs []*jobSpec) []error {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{InstanceID: "validate"})
	return register(s, jobs, func(*jobSpec) anarchon.Handler { return noop })
}

func noop(context.Context, *anarchon.Run) error { return nil }

// sources are the job files a command reads.
type sources struct {
	Crontabs []string
	Configs  []string
}

// load reads every crontab and YAML file and returns their jobs and every
// mistake found in them, each as a *posError (or an I/O error).
func (src sources) load() ([]*jobSpec, []error) {
	var jobs []*jobSpec
	var errs []error
	for _, f := range src.Crontabs {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		js, es := parseCrontab(f, data)
		jobs = append(jobs, js...)
		errs = append(errs, es...)
	}
	for _, f := range src.Configs {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		js, es := parseConfig(f, data)
		jobs = append(jobs, js...)
		errs = append(errs, es...)
	}
	return jobs, errs
}

// empty reports whether no job file was given.
func (src sources) empty() bool { return len(src.Crontabs) == 0 && len(src.Configs) == 0 }

// durationOf parses a Go duration ("30s", "1h30m") for option name.
func durationOf(name, s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a Go duration (like 30s, 5m, 1h30m)", name, s)
	}
	return d, nil
}
