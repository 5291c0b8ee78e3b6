package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
	User     string   // the account the command runs as; "" is the daemon's own
	Reboot   bool     // @reboot: run once when the daemon starts, never on a schedule
	Unnamed  bool     // the name is a hash of the line (no "# name:")

	PermanentExit []int     // YAML retry.permanent_exit_codes: exits not retried
	At            time.Time // YAML at: a one-off job's time; zero for others

	account *account // User, resolved by resolveUsers

	Options anarchon.JobOptions

	File    string         // where the job was defined
	Line    int            // the line of its definition
	Lines   map[string]int // YAML: the line of each key, for errors about one option; crontab: the "# name:" comment's, under "name"
	Crontab bool           // defined by a crontab line, not a YAML entry
}

// pos returns "FILE:LINE" for field (a YAML key) or for the job itself.
func (j *jobSpec) pos(field string) (string, int) {
	if l, ok := j.Lines[field]; ok && l > 0 {
		return j.File, l
	}
	return j.File, j.Line
}

// namedAt returns where a job is pointed at when its name is shared with
// another job's: a YAML job's name key, but a crontab job's own line, where
// every other error about the job points. (A crontab job's "# name:"
// comment is where mistakes in the name itself are reported; a shared name
// is a mistake of the two jobs, and their lines are what a reader looks for.)
func (j *jobSpec) namedAt() (string, int) {
	if j.Crontab {
		return j.File, j.Line
	}
	return j.pos("name")
}

// Codes of mistakes in job files that are not the library's validation
// codes (a job the library refuses has its ValidationError's code:
// bad_cron, unknown_zone, duplicate_name …).
const (
	codeBadLine = "bad_line" // a crontab line that cannot be read: time fields, user column, command
	codeBadYAML = "bad_yaml" // a YAML file or job that cannot be read: syntax, an unknown key, a value of the wrong kind
	codeBadUser = "bad_user" // a job's user does not exist, or is another than the daemon's own and the daemon is not root
	codeNoJobs  = "no_jobs"  // the files hold no job: run would have nothing to schedule
	codeNoFile  = "no_file"  // a --crontab or --config file, a --crontab-dir, or a --store-file or --http-token-file, that does not exist or cannot be read
)

// errNoJobs is the error of files that hold no job (an empty crontab, a
// --crontab-dir whose files are all skipped): validate and run alike.
var errNoJobs = codedError{codeNoJobs, errors.New("no jobs in the given files: run would have nothing to schedule")}

// noFile is the error of a file a flag names (a job file, a
// --crontab-dir, a --store-file or --http-token-file) that cannot be
// read: the I/O error ("open FILE: no such file or directory") with the
// code no_file.
func noFile(err error) error { return codedError{codeNoFile, err} }

// isNoFile reports whether err is a file that cannot be read (no_file).
func isNoFile(err error) bool {
	var ce codedError
	return errors.As(err, &ce) && ce.code == codeNoFile
}

// posError is a mistake in a crontab or YAML file, reported as FILE:LINE.
type posError struct {
	File string
	Line int
	Msg  string
	Code string // stable kind of a mistake, printed after it as "(code)"; warnings have none
	Err  error  // the underlying error, if any (a *anarchon.ValidationError)

	Warning bool // a warning: reported, but the file is still used

	// unscheduled is the job a warning left out of the schedule (a
	// one-off whose time has passed), for the daemon to drop it.
	unscheduled *jobSpec
	// jobs are the jobs a mistake makes invalid (a crontab's unknown
	// CRON_TZ: every job line under it), and entry the line of a crontab
	// job line or YAML job that could not be read as a job at all, for
	// validate's count of invalid jobs.
	jobs  []*jobSpec
	entry int
}

// Error returns "FILE:LINE: message (code)" ("FILE:LINE: warning:
// message" for a warning).
func (e *posError) Error() string {
	msg := e.Msg
	if e.Warning {
		msg = "warning: " + msg
	} else if e.Code != "" {
		msg += " (" + e.Code + ")"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, msg)
	}
	return fmt.Sprintf("%s: %s", e.File, msg)
}

// splitWarnings separates warnings from errors.
func splitWarnings(all []error) (errs, warns []error) {
	for _, e := range all {
		var pe *posError
		if errors.As(e, &pe) && pe.Warning {
			warns = append(warns, e)
			continue
		}
		errs = append(errs, e)
	}
	return errs, warns
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
	"OverlapLimit":   "overlap",
	"CatchUp.Window": "catch_up",
	"CatchUp.Max":    "catch_up",
	"MaxAttempts":    "max_attempts",

	"Retry.MaxRetries":     "retry",
	"Retry.InitialBackoff": "retry",
	"Retry.MaxBackoff":     "retry",
	"Retry.Multiplier":     "retry",
	"Retry.Jitter":         "retry",
}

// yamlSubKeys names the key inside a mapping that sets a Field, for the
// message (yamlKeys gives the line: the mapping's).
var yamlSubKeys = map[string]string{
	"Retry.MaxRetries":     "retry.max_retries",
	"Retry.InitialBackoff": "retry.initial_backoff",
	"Retry.MaxBackoff":     "retry.max_backoff",
	"Retry.Multiplier":     "retry.multiplier",
	"Retry.Jitter":         "retry.jitter",
	"CatchUp.Window":       "catch_up.window",
	"CatchUp.Max":          "catch_up.max",
}

// goOptionNames are the option names of anarchon.JobOptions that the
// scheduler's reasons quote ("5s is below InitialBackoff 10s", "Jitter 2m
// is not below MaxLate 1m"), with the YAML key that sets each: a reason
// read against a job file names the keys of that file (yamlReason).
var goOptionNames = []struct{ goName, key string }{
	{"Retry.MaxRetries", "retry.max_retries"},
	{"Retry.InitialBackoff", "retry.initial_backoff"},
	{"Retry.MaxBackoff", "retry.max_backoff"},
	{"Retry.Multiplier", "retry.multiplier"},
	{"Retry.Jitter", "retry.jitter"},
	{"CatchUp.Window", "catch_up.window"},
	{"CatchUp.Max", "catch_up.max"},
	{"MaxRetries", "retry.max_retries"},
	{"InitialBackoff", "retry.initial_backoff"},
	{"MaxBackoff", "retry.max_backoff"},
	{"MaxLate", "max_late"},
	{"MaxAttempts", "max_attempts"},
	{"HistorySize", "history_size"},
	{"Jitter", "jitter"},
	{"Lease", "lease"},
	{"Timeout", "timeout"},
}

// goOptionName matches the goOptionNames as whole words, the longest
// first (Retry.Jitter before Jitter).
var goOptionName = func() *regexp.Regexp {
	alts := make([]string, len(goOptionNames))
	for i, n := range goOptionNames {
		alts[i] = regexp.QuoteMeta(n.goName)
	}
	return regexp.MustCompile(`\b(?:` + strings.Join(alts, "|") + `)\b`)
}()

// yamlReason is the scheduler's reason for refusing a job (ve.Reason) in
// the words of the job files: the option names it quotes become the YAML
// keys that set them. A reason that quotes the user's own text (a cron
// expression, a zone name) or a store's (a backend's refusal) is left as
// it is.
func yamlReason(ve *anarchon.ValidationError, reason string) string {
	switch ve.Code {
	case anarchon.CodeBadCron, anarchon.CodeUnknownZone, anarchon.CodeBackendRefused:
		return reason
	}
	// MinMaxLate, a Go constant, follows the floor it is.
	reason = strings.ReplaceAll(reason, " (MinMaxLate)", "")
	return goOptionName.ReplaceAllStringFunc(reason, func(m string) string {
		for _, n := range goOptionNames {
			if n.goName == m {
				return n.key
			}
		}
		return m
	})
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
// one positioned error per job that the scheduler refused. @reboot jobs go
// to reboot instead, a scheduler that is never started (RunNow runs them),
// under a placeholder schedule.
func register(s, reboot *anarchon.Scheduler, jobs []*jobSpec, handler func(*jobSpec) anarchon.Handler) []error {
	var errs []error
	first := make(map[string]*jobSpec, len(jobs)) // the first valid job of each name
	named := make(map[string]*jobSpec, len(jobs)) // the first job of each name, valid or not
	for _, j := range jobs {
		if named[j.Name] == nil {
			named[j.Name] = j
		}
		opts := j.Options
		opts.Zone = j.Zone
		opts.Fingerprint = fingerprintMaterial(j)
		var err error
		switch {
		case !j.Reboot:
			if f := first[j.Name]; f != nil && f.Reboot {
				err = &anarchon.ValidationError{Code: anarchon.CodeDuplicateName, Field: "Name", Reason: "duplicate"}
				break
			}
			if !j.At.IsZero() {
				err = s.At(j.Name, j.At, handler(j), &opts)
				break
			}
			err = s.Cron(j.Name, j.Schedule, handler(j), &opts)
		case first[j.Name] != nil:
			err = &anarchon.ValidationError{Code: anarchon.CodeDuplicateName, Field: "Name", Reason: "duplicate"}
		default:
			err = reboot.Cron(j.Name, "@yearly", handler(j), &opts)
		}
		if err == nil {
			if n := named[j.Name]; n != j && first[j.Name] == nil {
				// An invalid job before it has its name: once that one
				// is mended, the two are duplicates. Said now, not then.
				nf, nl := n.namedAt()
				file, line := j.namedAt()
				errs = append(errs, &posError{File: file, Line: line, Warning: true, Msg: fmt.Sprintf(
					"job %q: the invalid job at %s:%d has this name too: once it is mended, the two are duplicates; rename one of them", j.Name, nf, nl)})
			}
			first[j.Name] = j
			continue
		}
		var ve *anarchon.ValidationError
		if !errors.As(err, &ve) {
			errs = append(errs, &posError{File: j.File, Line: j.Line, Msg: fmt.Sprintf("job %q: %v", j.Name, err), Err: err, jobs: []*jobSpec{j}})
			continue
		}
		key := yamlKeys[ve.Field]
		if key == "" {
			key = strings.ToLower(ve.Field)
		}
		if key == "schedule" && !j.At.IsZero() {
			key = "at"
		}
		if ve.Code == anarchon.CodeTooLate {
			// A one-off job that has had its time: left in the file after
			// it ran, most likely. Not an error, or the file could never
			// be loaded again.
			file, line := j.pos("at")
			errs = append(errs, &posError{File: file, Line: line, Warning: true, Err: err, unscheduled: j,
				Msg: fmt.Sprintf("job %q: at: %s; the job is not scheduled", j.Name, yamlReason(ve, ve.Reason))})
			continue
		}
		file, line := j.pos(key)
		// The message names the key inside the mapping (retry.max_backoff)
		// where the line is the mapping's.
		name, reason := key, yamlReason(ve, scheduleReason(ve))
		if n := yamlSubKeys[ve.Field]; n != "" {
			name = n
		}
		if ve.Field == "OverlapLimit" {
			// The file sets OverlapLimit only with "limit N".
			name = fmt.Sprintf("overlap: limit %d", j.Options.OverlapLimit)
			reason = "the limit must be at least 1"
			if j.Options.OverlapLimit > anarchon.MaxOverlapLimit {
				reason = fmt.Sprintf("the limit must be at most %d", anarchon.MaxOverlapLimit)
			}
		}
		msg := fmt.Sprintf("job %q: %s: %s", j.Name, name, reason)
		if ve.Code == anarchon.CodeDuplicateName {
			if f := first[j.Name]; f != nil {
				// Both at the job: its crontab line, or YAML's
				// name key.
				ff, fl := f.namedAt()
				msg = fmt.Sprintf("job %q: duplicate name (first defined at %s:%d); a name is one job's across every job file: rename one of them", j.Name, ff, fl)
				if j.Unnamed && f.Unnamed {
					// a name no one chose: the hash of two equal lines
					msg = fmt.Sprintf("job %q: the same unnamed line as at %s:%d, so the same hashed name: give each line a \"# name:\" to run both, or remove one", j.Name, ff, fl)
				}
			}
			file, line = j.namedAt()
		}
		errs = append(errs, &posError{File: file, Line: line, Msg: msg, Code: string(ve.Code), Err: err, jobs: []*jobSpec{j}})
	}
	return errs
}

// withoutUnscheduled returns jobs less those that a warning of register
// left out of the schedule.
func withoutUnscheduled(jobs []*jobSpec, warns []error) []*jobSpec {
	drop := map[*jobSpec]bool{}
	for _, w := range warns {
		var pe *posError
		if errors.As(w, &pe) && pe.unscheduled != nil {
			drop[pe.unscheduled] = true
		}
	}
	if len(drop) == 0 {
		return jobs
	}
	out := make([]*jobSpec, 0, len(jobs))
	for _, j := range jobs {
		if !drop[j] {
			out = append(out, j)
		}
	}
	return out
}

// checkJobs registers jobs on a scratch scheduler over an in-memory store
// (which has leases and never forgets a claim) and returns every refusal.
// The real store may refuse more (a shorter dedupe window): run checks again.
func checkJobs(jobs []*jobSpec) []error {
	_, errs := scratchSchedule(jobs)
	return errs
}

// scratchSchedule is checkJobs that also returns the scratch scheduler
// the jobs were registered on (never started), whose NextSlots are the
// times run computes for them (next JOB).
func scratchSchedule(jobs []*jobSpec) (*anarchon.Scheduler, []error) {
	b := membackend.New(nil)
	s := anarchon.New(b, &anarchon.Options{InstanceID: "validate"})
	r := anarchon.New(b, &anarchon.Options{InstanceID: "validate"})
	return s, register(s, r, jobs, func(*jobSpec) anarchon.Handler { return noop })
}

func noop(context.Context, *anarchon.Run) error { return nil }

// sources are the job files a command reads.
type sources struct {
	Crontabs    []string
	CrontabDirs []string // every file of these directories is a system crontab (as /etc/cron.d)
	Configs     []string
	Format      string // --format: auto, user, system or supercronic
	SixFields   string // --six-fields: seconds or year ("" is the format's default)
}

// fileInfo says how one file was read, for validate's report.
type fileInfo struct {
	File    string
	Format  string // user, system, supercronic or yaml
	Why     string // how the format was chosen
	Jobs    int    // the jobs read; countJobs leaves the valid ones
	Invalid int    // set by countJobs: jobs refused, and job lines or YAML jobs not read
}

// String is one line of validate's report: "…, 4 jobs", or with invalid
// ones "…, 3 valid jobs, 1 invalid".
func (f fileInfo) String() string {
	jobs := plural(f.Jobs, "job")
	if f.Invalid > 0 {
		jobs = fmt.Sprintf("%s, %d invalid", plural(f.Jobs, "valid job"), f.Invalid)
	}
	if f.Format == "yaml" {
		return fmt.Sprintf("%s: YAML, %s", f.File, jobs)
	}
	return fmt.Sprintf("%s: %s crontab (%s), %s", f.File, f.Format, f.Why, jobs)
}

// countJobs moves the jobs of each file that a mistake in errs makes
// invalid from Jobs to Invalid, and adds the job lines and YAML jobs that
// could not be read as jobs at all.
func countJobs(infos []fileInfo, errs []error) {
	bad := map[*jobSpec]bool{}
	lost := map[string]map[int]bool{}
	for _, e := range errs {
		var pe *posError
		if !errors.As(e, &pe) || pe.Warning {
			continue
		}
		for _, j := range pe.jobs {
			bad[j] = true
		}
		if len(pe.jobs) == 0 && pe.entry > 0 {
			if lost[pe.File] == nil {
				lost[pe.File] = map[int]bool{}
			}
			lost[pe.File][pe.entry] = true
		}
	}
	for i := range infos {
		f := &infos[i]
		for j := range bad {
			if j.File == f.File {
				f.Jobs--
				f.Invalid++
			}
		}
		f.Invalid += len(lost[f.File])
	}
}

// load reads every crontab and YAML file and returns their jobs, every
// mistake and warning found in them, each as a *posError (or, for a file
// that cannot be read, a no_file error), and how each file was read. A line that runs as another user is
// checked here (resolveUsers), so it is an error before anything runs.
func (src sources) load() ([]*jobSpec, []error, []fileInfo) {
	var jobs []*jobSpec
	var errs []error
	var infos []fileInfo
	switch src.Format {
	case "", formatAuto, formatUser, formatSystem, formatSupercronic:
	default:
		return nil, []error{usageError{codeBadFlag, fmt.Errorf("--format %q: want auto, user, system or supercronic", src.Format)}}, nil
	}
	switch src.SixFields {
	case "", sixSeconds, sixYear:
	default:
		return nil, []error{usageError{codeBadFlag, fmt.Errorf("--six-fields %q: want seconds or year", src.SixFields)}}, nil
	}
	type crontabFile struct {
		path    string
		fromDir bool
	}
	var files []crontabFile
	for _, f := range src.Crontabs {
		files = append(files, crontabFile{f, false})
	}
	for _, d := range src.CrontabDirs {
		names, skipped, err := crontabDirFiles(d)
		if err != nil {
			errs = append(errs, noFile(err))
			continue
		}
		errs = append(errs, skipped...)
		for _, n := range names {
			files = append(files, crontabFile{n, true})
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f.path)
		if err != nil && f.fromDir {
			// A file of a directory that cannot be read (a dangling
			// link, no permission) is skipped with a warning, as cron
			// skips it, and the directory's other files still run.
			msg := "skipped: " + err.Error()
			if to, lerr := os.Readlink(f.path); lerr == nil && errors.Is(err, fs.ErrNotExist) {
				msg = fmt.Sprintf("skipped: a link to %s, which does not exist", to)
			}
			errs = append(errs, &posError{File: f.path, Warning: true, Msg: msg})
			continue
		}
		if err != nil {
			errs = append(errs, noFile(err))
			continue
		}
		format, why := src.Format, "--format "+src.Format
		if format == "" || format == formatAuto {
			format, why = detectFormat(f.path, f.fromDir)
		}
		opts := crontabOptions{Format: format, SixFields: src.SixFields}
		js, es, six := parseCrontabWith(f.path, data, opts)
		if six {
			why += ", six fields: " + opts.sixFields() + " reading"
		}
		jobs = append(jobs, js...)
		errs = append(errs, es...)
		if !opts.system() {
			errs = append(errs, userColumnWarnings(js)...)
		}
		infos = append(infos, fileInfo{File: f.path, Format: format, Why: why, Jobs: len(js)})
	}
	for _, f := range src.Configs {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, noFile(err))
			continue
		}
		js, es := parseConfig(f, data)
		jobs = append(jobs, js...)
		errs = append(errs, es...)
		infos = append(infos, fileInfo{File: f, Format: "yaml", Jobs: len(js)})
	}
	errs = append(errs, resolveUsers(jobs)...)
	errs = append(errs, startWarnings(jobs)...)
	return jobs, errs, infos
}

// startWarnings warns about each job whose command cannot start on this
// machine as written: its program (the SHELL a crontab line runs with,
// or a YAML command's first word) is not there, or its workdir is not a
// directory. Warnings, not errors: the replicas may be other machines
// than the one that validates, and a program can be installed later; but
// on this one every run of the job would fail to start.
func startWarnings(jobs []*jobSpec) []error {
	var out []error
	for _, j := range jobs {
		// At the YAML key where there is one, else at the job's line.
		warn := func(field, format string, args ...any) {
			file, line := j.pos(field)
			out = append(out, &posError{File: file, Line: line, Warning: true,
				Msg: fmt.Sprintf("job %q: ", j.Name) + fmt.Sprintf(format, args...) + ": every run of it here would fail to start"})
		}
		if j.Workdir != "" {
			if fi, err := os.Stat(j.Workdir); err != nil {
				warn("workdir", "workdir %q does not exist or cannot be read (%v)", j.Workdir, errors.Unwrap(err))
			} else if !fi.IsDir() {
				warn("workdir", "workdir %q is not a directory", j.Workdir)
			}
		}
		if len(j.Argv) == 0 {
			continue
		}
		prog, field, what := j.Argv[0], "command", "program"
		if len(j.Argv) == 3 && j.Argv[1] == "-c" {
			field, what = "shell", "shell" // a crontab's SHELL=, or YAML's shell:
		}
		path := envValue(j.Env, "PATH")
		switch _, err := lookProgram(prog, path, j.Workdir); {
		case err == nil:
		case path != "" && !strings.Contains(prog, "/"):
			warn(field, "its %s %q is not an executable file in the job's PATH %s", what, prog, path)
		default:
			warn(field, "its %s %q is not an executable file on this machine", what, prog)
		}
	}
	return out
}

// lookProgram finds the file a job's program names, as the executor
// starts it: prog itself when it has a slash; else in path's directories,
// the job's own PATH (a crontab's PATH= line, YAML env), as a shell
// would look it up; else, when the job sets no PATH, in the daemon's. A
// relative name with a slash, and a relative directory of path, are taken
// from workdir when the job has one, as exec.Cmd takes a relative Path
// from its Dir.
func lookProgram(prog, path, workdir string) (string, error) {
	in := func(f string) string {
		if workdir != "" && !filepath.IsAbs(f) {
			return filepath.Join(workdir, f)
		}
		return f
	}
	if strings.Contains(prog, "/") {
		return exec.LookPath(in(prog))
	}
	if path == "" {
		return exec.LookPath(prog)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		f := in(filepath.Join(dir, prog))
		if fi, err := os.Stat(f); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return f, nil
		}
	}
	return "", fmt.Errorf("%q not found in the job's PATH %s", prog, path)
}

// envValue is the value of key in env's KEY=value pairs, the last one
// set; "" when unset.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// resolveUsers looks up the user of every job that names one and returns an
// error for each that cannot run as written: an unknown user, or another
// user than the daemon's own when the daemon is not root.
func resolveUsers(jobs []*jobSpec) []error {
	var errs []error
	cache := map[string]*account{}
	failed := map[string]error{}
	for _, j := range jobs {
		if j.User == "" {
			continue
		}
		a, ok := cache[j.User]
		err := failed[j.User]
		if !ok && err == nil {
			a, err = resolveUser(j.User)
			if err != nil {
				failed[j.User] = err
			} else {
				cache[j.User] = a
			}
		}
		if err != nil {
			file, line := j.pos("user")
			errs = append(errs, &posError{File: file, Line: line, Msg: fmt.Sprintf("job %q: %v", j.Name, err), Code: codeBadUser, Err: err, jobs: []*jobSpec{j}})
			continue
		}
		j.account = a
	}
	return errs
}

// cronDirName is the file names cron reads from /etc/cron.d (Debian's
// run-parts rule): editor backups, package manager leftovers (.dpkg-old)
// and dot files are skipped.
var cronDirName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// crontabDirFiles lists the crontab files of dir, sorted by name, and
// a warning for each other file it skips, so that a crontab named
// "backup.cron" is not left out unnoticed. Dot files are skipped without
// one: Debian ships /etc/cron.d/.placeholder.
func crontabDirFiles(dir string) (files []string, skipped []error, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("--crontab-dir: %w", err)
	}
	taken := map[string]bool{} // names in dir, and names suggested already
	read := map[string]bool{}  // names cron reads
	stems := map[string][]string{}
	for _, e := range entries {
		name := e.Name()
		taken[name] = true
		switch {
		case e.IsDir() || strings.HasPrefix(name, "."):
		case cronDirName.MatchString(name):
			read[name] = true
		case !leftover(name):
			stems[cronDirStem(name)] = append(stems[cronDirStem(name)], name)
		}
	}
	for _, e := range entries {
		switch {
		case e.IsDir() || strings.HasPrefix(e.Name(), "."):
		case !cronDirName.MatchString(e.Name()):
			msg := "skipped: cron reads only files named with letters, digits, _ and - from a crontab directory (run-parts' rule), and so does --crontab-dir"
			stem := cronDirStem(e.Name())
			switch {
			case leftover(e.Name()):
				msg += "; it looks like a copy a package manager or an editor left: remove it, or give it such a name if it is to run"
			case len(stems[stem]) > 1 && read[stem]:
				msg += fmt.Sprintf("; %s look like other versions of %q, which is read: remove them, or give one a name no other file has to run it too",
					quoteList(stems[stem]), stem)
			case len(stems[stem]) > 1:
				// job.v1 and job.v2: renaming both would run both
				msg += fmt.Sprintf("; %s look like versions of one job %q: rename the one that is to run %q and remove the others",
					quoteList(stems[stem]), stem, stem)
			case read[stem]:
				// backup.cron beside backup: an old copy, or a second job
				to := "a name no other file has"
				if name := cronDirRename(e.Name(), taken); name != "" {
					taken[name] = true
					to = strconv.Quote(name)
				}
				msg += fmt.Sprintf("; %q is read: if this is another version of it, remove it; to run both, rename it %s", stem, to)
			default:
				if to := cronDirRename(e.Name(), taken); to != "" {
					taken[to] = true
					msg += "; rename it " + strconv.Quote(to) + " to have it read"
				} else {
					msg += "; give it such a name, one no other file has, to have it read"
				}
			}
			skipped = append(skipped, &posError{File: filepath.Join(dir, e.Name()), Warning: true, Msg: msg})
		default:
			path := filepath.Join(dir, e.Name())
			if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
				// cron reads regular files only; a FIFO would block the
				// read (and the daemon's start) until something writes.
				skipped = append(skipped, &posError{File: path, Warning: true,
					Msg: fmt.Sprintf("skipped: %s, not a regular file: cron reads only regular files from a crontab directory, and so does --crontab-dir", fileKind(st.Mode()))})
				continue
			}
			files = append(files, path)
		}
	}
	return files, skipped, nil
}

// fileKind names the kind of a file that is not a regular one.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// leftover reports whether name is a copy that a package manager (dpkg,
// ucf, rpm) or an editor leaves beside a file: not to be read, nor
// renamed into a name that would be.
func leftover(name string) bool {
	for _, suffix := range []string{".dpkg-old", ".dpkg-new", ".dpkg-dist", ".dpkg-tmp", ".dpkg-bak",
		".ucf-old", ".ucf-new", ".ucf-dist", ".rpmsave", ".rpmnew", ".rpmorig", "~", ".bak", ".orig", ".swp"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// cronDirRename suggests a name that a crontab directory's file named
// name would be read under and that no name in taken has: name without
// its extension ("backup.cron" becomes "backup", as Debian's packages
// name their files), else the whole name ("backup_cron"), each character
// run-parts refuses made "_"; "" when both are taken.
func cronDirRename(name string, taken map[string]bool) string {
	for _, to := range []string{cronDirStem(name), cronDirSafe(name)} {
		if to != "" && !taken[to] {
			return to
		}
	}
	return ""
}

// quoteList quotes names and joins them: "a" and "b", or "a", "b" and "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// cronDirStem is name without its extension, made a name cron reads
// (cronDirSafe): the name its file is most likely meant to have.
func cronDirStem(name string) string {
	return cronDirSafe(strings.TrimSuffix(name, filepath.Ext(name)))
}

// cronDirSafe is s with each character run-parts refuses made "_".
func cronDirSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// detectFormat chooses the format of a crontab given without --format:
// system for /etc/crontab, files in /etc/cron.d and files of --crontab-dir
// (where cron itself expects the user column), user otherwise. Only the
// path decides: a user column cannot be told from a command with
// certainty, so a line that looks like one gets a warning instead
// (userColumnWarnings).
func detectFormat(path string, fromDir bool) (format, why string) {
	clean := filepath.Clean(path)
	switch {
	case fromDir:
		return formatSystem, "detected: a --crontab-dir file"
	case clean == "/etc/crontab":
		return formatSystem, "detected: /etc/crontab"
	case filepath.Dir(clean) == "/etc/cron.d":
		return formatSystem, "detected: a file of /etc/cron.d"
	}
	return formatUser, "detected: not a system crontab path"
}

// userColumnWarnings warns about each job of a user crontab whose command
// starts with the name of a user of this machine that is not a command:
// most likely a system crontab given without --format system, whose user
// column would run as the command. It is a warning, not a detection: a
// script named like an account ("backup") may be on the job's own PATH.
func userColumnWarnings(jobs []*jobSpec) []error {
	var out []error
	for _, j := range jobs {
		if len(j.Argv) != 3 {
			continue
		}
		first, _ := splitFields(j.Argv[2], 1)
		if looksLikeUser(first[0]) {
			out = append(out, &posError{File: j.File, Line: j.Line, Warning: true, Msg: fmt.Sprintf(
				"the command starts with %q, a user of this machine and no command: if this is a system crontab (a user column, as /etc/crontab and /etc/cron.d), give --format system", first[0])})
		}
	}
	return out
}

// looksLikeUser reports whether word names an account here and no command.
func looksLikeUser(word string) bool {
	if word == "" || strings.ContainsAny(word, "/=$'\"") {
		return false
	}
	if _, err := user.Lookup(word); err != nil {
		return false
	}
	_, err := exec.LookPath(word)
	return err != nil
}

// describe names the job files as they were given: "--crontab a.cron,
// --crontab-dir /etc/cron.d, --config b.yaml".
func (src sources) describe() string {
	var parts []string
	for _, f := range src.Crontabs {
		parts = append(parts, "--crontab "+f)
	}
	for _, d := range src.CrontabDirs {
		parts = append(parts, "--crontab-dir "+d)
	}
	for _, f := range src.Configs {
		parts = append(parts, "--config "+f)
	}
	return strings.Join(parts, ", ")
}

// empty reports whether no job file was given.
func (src sources) empty() bool {
	return len(src.Crontabs) == 0 && len(src.Configs) == 0 && len(src.CrontabDirs) == 0
}

// durationOf parses a Go duration ("30s", "1h30m") for option name.
func durationOf(name, s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a Go duration (like 30s, 5m, 1h30m)", name, s)
	}
	return d, nil
}
