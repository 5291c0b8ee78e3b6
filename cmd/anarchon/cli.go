package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var exitStatus = regexp.MustCompile(`\bexit status (\d+)`)

// exitCode is run-now's exit status for a failed run's error text: the
// command's own exit status, 128+N for signal N, else 1.
func exitCode(errText string) int {
	if m := exitStatus.FindStringSubmatch(errText); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 && n < 256 {
			return n
		}
	}
	for n := 1; n < 32; n++ {
		if strings.Contains(errText, "signal: "+syscall.Signal(n).String()) {
			return 128 + n
		}
	}
	return 1
}

// buildVersion is set at link time with -ldflags "-X main.buildVersion=v1.2.3";
// otherwise the module version from the build info is shown: the release
// for go install …/cmd/anarchon@v1.2.3, "(devel)" for a build in the tree.
// anarchon --version and the version command print it with the Go release
// and platform (versionLine).
var buildVersion = ""

// versionLine is what --version and the version command print: the
// release, the Go release and the platform.
func versionLine() string {
	return fmt.Sprintf("anarchon %s %s %s/%s", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// globalFlags are the flags every command shares.
type globalFlags struct {
	store       string
	storeFile   string // --store-file: the store URL is read from it
	passSecrets bool   // --pass-secrets: jobs get the store's credential variables
	maxLogBytes int64  // --max-log-bytes: output logged per run
	crontabs    []string
	crontabDirs []string
	configs     []string
	format      string
	sixFields   string
	instance    string
	logFormat   string
	logLevel    string
	splitLogs   bool
	passthrough bool

	output outputOptions // where commands' output goes, set by logger

	mustExist bool // set by openForRead: the store is opened to create nothing
}

func (g *globalFlags) sources() sources {
	return sources{Crontabs: g.crontabs, CrontabDirs: g.crontabDirs, Configs: g.configs, Format: g.format, SixFields: g.sixFields}
}

// logger builds the slog logger the flags ask for, writing to w, and routes
// the store clients' own log lines to it.
func (g *globalFlags) logger(w io.Writer) (*slog.Logger, error) {
	log, err := g.newLogger(w)
	if err != nil {
		return nil, err
	}
	clientLog.Store(log)
	return log, nil
}

// newLogger builds a logger on w as the flags ask.
func (g *globalFlags) newLogger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	switch strings.ToLower(g.logLevel) {
	case "debug":
		level = slog.LevelDebug
	case "info", "":
		level = slog.LevelInfo
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, usageError{codeBadFlag, fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevel)}
	}
	// Every string and error a log record carries passes the scrubber,
	// so a driver's error repeating the store's password never reaches
	// the log.
	raw := g.store
	jsonLog := strings.ToLower(g.logFormat) == "json"
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		switch a.Value.Kind() {
		case slog.KindTime:
			// The JSON handler writes a time as RFC 3339 with its
			// trailing zeros cut (a slot at .860 as .86Z); the text
			// handler, history and status write milliseconds, always
			// three digits. The record's own time keeps its precision.
			if jsonLog && (len(groups) > 0 || a.Key != slog.TimeKey) {
				a.Value = slog.StringValue(a.Value.Time().Format("2006-01-02T15:04:05.000Z07:00"))
			}
		case slog.KindString:
			if s := a.Value.String(); raw != "" && s != "" {
				a.Value = slog.StringValue(scrub(s, raw))
			}
		case slog.KindAny:
			if err, ok := a.Value.Any().(error); ok && raw != "" {
				a.Value = slog.StringValue(scrub(err.Error(), raw))
			}
		}
		return a
	}}
	switch strings.ToLower(g.logFormat) {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageError{codeBadFlag, fmt.Errorf("--log-format %q: want text or json", g.logFormat)}
}

// exitError ends the program with a code: after its message was
// printed, or, with err set, printing err as every other error.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Codes of usage errors (exit status 2), printed as "(code)" at the end
// of the message's first line; stable, like the other codes.
const (
	codeUnknownCommand = "unknown_command" // no command of this name
	codeUnknownFlag    = "unknown_flag"    // no flag of this name on the command
	codeBadArguments   = "bad_arguments"   // too many or too few arguments for the command
	codeBadFlag        = "bad_flag"        // a flag's value cannot be used, a required one is missing, or two exclude each other
)

// codeListenFailed: run's --http address cannot be bound (exit 1).
const codeListenFailed = "listen_failed"

// usageError is a command line that cannot be understood: exit status 2.
// Its message ends in its code; an error that carries a code of its own
// (a ValidationError of backfill's options) is given the code "".
type usageError struct {
	code string
	err  error
}

// Error returns the message with " (code)" at the end of its first line:
// cobra's suggestions ("Did you mean this?") follow on further lines.
func (e usageError) Error() string {
	if e.code == "" {
		return e.err.Error()
	}
	return withCode(e.err.Error(), e.code)
}

// withCode puts " (code)" at the end of msg's first line, where the README
// says every error's code stands: a message of several lines (cobra's
// suggestions, a PostgreSQL error's detail and hint) keeps the rest below.
func withCode(msg, code string) string {
	first, rest, more := strings.Cut(msg, "\n")
	if !more {
		return fmt.Sprintf("%s (%s)", msg, code)
	}
	return fmt.Sprintf("%s (%s)\n%s", first, code, rest)
}

func (e usageError) Unwrap() error { return e.err }

// flagError is the usage error of a flag cobra could not parse: an
// unknown one, or a value its type refuses.
func flagError(_ *cobra.Command, err error) error {
	if msg := err.Error(); strings.HasPrefix(msg, "unknown flag") || strings.HasPrefix(msg, "unknown shorthand flag") {
		return usageError{codeUnknownFlag, err}
	}
	return usageError{codeBadFlag, err}
}

// execute runs the command line args and returns the exit code: 0, 1 for
// a failure, 2 for a usage error, or the code a command chose (run-now:
// the job's own).
func execute(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	code := 1
	var ee exitError
	if errors.As(err, &ee) {
		if ee.err == nil {
			return ee.code
		}
		err, code = ee.err, ee.code
	}
	var ue usageError
	if !errors.As(err, &ue) && strings.HasPrefix(err.Error(), "unknown command") {
		// cobra's own error for a root command it does not know; a
		// command's extra argument, which cobra words the same way, is
		// bad_arguments already (markUsage)
		err = usageError{codeUnknownCommand, err}
	}
	var se *StoreURLError
	if errors.As(err, &ue) || errors.As(err, &se) && se.usage() {
		code = 2
	}
	if jsonLogs(root) {
		// One JSON record, like every other line of --log-format json,
		// so a log pipeline parses the reason the process ended too.
		slog.New(slog.NewJSONHandler(stderr, nil)).Error("anarchon: exit", slog.String("error", err.Error()), slog.Int("exit", code))
	} else if le := (*listError)(nil); errors.As(err, &le) && err.Error() == le.msg {
		// Several mistakes (the job files' lines), one a line: each is an
		// error of its own with its own code, so each is said as one, as
		// a file with a single mistake would say it.
		for _, e := range le.errs {
			fmt.Fprintf(stderr, "anarchon: %s\n", strings.TrimPrefix(e.Error(), "anarchon: "))
		}
	} else {
		// The library's errors start "anarchon: " too; say it once.
		fmt.Fprintf(stderr, "anarchon: %s\n", strings.TrimPrefix(err.Error(), "anarchon: "))
	}
	return code
}

// jsonLogs reports whether --log-format (or ANARCHON_LOG_FORMAT) asks for
// JSON, read after the command ran so that it holds what was parsed.
func jsonLogs(root *cobra.Command) bool {
	f := root.PersistentFlags().Lookup("log-format")
	if f == nil {
		return false
	}
	v := f.Value.String()
	if !f.Changed {
		if e, ok := os.LookupEnv(flagEnv("log-format")); ok {
			v = e
		}
	}
	return strings.EqualFold(strings.TrimSpace(v), "json")
}

// plural is "1 job", "2 jobs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// envPrefix starts the environment variable of every flag: --store is
// ANARCHON_STORE, --log-level ANARCHON_LOG_LEVEL.
const envPrefix = "ANARCHON_"

// flagEnv is the environment variable that sets flag name.
func flagEnv(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applyEnv sets every flag of c not given on the command line from its
// ANARCHON_* variable, if set. A repeatable flag takes a list separated
// as PATH is (":" on Unix).
func applyEnv(c *cobra.Command) error {
	var errs []error
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" || f.Name == "version" {
			return
		}
		v, ok := os.LookupEnv(flagEnv(f.Name))
		if !ok {
			return
		}
		vals := []string{v}
		if _, many := f.Value.(pflag.SliceValue); many {
			vals = filepath.SplitList(v)
		}
		for _, x := range vals {
			if err := f.Value.Set(x); err != nil {
				errs = append(errs, usageError{codeBadFlag, fmt.Errorf("%s=%q: %v", flagEnv(f.Name), v, err)})
				return
			}
		}
		f.Changed = true
	})
	return errors.Join(errs...)
}

// argsHint is err, cobra's count of a command's arguments, said in the
// command's own words where its usage names one argument: "JOB is
// missing", and for EXPR given as several words, the advice to quote it
// (an unquoted "0 12 * * *" is five arguments, the stars expanded by the
// shell).
func argsHint(cmd *cobra.Command, a []string, err error) error {
	words := strings.Fields(cmd.Use)
	if len(words) < 2 || strings.HasPrefix(words[1], "-") {
		if len(a) > 0 {
			// cobra calls it an unknown command of this one
			return fmt.Errorf("%s takes no arguments, got %q", cmd.Name(), a)
		}
		return err
	}
	arg := words[1]
	switch {
	case len(a) == 0:
		return fmt.Errorf("%s is missing (%w)", arg, err)
	case arg == "EXPR" || strings.HasPrefix(arg, "EXPR|"):
		return fmt.Errorf("%w: quote the schedule as one argument, as in: anarchon %s '0 12 * * *'", err, words[0])
	}
	return err
}

// markUsage makes the argument checks of c and its subcommands return
// usage errors that show the command's usage line, which names the
// arguments cobra's own message only counts.
func markUsage(c *cobra.Command) {
	if args := c.Args; args != nil {
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := args(cmd, a); err != nil {
				return usageError{codeBadArguments, fmt.Errorf("%w; usage: %s", argsHint(cmd, a, err), cmd.UseLine())}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markUsage(sub)
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:   "anarchon",
		Short: "High-availability cron: every replica runs the schedule, a shared store lets one run each slot",
		Long: `anarchon runs jobs from a crontab or a YAML file on any number of replicas.
Before running a job for a scheduled time, each replica claims that run in a
shared store (SQLite by default, PostgreSQL, Redis, NATS), and exactly one wins.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version(),
	}
	root.SetVersionTemplate(versionLine() + "\n") // the same line as the version command
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.store, "store", defaultStore, "store URL: sqlite:PATH, postgres://…, mysql://…, redis://…, nats://…, memory: (a URL with a password is better given by --store-file or ANARCHON_STORE: the command line is readable by every local user)")
	pf.StringVar(&g.storeFile, "store-file", "", "read the store URL from `FILE` (first line), instead of --store")
	pf.Int64Var(&g.maxLogBytes, "max-log-bytes", 16<<20, "log at most this many bytes of one run's output (0: no bound); the history keeps the tail either way")
	pf.BoolVar(&g.passSecrets, "pass-secrets", false, "pass the store's credential variables (ANARCHON_STORE, ANARCHON_STORE_FILE, PGPASSWORD, PGPASSFILE, REDISCLI_AUTH, …) on to jobs; by default jobs do not get them")
	pf.StringArrayVar(&g.crontabs, "crontab", nil, "crontab `FILE` with the jobs (repeatable)")
	pf.StringArrayVar(&g.crontabDirs, "crontab-dir", nil, "read every file of `DIR` as a system crontab, as cron reads /etc/cron.d (repeatable)")
	pf.StringArrayVar(&g.configs, "config", nil, "YAML `FILE` with the jobs (repeatable)")
	pf.StringVar(&g.format, "format", formatAuto, "crontab format: auto, user, system (a user column) or supercronic")
	pf.StringVar(&g.sixFields, "six-fields", "", "a line with six time fields: seconds (second first, the default) or year (year last, as supercronic)")
	pf.StringVar(&g.instance, "instance", "", "this instance's ID in claims and history (default hostname-pid)")
	pf.StringVar(&g.logFormat, "log-format", "text", "log format: text or json")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	pf.BoolVar(&g.splitLogs, "split-logs", false, "job stdout goes to anarchon's stdout, job stderr and anarchon's own log to stderr")
	pf.BoolVar(&g.passthrough, "passthrough-logs", false, "write job output as it is, not as log records")
	root.SetFlagErrorFunc(flagError)
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if err := applyEnv(c); err != nil {
			return err
		}
		if err := g.resolveStore(c); err != nil {
			return err
		}
		if err := checkInstance(c, g.instance); err != nil {
			return err
		}
		if err := checkJobPaths(g); err != nil {
			return err
		}
		g.output = outputOptions{split: g.splitLogs, passthrough: g.passthrough, stdout: stdout, stderr: stderr}
		if g.splitLogs && !g.passthrough {
			l, err := g.newLogger(stdout)
			if err != nil {
				return err // a usage error already
			}
			g.output.stdoutLog = l
		}
		return nil
	}

	root.AddCommand(runCmd(g, stdout, stderr), historyCmd(g, stdout), runNowCmd(g, stdout, stderr),
		statusCmd(g, stdout, stderr), nextCmd(g, stdout), validateCmd(g, stdout), versionCmd(stdout),
		controlCmd(g, stdout, stderr, true), controlCmd(g, stdout, stderr, false), triggerCmd(g, stdout, stderr),
		backfillCmd(g, stdout, stderr))
	markUsage(root)
	return root
}

func runCmd(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	rf := &runFlags{}
	c := &cobra.Command{
		Use:   "run",
		Short: "Run the scheduler until SIGTERM or SIGINT; SIGHUP reloads the job files",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if c.Flags().Changed("http") && rf.http == "" {
				// An empty value would serve nothing, as leaving the flag
				// out does; given on purpose it is a mistake (an unset
				// variable in a unit file), said before anything starts.
				return usageError{codeBadFlag, errors.New(`--http "": empty: want PORT, :PORT or HOST:PORT, or leave the flag out to serve nothing`)}
			}
			log, err := g.logger(stderr)
			if err != nil {
				return err
			}
			return run(g, rf, stdout, log)
		},
	}
	f := c.Flags()
	f.StringVar(&rf.http, "http", "", "serve /healthz, /readyz, /metrics and /status on `ADDR` (PORT binds loopback, :PORT every interface)")
	f.DurationVar(&rf.stopTimeout, "stop-timeout", 30*time.Second, "on SIGTERM, how long running jobs may finish before they are handed over")
	f.DurationVar(&rf.startTimeout, "start-timeout", time.Minute,
		"how long the start retries a store that is unreachable or not ready (a permanent error, like a wrong password, fails at once); 0 fails at the first error")
	f.DurationVar(&rf.killGrace, "kill-grace", 5*time.Second, "time between SIGTERM and SIGKILL when a command is stopped")
	f.DurationVar(&rf.poll, "poll", time.Second, "how often a backup asks the store again while another instance holds a lease")
	f.DurationVar(&rf.registryTTL, "registry-ttl", anarchon.DefaultRegistryTTL,
		"how long this instance's record in the store's registry of replicas lives without a renewal (renewed every third of it); a killed instance is shown dead this long after its last renewal")
	f.BoolVar(&rf.statusOutput, "status-output", false, "include the tail of each job's last output in /status (it may hold what jobs print: keys, tokens)")
	f.StringVar(&rf.httpTokenFile, "http-token-file", "", "require `FILE`'s first line as a bearer token (Authorization: Bearer …) on /status and /metrics; needed when --http binds beyond loopback")
	f.DurationVar(&rf.watch, "watch", 0, "re-read the job files when their contents change, checking every `INTERVAL` (0: only on SIGHUP)")
	f.BoolVar(&rf.subreaper, "subreaper", false, "reap orphaned processes of jobs as a child subreaper (Linux; always on as PID 1)")
	f.StringVar(&rf.clockOffset, "clock-offset", "", "shift this instance's clock by a Go duration (fault injection; also ANARCHON_CLOCK_OFFSET)")
	_ = f.MarkHidden("clock-offset")
	return c
}

// sharedStore refuses the memory store for a command that acts only
// through the store the replicas share (history, status, pause, resume,
// trigger): memory: would be the command's own store, empty and gone at
// its exit, and a pause there would change nothing while saying it had.
func sharedStore(g *globalFlags, command string) error {
	// Only the valid URL (memory: takes no parameters): another one of
	// the scheme is the URL's own mistake, said as for every command.
	if strings.EqualFold(storeOrDefault(g.store), "memory:") {
		verb := "acts through"
		if command == "history" || command == "status" {
			verb = "reads"
		}
		return usageError{codeBadFlag, fmt.Errorf("--store memory: would be this command's own store, empty and gone when it exits; %s %s the store the replicas share: give its URL", command, verb)}
	}
	return nil
}

// openForRead opens the store with a scheduler that knows the jobs of the
// given files (if any), for the read-only commands. With mustExist an
// SQLite store's file, an SQL store's tables, a Redis store's sentinel key
// and a NATS store's bucket and stream must already exist: reading never
// creates them (the Redis and NATS backends are opened with MustExist);
// the store is then initialised (Init), once, and history and status read
// it through the backend.
func openForRead(g *globalFlags, stderr io.Writer, needJobs, mustExist bool) (_ *daemon, err error) {
	log, err := g.logger(stderr)
	if err != nil {
		return nil, err
	}
	if mustExist {
		g.mustExist = true
		// The clients' lines wait until the store's data is found: a
		// store that cannot be reached is this command's error.
		endHold := holdClientLines()
		defer func() { endHold(err == nil) }()
	}
	var d *daemon
	if needJobs || !g.sources().empty() {
		if d, err = openDaemon(g, log, slog.LevelDebug, nil, 0, 5*time.Second, 0); err != nil {
			return nil, err
		}
	} else {
		b, err := openStoreMode(g.store, mustExist)
		if err != nil {
			return nil, err
		}
		d = &daemon{log: log, backend: b, store: redact(storeOrDefault(g.store)), rawStore: g.store, metrics: newMetrics(),
			sched: anarchon.New(b, &anarchon.Options{Logger: log}), reboot: anarchon.New(b, &anarchon.Options{Logger: log})}
	}
	if mustExist {
		// The store is initialised here, once: the command reads it
		// through the backend (not through a scheduler, whose reads
		// would call Init again), and Redis logs its start-up report at
		// each Init.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := storeInitialised(ctx, d.backend, storeOrDefault(g.store))
		if _, sql := d.backend.(sqlStore); sql && err == nil {
			// storeInitialised only looked for the SQL stores' tables.
			err = storeError(d.backend.Init(ctx), storeOrDefault(g.store))
		}
		cancel()
		if err != nil {
			d.close()
			return nil, err
		}
	}
	return d, nil
}

// openForWrite opens the store of a command that writes through the
// replicas' store (pause, resume, trigger) as openForRead does, refused
// on a store only this process sees (sharedStore), and initialises it
// (initStore). The caller closes the daemon. An SQLite store must exist:
// pause, resume and trigger write for the replicas, and a file none of
// them reads (a mistyped path) would take the write and tell no one.
func openForWrite(g *globalFlags, stderr io.Writer, command string, needJobs bool) (*daemon, error) {
	if err := sharedStore(g, command); err != nil {
		return nil, err
	}
	if _, missing := sqliteMissing(storeOrDefault(g.store)); missing {
		// Opened as history opens it, the URL's own errors (usage, exit
		// 2) come before the missing file's.
		b, err := openStoreMode(g.store, true)
		if err != nil {
			return nil, err
		}
		_ = b.Close(context.Background()) // a daemon made the file meanwhile: go on
	}
	d, err := openForRead(g, stderr, needJobs, false)
	if err != nil {
		return nil, err
	}
	if err := d.initStore(g); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// initStore initialises the store of a command that writes (run-now,
// pause, resume, trigger) through its scheduler, which then does not do
// it again for the command's later calls; the registry read is the
// call used to do it. As openForRead does for status, the clients'
// lines (a Redis client's retries) wait until the store answered: one that
// cannot be reached or initialised is this command's error, open_failed
// as for run, not a page of the client's warnings before an error with no
// code. backfill does not call it: a backfill its flags refuse must leave
// no new SQLite file behind.
func (d *daemon) initStore(g *globalFlags) (err error) {
	endHold := holdClientLines()
	defer func() { endHold(err == nil) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.sched.Instances(ctx); err != nil && !errors.Is(err, anarchon.ErrNoRegistry) {
		return storeErrorFor(err, storeOrDefault(g.store), false)
	}
	return nil
}

func historyCmd(g *globalFlags, stdout io.Writer) *cobra.Command {
	var n int
	var asJSON bool
	c := &cobra.Command{
		Use:   "history JOB",
		Short: "Show a job's recent runs from every instance, newest first",
		Long: `history prints the job's recent runs from every instance, newest first. A
job with no recorded run is an error (exit 1), unless --crontab or --config
names it: then it has simply not run yet.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if n <= 0 {
				return usageError{codeBadFlag, errors.New("-n must be positive")}
			}
			if err := sharedStore(g, "history"); err != nil {
				return err
			}
			d, err := openForRead(g, c.ErrOrStderr(), false, true)
			if err != nil {
				return err
			}
			defer d.close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			recs, err := d.backend.History(ctx, args[0], n)
			if err != nil {
				return err
			}
			if len(recs) == 0 {
				// The store keeps runs, not job names: without the job
				// files an unknown name and a job that never ran look
				// alike, and both are worth a non-zero exit.
				src := g.sources()
				jobs, _, _ := src.load()
				known := false
				for _, j := range jobs {
					known = known || j.Name == args[0]
				}
				switch {
				case known:
				case src.empty():
					return codedError{codeUnknownJob, fmt.Errorf("no run of job %q was ever recorded in %s (a typo? \"anarchon status --crontab FILE\" lists a crontab's jobs; give --crontab or --config to list a job that has not run yet)", args[0], d.store)}
				default:
					return codedError{codeUnknownJob, fmt.Errorf("no run of job %q was ever recorded in %s, and the job files given (%s) do not define it either (a typo? \"anarchon status\" with the same files lists their jobs)", args[0], d.store, src.describe())}
				}
				fmt.Fprintf(c.ErrOrStderr(), "job %q has not run yet\n", args[0])
			}
			// A running record whose instance is gone says so; only when
			// one is running is the registry read.
			var replicas replicaReport
			if slices.ContainsFunc(recs, func(r anarchon.RunRecord) bool { return r.Status == anarchon.StatusRunning }) {
				replicas, _ = readReplicas(ctx, d.backend)
			}
			if asJSON {
				out := make([]recordJSON, len(recs))
				for i, r := range recs {
					out[i] = toJSON(r)
					out[i].InstanceGone = replicas.runGone(r)
				}
				return writeJSON(stdout, out)
			}
			for i, r := range recs {
				if why := replicas.runGone(r); why != "" && r.Error == "" {
					recs[i].Error = "no result yet, and " + why
				}
			}
			printRecords(stdout, recs)
			return nil
		},
	}
	c.Flags().IntVarP(&n, "n", "n", 20, "how many records")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return c
}

func printRecords(w io.Writer, recs []anarchon.RunRecord) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOT\tSTATUS\tINSTANCE\tATTEMPT\tCLAIMED\tSTARTED\tDURATION\tERROR")
	for _, r := range recs {
		dur := ""
		if !r.StartedAt.IsZero() && !r.FinishedAt.IsZero() {
			dur = r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()
		}
		status := string(r.Status)
		if r.Manual {
			status += " (manual)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", formatTime(r.Slot), status, r.InstanceID, r.Attempt,
			dash(formatTime(r.ClaimedAt)), dash(formatTime(r.StartedAt)), dash(dur), firstLine(r.Error))
	}
	_ = tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runNowCmd(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "run-now JOB",
		Short: "Run a job at once on this machine and record it in the store's history",
		Long: `run-now runs the job's command here, now, without claiming a slot (a
manual run is never deduplicated), records it in the history and prints the
record. It needs --crontab or --config to know the command. It exits with
the command's own exit status (128+N for a command killed by signal N, 1 for
a command that could not start). SIGINT (Ctrl-C) or SIGTERM stops the
command as the daemon stops its runs (SIGTERM to its process group, SIGKILL
after 5 s) and records the run with its error; a second signal
kills it at once.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			d, err := openForRead(g, stderr, true, false)
			if err != nil {
				return err
			}
			defer d.close()
			name := args[0]
			known := false
			for _, j := range d.jobList() {
				known = known || j.Name == name
			}
			if !known {
				return unknownJob(name)
			}
			if err := d.initStore(g); err != nil {
				return err
			}
			ctx, stop := stopOnSignal(context.Background(), func(s os.Signal) {
				d.exec.log.Error("second signal: killing the command", slog.String("signal", s.String()))
				d.exec.killAll()
			})
			defer stop()
			rec, err := d.schedFor(name).RunNow(ctx, name)
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				// The signal came before the run was recorded (the
				// result's store calls after the run do not end with ctx)
				return fmt.Errorf("%v before the run was recorded: the command did not run", context.Cause(ctx))
			}
			if err != nil {
				return err
			}
			rec = storedRecord(d.schedFor(name), rec)
			if asJSON {
				if err := writeJSON(stdout, toJSON(rec)); err != nil {
					return err
				}
			} else {
				printRecords(stdout, []anarchon.RunRecord{rec})
			}
			if rec.Status != anarchon.StatusSuccess {
				return exitError{code: exitCode(rec.Error)}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the record as JSON")
	return c
}

// jobLabel pads a label of status's lines under a job to the widest,
// "last run:", so that what follows starts in one column on every line.
func jobLabel(label string) string {
	return fmt.Sprintf("%-*s", len("last run:")+1, label)
}

// printLast prints one of status's last records of a job.
func printLast(w io.Writer, label string, r *recordJSON) {
	fmt.Fprintf(w, "  %sslot %s %s on %s", jobLabel(label), r.Slot, r.Status, r.Instance)
	if r.Error != "" {
		fmt.Fprintf(w, ": %s", firstLine(r.Error))
	} else if r.InstanceGone != "" {
		fmt.Fprintf(w, ": no result yet, and %s", r.InstanceGone)
	}
	fmt.Fprintln(w)
}

// storedRecord is run-now's record as the store keeps it, which history
// prints: the claim time by the store's clock and the times in whole
// milliseconds, where RunNow's has this process's. rec when the read fails
// or finds no record of its token (trimmed already by a HistorySize of 1
// and a run elsewhere).
func storedRecord(s *anarchon.Scheduler, rec anarchon.RunRecord) anarchon.RunRecord {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs, err := s.History(ctx, rec.Job, 20)
	if err != nil {
		return rec
	}
	for _, r := range recs {
		if r.Token == rec.Token && r.Status == rec.Status {
			return r
		}
	}
	return rec
}

// stopOnSignal returns a context derived from parent that SIGINT or
// SIGTERM ends, with the cause "stopped by signal NAME", and a func that
// stops the watch. A second signal, other than the first one's echo
// (echoWindow), is passed to second when it is set. run-now runs its
// command under it: the executor then stops the command (SIGTERM to its
// process group, SIGKILL after the grace) and the run's result is still
// stored, and a second signal kills the group at once; without it the
// signal would end anarchon and leave the command running in its own group,
// and its history record running. trigger waits under it, to say that the
// request is kept.
func stopOnSignal(parent context.Context, second func(os.Signal)) (context.Context, func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(parent)
	done := make(chan struct{})
	go func() {
		var first os.Signal
		var at time.Time
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
				switch {
				case first == nil:
					first, at = s, time.Now()
					cancel(fmt.Errorf("stopped by signal %s", s))
				case second != nil && !echo(s, first, at):
					second(s)
				}
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

func statusCmd(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Show the replicas, and each job's next slots, active leases and last result",
		Long: `status reads the store. It lists the replicas of the store's instance registry
(live, dead or stopped, by the store's clock) and names the jobs defined
differently on live replicas; with --crontab or --config it shows each job's
next slots, active leases (with the holder's state in the registry; a failed
attempt's lease kept for its retry backoff is shown waiting for the retry,
with when the next attempt is due) and last result.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := sharedStore(g, "status"); err != nil {
				return err
			}
			d, err := openForRead(g, stderr, false, true)
			if err != nil {
				return err
			}
			defer d.close()
			d.instance = ""
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rep := d.status(ctx)
			if asJSON {
				return writeJSON(stdout, rep)
			}
			fmt.Fprintf(stdout, "store: %s (%s)\n", rep.Store, rep.Backend)
			printReplicas(stdout, rep)
			printPaused(stdout, rep)
			printPendingTriggers(stdout, rep)
			if g.sources().empty() {
				fmt.Fprintln(stdout, "\njobs: give --crontab or --config to show each job's next slots, leases and last result")
			}
			for _, j := range rep.Jobs {
				printJobStatus(stdout, j)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// printJobStatus prints one job of status: its next slots, active leases
// (a failed attempt's waiting for its retry said so), last result and
// last run, and what could not be read.
func printJobStatus(stdout io.Writer, j jobStatus) {
	fmt.Fprintf(stdout, "\n%s  %s  (%s)\n", j.Name, j.Schedule, j.Zone)
	next := strings.Join(j.Next, ", ")
	if j.Schedule == "@reboot" {
		next = "once at each start of \"anarchon run\""
	}
	fmt.Fprintf(stdout, "  %s%s\n", jobLabel("next:"), next)
	for _, a := range j.Active {
		if a.State == stateRetryWait {
			// Any replica's claim takes the retry once it is due:
			// the holder's state does not matter.
			due := "due at " + a.RetryDue
			if !a.Live {
				due = "due since " + a.RetryDue + ", not claimed yet"
			}
			fmt.Fprintf(stdout, "  %sslot %s: attempt %d failed on %s, waiting for its retry: attempt %d %s\n",
				jobLabel("active:"), a.Slot, a.Attempt, a.Instance, a.Attempt+1, due)
			continue
		}
		live := "expired"
		if a.Live {
			live = "live"
		}
		switch a.HolderState {
		case string(anarchon.InstanceDead):
			live += ", holder dead in the registry: a backup takes over when the lease ends"
		case string(anarchon.InstanceStopped):
			live += ", holder stopped"
		}
		fmt.Fprintf(stdout, "  %sslot %s on %s, attempt %d, %s, lease until %s (%s)\n",
			jobLabel("active:"), a.Slot, a.Instance, a.Attempt, a.State, a.LeaseUntil, live)
	}
	if j.Last != nil {
		printLast(stdout, "last:", j.Last)
		if j.LastRun != nil {
			printLast(stdout, "last run:", j.LastRun)
		}
	} else {
		fmt.Fprintf(stdout, "  %snever ran\n", jobLabel("last:"))
	}
	if j.Error != "" {
		fmt.Fprintf(stdout, "  %s%s\n", jobLabel("error:"), j.Error)
	}
}

func nextCmd(g *globalFlags, stdout io.Writer) *cobra.Command {
	var zone, after string
	var n int
	c := &cobra.Command{
		Use:   "next EXPR|JOB",
		Short: "Print the next fire times of a cron expression or of a job",
		Long: `next prints the next N fire times of a cron expression (5 or 6 fields, or a
descriptor such as @daily or "@every 10s"), one RFC 3339 instant per line in
the zone's offset, as anarchon computes slots (DST gaps and folds included).
With --crontab or --config, a job's name gives that job's fire times, in its
own zone (a one-off job's single time, if it is still ahead).`,
		Example: `  anarchon next '0 2 * * *' --zone America/New_York --after 2026-03-07T12:00:00-05:00 -n 3
  anarchon next backup --crontab /etc/anarchon/crontab`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return next(stdout, g.sources(), args[0], zone, c.Flags().Changed("zone"), after, n)
		},
	}
	c.Flags().StringVar(&zone, "zone", "UTC", "IANA time zone the expression is computed in")
	c.Flags().StringVar(&after, "after", "", "start after this RFC 3339 instant (default now)")
	c.Flags().IntVarP(&n, "n", "n", 5, fmt.Sprintf("how many times (at most %d)", anarchon.MaxNextSlots))
	return c
}

// next prints the n slots after the RFC 3339 instant after of the job
// named arg in src's files, or else of the expression arg in zone.
// zoneSet says --zone was given, which a job (computed in its own zone)
// refuses.
func next(w io.Writer, src sources, arg, zone string, zoneSet bool, after string, n int) error {
	if n <= 0 {
		return usageError{codeBadFlag, errors.New("-n must be positive")}
	}
	if n > anarchon.MaxNextSlots {
		return usageError{codeBadFlag, fmt.Errorf("-n %d is above the limit of %d: give a later --after for more", n, anarchon.MaxNextSlots)}
	}
	from := time.Now()
	if after != "" {
		t, err := time.Parse(time.RFC3339Nano, after)
		if err != nil {
			return usageError{codeBadFlag, fmt.Errorf("--after %q is not an RFC 3339 time (like 2026-03-07T12:00:00-05:00)", after)}
		}
		from = t
	}
	var loadErrs []error
	if !src.empty() {
		jobs, errs, _ := src.load()
		// As run reads them: a file that cannot be read, or a mistake
		// anywhere in the files (a duplicate name, an unknown CRON_TZ),
		// refuses them all (validate reports the same).
		s, checked := scratchSchedule(jobs)
		bad, warns := splitWarnings(append(errs, checked...))
		for _, j := range jobs {
			if j.Name != arg {
				continue
			}
			if len(bad) > 0 {
				sortByPosition(bad)
				return joinErrors(bad)
			}
			return nextOfJob(w, s, j, warns, zoneSet, from, n)
		}
		loadErrs = bad
	}
	if strings.EqualFold(strings.TrimSpace(arg), "@reboot") {
		// a crontab's word, not the engine's: it has no fire times
		return codedError{codeRebootJob, errors.New("@reboot has no fire times: each replica runs such a job once as it starts")}
	}
	s := anarchon.New(membackend.New(nil), &anarchon.Options{InstanceID: "next"})
	if err := s.Cron("next", arg, noop, &anarchon.JobOptions{Zone: zone}); err != nil {
		var ve *anarchon.ValidationError
		if errors.As(err, &ve) {
			if ve.Code == anarchon.CodeUnknownZone {
				// a flag's value, as --after's: a usage error
				return usageError{codeBadFlag, fmt.Errorf("--zone: %s", scheduleReason(ve))}
			}
			msg := fmt.Sprintf("%s: %s", strings.ToLower(ve.Field), scheduleReason(ve))
			switch {
			case src.empty() && looksLikeName(arg):
				msg += "; for a job's fire times give its name with --crontab FILE or --config FILE"
			case !src.empty():
				// A file that cannot be read may be where the job is:
				// that is the error, as on every other command.
				var unread []error
				for _, e := range loadErrs {
					if isNoFile(e) {
						unread = append(unread, e)
					}
				}
				if len(unread) > 0 {
					return joinErrors(unread)
				}
				msg += fmt.Sprintf("; nor is %q a job of %s", arg, src.describe())
				if len(loadErrs) > 0 {
					msg += fmt.Sprintf(", whose files have %s (anarchon validate lists them)", plural(len(loadErrs), "mistake"))
				}
			}
			return codedError{string(ve.Code), errors.New(msg)}
		}
		return err
	}
	slots, err := s.NextSlots("next", from, n)
	if err != nil {
		return err
	}
	for _, t := range formatIn(slots, zone) {
		fmt.Fprintln(w, t)
	}
	return nil
}

// looksLikeName reports whether next's argument reads as a job's name
// rather than a cron expression: one word with a letter, not a
// descriptor ("backup", not "*/5", "@daily" or "0 2 * * *").
func looksLikeName(arg string) bool {
	a := strings.TrimSpace(arg)
	return a != "" && !strings.HasPrefix(a, "@") && !strings.ContainsAny(a, " \t") &&
		strings.ContainsFunc(a, func(r rune) bool { return unicode.IsLetter(r) })
}

// nextOfJob prints the n slots of job j after from, in the job's zone, from
// s, the scratch scheduler the files' jobs were registered on as run
// registers them (scratchSchedule); warns are that registration's
// warnings.
func nextOfJob(w io.Writer, s *anarchon.Scheduler, j *jobSpec, warns []error, zoneSet bool, from time.Time, n int) error {
	if zoneSet {
		return usageError{codeBadFlag, fmt.Errorf("--zone: job %q is computed in its own zone, %s; --zone is for an expression", j.Name, zoneName(j.Zone))}
	}
	if j.Reboot {
		return codedError{codeRebootJob, fmt.Errorf("job %q is an @reboot job, which has no fire times: each replica runs it once as it starts", j.Name)}
	}
	for _, w := range warns {
		// A one-off job whose time is past its max_late is not
		// scheduled (register's warning says why): it has no times.
		var pe *posError
		if errors.As(w, &pe) && pe.unscheduled == j {
			return codedError{string(anarchon.CodeTooLate), fmt.Errorf("%s:%d: job %q has no fire times: %s", pe.File, pe.Line, j.Name, pe.Msg)}
		}
	}
	slots, err := s.NextSlots(j.Name, from, n)
	if err != nil {
		return err
	}
	for _, t := range formatIn(slots, j.Zone) {
		fmt.Fprintln(w, t)
	}
	return nil
}

func validateCmd(g *globalFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the job files and report every mistake as FILE:LINE: reason",
		Long: `validate reads every --crontab and --config file and reports all mistakes,
one per line as FILE:LINE: reason, then exits with status 1 if there was any.
Jobs are checked as a store with leases and no dedupe window would check them;
"run" checks them again against the real store.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			src := g.sources()
			if src.empty() {
				return usageError{codeBadFlag, errors.New("nothing to validate: give --crontab FILE, --crontab-dir DIR or --config FILE")}
			}
			jobs, loaded, infos := src.load()
			// A file that cannot be read is not a mistake at a line of
			// it: it ends the command as on every other one, on stderr,
			// after what the other files hold is listed.
			var all, unread []error
			for _, e := range loaded {
				// A bad flag value (--format, --six-fields) is a usage
				// error, exit 2, as on every other command.
				var ue usageError
				if errors.As(e, &ue) {
					return ue
				}
				if isNoFile(e) {
					unread = append(unread, e)
				} else {
					all = append(all, e)
				}
			}
			all = append(all, checkJobs(jobs)...)
			for _, j := range jobs {
				if j.Unnamed {
					all = append(all, &posError{File: j.File, Line: j.Line, Warning: true, Msg: fmt.Sprintf(
						"unnamed job (%s): its name changes when the line is edited, so during a rolling update old and new replicas both run it; add \"# name: NAME\" above it", j.Name)})
				}
			}
			sortByPosition(all)
			errs, _ := splitWarnings(all)
			countJobs(infos, errs)
			for _, f := range infos {
				fmt.Fprintln(stdout, f)
			}
			for _, e := range all {
				fmt.Fprintln(stdout, e)
			}
			if len(unread) > 0 {
				return joinErrors(unread)
			}
			if len(errs) > 0 {
				return exitError{code: 1}
			}
			if len(jobs) == 0 {
				return errNoJobs // as run refuses them
			}
			fmt.Fprintf(stdout, "ok: %s\n", plural(len(jobs), "job"))
			return nil
		},
	}
}

func versionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Fprintln(stdout, versionLine())
		},
	}
}

// checkJobPaths refuses a --crontab, --crontab-dir or --config given
// empty or blank, quoting it as other flag values are: opened, it would
// fail with the file system's error, whose path (" ") reads as nothing.
// It is most often a variable that was not set ("--crontab $FILE").
func checkJobPaths(g *globalFlags) error {
	for _, f := range []struct {
		flag, what string
		paths      []string
	}{
		{"--crontab", "a crontab file", g.crontabs},
		{"--crontab-dir", "a directory of crontabs", g.crontabDirs},
		{"--config", "a YAML job file", g.configs},
	} {
		for _, p := range f.paths {
			if strings.TrimSpace(p) == "" {
				return usageError{codeBadFlag, fmt.Errorf("%s %q: a blank path: give the path of %s", f.flag, p, f.what)}
			}
		}
	}
	return nil
}

// checkInstance refuses an --instance given blank, with blanks around it,
// with a control character or not valid UTF-8: the ID is printed in every
// log line, history record and status table, where " web-1" and "web-1"
// read alike and a newline breaks the line; left out, it is hostname-pid.
// It is anarchon.Options.InstanceID's own rule, checked here first so
// that the flag, not every job, is named.
func checkInstance(c *cobra.Command, id string) error {
	f := c.Flags().Lookup("instance")
	if f == nil || !f.Changed {
		return nil
	}
	switch {
	case strings.TrimSpace(id) == "":
		return usageError{codeBadFlag, fmt.Errorf("--instance (or %s) %q: empty: give this replica's ID, or leave the flag out for hostname-pid", flagEnv("instance"), id)}
	case strings.TrimSpace(id) != id:
		return usageError{codeBadFlag, fmt.Errorf("--instance %q: blanks around the ID: give it without them", id)}
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		return usageError{codeBadFlag, fmt.Errorf("--instance %q: a control character in the ID: give printable text", id)}
	case !utf8.ValidString(id):
		return usageError{codeBadFlag, fmt.Errorf("--instance %q: not valid UTF-8: give printable text", id)}
	}
	return nil
}

// resolveStore sets the store URL from --store-file, which excludes
// --store (and ANARCHON_STORE). It refuses an empty --store (or
// ANARCHON_STORE): that is most often a variable that was not set
// ("--store $STORE"), and taking it as the default would give each
// replica a SQLite file of its own, every one running every slot.
func (g *globalFlags) resolveStore(c *cobra.Command) error {
	if f := c.Flags().Lookup("store"); f != nil && f.Changed && strings.TrimSpace(g.store) == "" {
		return usageError{codeBadFlag, fmt.Errorf("--store (or %s) is empty: give a store URL, or leave it out for the default %s", flagEnv("store"), defaultStore)}
	}
	if g.storeFile == "" {
		return nil
	}
	if f := c.Flags().Lookup("store"); f != nil && f.Changed {
		return usageError{codeBadFlag, errors.New("--store and --store-file (or their ANARCHON_ variables) both given: give one")}
	}
	data, err := os.ReadFile(g.storeFile)
	if err != nil {
		return noFile(fmt.Errorf("--store-file: %w", err))
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return usageError{codeBadFlag, fmt.Errorf("--store-file %q: empty", g.storeFile)}
	}
	g.store = line
	return nil
}
