package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon"
)

// outputTail is how much of a run's combined output (bytes) is kept in its
// history record.
const outputTail = 4 << 10

// maxLogLine is the longest output line logged as one record (bytes);
// longer lines are split.
const maxLogLine = 16 << 10

// startRetryFor bounds how long a command whose process was killed before
// it ran is started again (see diedBeforeExec): each such death takes a
// signal sent to the daemon's process group at that instant, so only a
// stream of them (a flood, not a Ctrl-C) keeps it from starting. A count
// of tries is no bound for a flood on a busy machine: 100 tries in a row
// died in one CI run while the test's signaller had the CPU.
const startRetryFor = 10 * time.Second

// executor runs jobs as child processes.
type executor struct {
	log      *slog.Logger
	instance string
	grace    time.Duration // SIGTERM to SIGKILL

	// unsettled counts runs whose handler began and whose run-end event
	// the daemon has not observed yet (settled). wait waits for the event,
	// not for the handler's return: the scheduler emits it after the
	// handler returns, and the outcome log line it triggers ("manual run
	// stopped") must be written before the process exits.
	unsettled int
	settledCh chan struct{} // closed when unsettled drops to 0, if wait made it

	passSecrets bool  // --pass-secrets: keep the store's credential variables in jobs' environment
	maxLogBytes int64 // --max-log-bytes: output logged per run; 0: no bound

	out     outputOptions
	running func(job string, delta float64) // the running-commands gauge, if any
	mu      sync.Mutex
	groups  map[int]*os.Process      // running commands by process ID, each the leader of its group
	outputs map[string]string        // output tails of runs that ended, until the outcome log takes them
	lines   map[string]chan struct{} // later attempts whose won-claim line is being written (outcomes.laterAttempt), closed once it is
}

// lineDue notes that the line of the later attempt key (runKey) is being
// written, and done is closed once it is.
func (e *executor) lineDue(key string, done chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lines == nil {
		e.lines = make(map[string]chan struct{})
	}
	e.lines[key] = done
}

// lineDone forgets the line of key, which is written.
func (e *executor) lineDone(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.lines, key)
}

// awaitLine waits, before a later attempt's command starts, until its
// won-claim line is written (it reads the store), or ctx ends: the line
// says why the attempt runs, and comes before the command's output.
func (e *executor) awaitLine(ctx context.Context, key string) {
	e.mu.Lock()
	done := e.lines[key]
	e.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// runKey identifies one run for the output handed to the outcome log.
func runKey(job string, slot time.Time, attempt int) string {
	return job + "\x00" + strconv.FormatInt(slot.UnixMilli(), 10) + "\x00" + strconv.Itoa(attempt)
}

// takeOutput returns and forgets the output tail of a run that ended.
func (e *executor) takeOutput(job string, slot time.Time, attempt int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := runKey(job, slot, attempt)
	out := e.outputs[k]
	delete(e.outputs, k)
	return out
}

// keepOutput hands a run's output tail to the outcome log, which the
// scheduler's run-end event triggers right after the handler returns.
func (e *executor) keepOutput(run *anarchon.Run, tail string) {
	run.SetOutput(tail)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.outputs == nil {
		e.outputs = make(map[string]string)
	}
	e.outputs[runKey(run.Job, run.Slot, run.Attempt)] = tail
}

// outputOptions say where a command's output goes.
type outputOptions struct {
	// split sends the command's stdout to the daemon's stdout and its
	// stderr to the daemon's stderr (supercronic's -split-logs); otherwise
	// both go to the log on stderr.
	split bool
	// passthrough writes the output as it is, not as log records
	// (supercronic's -passthrough-logs).
	passthrough bool
	stdout      io.Writer    // the daemon's stdout
	stderr      io.Writer    // the daemon's stderr
	stdoutLog   *slog.Logger // split without passthrough: the log on stdout
}

// handler returns the anarchon.Handler that runs j's command once per slot.
//
// The child runs in its own process group with the daemon's environment,
// then the job's Env, then ANARCHON_JOB, ANARCHON_SLOT (RFC 3339, UTC),
// ANARCHON_ATTEMPT, ANARCHON_FENCE (the claim's fencing token, "0" for a
// run without a lease), ANARCHON_INSTANCE and ANARCHON_MANUAL ("1" for
// run-now).
// Each line of its stdout and stderr is logged with the job, slot and
// attempt; the last outputTail bytes of both go into the run's history
// record. A non-zero exit is an error "exit status N". When the run's
// context ends (timeout, lease lost, replaced by a later slot, stop
// deadline) the whole process group
// gets SIGTERM, then SIGKILL after the grace period.
func (e *executor) handler(j *jobSpec) anarchon.Handler {
	return func(ctx context.Context, run *anarchon.Run) error {
		e.begin()
		if run.Attempt > 1 {
			e.awaitLine(ctx, runKey(run.Job, run.Slot, run.Attempt))
		}
		slot := formatSlot(run.Slot)
		attrs := []any{slog.String("job", run.Job), slog.String("slot", slot), slog.Int("attempt", run.Attempt)}
		log := e.log.With(attrs...)
		tail := &tailBuffer{max: outputTail}
		budget := newLogBudget(e.maxLogBytes)
		stdout := &lineLogger{log: log, stream: "stdout", tail: tail, budget: budget}
		stderr := &lineLogger{log: log, stream: "stderr", tail: tail, budget: budget}
		defer func() {
			if budget != nil && budget.dropped.Load() > 0 {
				log.Warn("output not logged", slog.Int64("bytes", budget.dropped.Load()), slog.Int64("max_log_bytes", e.maxLogBytes))
			}
		}()
		e.out.apply(stdout, stderr, attrs)

		// A program without a slash is looked up in the job's own PATH
		// when it sets one (validate looks it up the same way:
		// lookProgram), not in the daemon's, which exec.Command uses.
		prog := j.Argv[0]
		if path := envValue(j.Env, "PATH"); path != "" && !strings.Contains(prog, "/") {
			found, lerr := lookProgram(prog, path, j.Workdir)
			if lerr != nil {
				return fmt.Errorf("start %s: %w", prog, lerr)
			}
			prog = found
		}
		newCmd := func() *exec.Cmd {
			cmd := exec.Command(prog, j.Argv[1:]...)
			cmd.Args[0] = j.Argv[0] // as given, as a shell passes it
			cmd.Dir = j.Workdir
			cmd.Env = append(append(jobEnviron(os.Environ(), e.passSecrets), j.Env...),
				"ANARCHON_JOB="+run.Job,
				"ANARCHON_SLOT="+slot,
				"ANARCHON_ATTEMPT="+strconv.Itoa(run.Attempt),
				"ANARCHON_FENCE="+strconv.FormatUint(run.Fence, 10),
				"ANARCHON_INSTANCE="+run.InstanceID,
				"ANARCHON_MANUAL="+boolEnv(run.Manual),
			)
			if j.Stdin != "" {
				cmd.Stdin = strings.NewReader(j.Stdin)
			}
			cmd.Stdout, cmd.Stderr = stdout, stderr
			setProcAttrs(cmd) // a process group of its own where the platform has them (exec_unix.go)
			runAs(cmd, j)     // system crontabs: the line's user (runas_unix.go)
			// Background children that keep the pipes open must not hold the
			// run forever once the command itself has exited.
			cmd.WaitDelay = e.grace + time.Second
			return cmd
		}

		log.Debug("starting command", slog.Any("argv", j.Argv))
		var cmd *exec.Cmd
		firstTry := time.Now()
		for try := 1; ; try++ {
			cmd = newCmd()
			if err := startChild(cmd); err != nil { // tracked: the reaper leaves it to cmd.Wait
				if j.Workdir != "" {
					// exec's own error names the program ("fork/exec
					// /bin/sh: no such file or directory") for a missing
					// directory: say which is missing.
					if fi, serr := os.Stat(j.Workdir); serr != nil {
						return fmt.Errorf("workdir %q: %v; the command did not start", j.Workdir, errors.Unwrap(serr))
					} else if !fi.IsDir() {
						return fmt.Errorf("workdir %q is not a directory; the command did not start", j.Workdir)
					}
				}
				return fmt.Errorf("start %s: %w", j.Argv[0], err)
			}
			// A signal to the daemon's process group (Ctrl-C stopping it)
			// can kill a child between fork and its move to a group of its
			// own, before it ran anything: the daemon drains its running
			// commands on that signal, and this one is started again.
			died, werr := diedBeforeExec(cmd)
			if !died {
				break
			}
			if ctx.Err() != nil || time.Since(firstTry) > startRetryFor {
				return fmt.Errorf("start %s: the process died before it ran the command (%v), %d times in %v", j.Argv[0], werr, try, time.Since(firstTry).Round(time.Millisecond))
			}
			if try&(try-1) == 0 { // tries 1, 2, 4, 8 …: a flood does not flood the log
				log.Warn("the command's process died before it ran the command, as a signal to the daemon's process group does; starting it again",
					slog.Any("status", werr), slog.Int("try", try))
			}
		}
		proc := cmd.Process
		pgid := proc.Pid
		defer childDone(pgid) // every return below comes after cmd.Wait
		if e.running != nil {
			e.running(run.Job, 1)
			defer e.running(run.Job, -1)
		}
		e.mu.Lock()
		if e.groups == nil {
			e.groups = make(map[int]*os.Process)
		}
		e.groups[pgid] = proc
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			delete(e.groups, pgid)
			e.mu.Unlock()
		}()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()

		var err error
		select {
		case err = <-done:
		case <-ctx.Done():
			cause := context.Cause(ctx)
			log.Warn("stopping command", slog.Any("cause", cause), slog.Duration("grace", e.grace))
			terminateGroup(proc)
			t := time.NewTimer(e.grace)
			killed := false
			select {
			case err = <-done:
			case <-t.C:
				log.Warn("killing command: it outlived the grace period")
				killGroup(proc)
				killed = true
				err = <-done
			}
			// The command exited; a process of its group that ignores
			// SIGTERM would outlive it, orphaned: the group gets SIGKILL
			// at the grace period's end all the same.
			if !killed && !waitGroup(proc, t.C) {
				log.Warn("killing the rest of the command's process group: it outlived the grace period")
				killGroup(proc)
			}
			t.Stop()
			stdout.flush()
			stderr.flush()
			e.keepOutput(run, tail.String())
			if err == nil {
				err = errors.New("exited after the stop signal")
			}
			return fmt.Errorf("%w (process group stopped: %v)", cause, err)
		}
		stdout.flush()
		stderr.flush()
		e.keepOutput(run, tail.String())
		if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil {
			// The command exited and left a background process ("(cmd &)")
			// holding its output open: its own exit status is the run's;
			// what that process prints later is not captured.
			log.Warn("the command exited, but a process it left in the background kept its output open; later output is not captured")
			err = nil
			if !cmd.ProcessState.Success() {
				err = errors.New(cmd.ProcessState.String()) // "exit status N"
			}
		}
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return commandExitError(j, ee) // "exit status N" or "signal: killed"
			}
			return err
		}
		return nil
	}
}

// waitGroup waits until the process group that p led has no member
// (true, at once when it has none) or end fires (false), looking every
// groupPoll: the members are not the daemon's children, so there is
// nothing to wait on.
func waitGroup(p *os.Process, end <-chan time.Time) bool {
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for groupAlive(p) {
		select {
		case <-end:
			return false
		case <-tick.C:
		}
	}
	return true
}

// groupPoll is how often waitGroup looks at a stopped command's group.
const groupPoll = 20 * time.Millisecond

// killAll kills the process group of every running command (on Windows the
// command alone), for an exit that cannot wait.
func (e *executor) killAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, proc := range e.groups {
		killGroup(proc)
	}
}

// begin counts a run whose handler began.
func (e *executor) begin() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.unsettled++
}

// settled counts a run whose end the scheduler reported (EventRunEnd, which
// follows every handler's return). An event without a counted start (one a
// test made up) leaves the count at 0.
func (e *executor) settled() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.unsettled > 0 {
		e.unsettled--
	}
	if e.unsettled == 0 && e.settledCh != nil {
		close(e.settledCh)
		e.settledCh = nil
	}
}

// wait waits until every run that began was reported ended, or d passed.
func (e *executor) wait(d time.Duration) {
	e.mu.Lock()
	if e.unsettled == 0 {
		e.mu.Unlock()
		return
	}
	if e.settledCh == nil {
		e.settledCh = make(chan struct{})
	}
	done := e.settledCh
	e.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// formatSlot renders a slot as ANARCHON_SLOT has it: RFC 3339 in UTC, with
// fractional seconds only when they are not zero.
func formatSlot(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func boolEnv(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// lineLogger is an io.Writer that logs each line written to it (or writes
// it through, raw) and keeps all bytes in a shared tail.
type lineLogger struct {
	log    *slog.Logger
	stream string
	tail   *tailBuffer
	buf    []byte
	raw    io.Writer  // passthrough: lines are written here as they are
	budget *logBudget // shared by a run's two streams; nil: no bound
}

// logBudget bounds how many bytes of one run's output are logged
// (--max-log-bytes): a command printing a gigabyte must not make gigabytes
// of logs. Past it lines are counted, not logged; the history still keeps
// the output's tail.
type logBudget struct {
	left    atomic.Int64
	dropped atomic.Int64
	warned  atomic.Bool
}

func newLogBudget(max int64) *logBudget {
	if max <= 0 {
		return nil
	}
	b := &logBudget{}
	b.left.Store(max)
	return b
}

// take reports whether a line of n bytes may be logged.
func (b *logBudget) take(n int) bool {
	if b == nil {
		return true
	}
	if b.left.Add(-int64(n)) >= 0 {
		return true
	}
	b.dropped.Add(int64(n))
	return false
}

// apply points the two streams of a command where the options say.
func (o outputOptions) apply(stdout, stderr *lineLogger, attrs []any) {
	switch {
	case o.passthrough && o.split:
		stdout.raw, stderr.raw = o.stdout, o.stderr
	case o.passthrough:
		stdout.raw, stderr.raw = o.stderr, o.stderr
	case o.split && o.stdoutLog != nil:
		// The same attributes, on the stdout log.
		stdout.log = o.stdoutLog.With(attrs...)
	}
}

// Write logs every complete line of p and keeps the rest for later.
func (l *lineLogger) Write(p []byte) (int, error) {
	l.tail.Write(p)
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) >= maxLogLine {
				l.emit(l.buf[:maxLogLine])
				l.buf = l.buf[maxLogLine:]
				continue
			}
			break
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

func (l *lineLogger) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if !l.budget.take(len(line) + 1) {
		if l.budget.warned.CompareAndSwap(false, true) {
			l.log.Warn("output beyond --max-log-bytes is not logged (the run's history keeps its tail)", slog.String("stream", l.stream))
		}
		return
	}
	if l.raw != nil {
		rawMu.Lock()
		_, _ = l.raw.Write(append(line[:len(line):len(line)], '\n'))
		rawMu.Unlock()
		return
	}
	l.log.Info(string(line), slog.String("stream", l.stream))
}

// rawMu keeps lines of concurrent commands whole in passthrough mode.
var rawMu sync.Mutex

// flush logs a last line without a newline.
func (l *lineLogger) flush() {
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
}

// tailBuffer keeps the last max bytes written to it. Safe for concurrent
// use (stdout and stderr write from two goroutines).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

// Write appends p, dropping the oldest bytes beyond max.
func (t *tailBuffer) Write(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
}

// String returns the kept bytes as text, starting at a whole UTF-8 rune.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	for len(b) > 0 && b[0]&0xC0 == 0x80 {
		b = b[1:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// secretEnv are the variables of the daemon's environment that hold the
// store's credentials (its own ANARCHON_STORE, the clients' standard
// variables); jobs do not get them unless --pass-secrets. A job that
// needs one sets it in its own env.
var secretEnv = map[string]bool{
	"ANARCHON_STORE": true, "ANARCHON_STORE_FILE": true, "ANARCHON_HTTP_TOKEN_FILE": true,
	"ANARCHON_UI_TOKEN": true, "ANARCHON_UI_USER": true, "ANARCHON_UI_PASSWORD": true,
	"PGPASSWORD": true, "PGPASSFILE": true, "PGSERVICEFILE": true, "PGSSLKEY": true,
	"REDISCLI_AUTH": true, "NATS_TOKEN": true, "NATS_PASSWORD": true, "NATS_CREDS": true, "NATS_NKEY": true,
}

// jobEnviron returns env without the credential variables, unless pass.
func jobEnviron(env []string, pass bool) []string {
	if pass {
		return env
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !secretEnv[name] {
			out = append(out, kv)
		}
	}
	return out
}
