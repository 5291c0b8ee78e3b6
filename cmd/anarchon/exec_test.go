package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// runOnce registers j on a scheduler over the memory store and runs it with
// RunNow, returning its history record.
func runOnce(t *testing.T, j *jobSpec, grace time.Duration) anarchon.RunRecord {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := anarchon.New(membackend.New(nil), &anarchon.Options{InstanceID: "test-1", Logger: log})
	e := &executor{log: log, instance: "test-1", grace: grace}
	if errs := register(s, s, []*jobSpec{j}, e.handler); len(errs) > 0 {
		t.Fatal(errs)
	}
	rec, err := s.RunNow(context.Background(), j.Name)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestHandlerEnvAndExitStatus(t *testing.T) {
	dir := t.TempDir()
	rec := runOnce(t, &jobSpec{
		Name: "env", Schedule: "@daily", Workdir: dir, Env: []string{"X=1"},
		Argv: []string{"/bin/sh", "-c", `pwd; echo "$ANARCHON_JOB|$ANARCHON_ATTEMPT|$ANARCHON_FENCE|$ANARCHON_INSTANCE|$ANARCHON_MANUAL|$X"; echo "$ANARCHON_SLOT"; exit 3`},
	}, time.Second)
	if rec.Status != anarchon.StatusError || rec.Error != "exit status 3" {
		t.Fatalf("status %s error %q", rec.Status, rec.Error)
	}
	lines := strings.Split(strings.TrimSpace(rec.Output), "\n")
	if len(lines) != 3 || lines[1] != "env|1|0|test-1|1|1" {
		t.Fatalf("output %q", rec.Output)
	}
	if real, _ := filepath.EvalSymlinks(dir); lines[0] != dir && lines[0] != real {
		t.Errorf("workdir %q, want %q", lines[0], dir)
	}
	if slot, err := time.Parse(time.RFC3339Nano, lines[2]); err != nil || !slot.Equal(rec.Slot) || !strings.HasSuffix(lines[2], "Z") {
		t.Errorf("ANARCHON_SLOT %q, slot %v (%v)", lines[2], rec.Slot, err)
	}

	rec = runOnce(t, &jobSpec{Name: "missing", Schedule: "@daily", Argv: []string{"/nonexistent/cmd"}}, time.Second)
	if rec.Status != anarchon.StatusError || !strings.Contains(rec.Error, "/nonexistent/cmd") {
		t.Errorf("missing command: %s %q", rec.Status, rec.Error)
	}
	// A program is looked up in the job's own PATH when it sets one, as
	// validate looks it up (lookProgram), not in the daemon's.
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "myprog"), []byte("#!/bin/sh\necho \"mine $0\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec = runOnce(t, &jobSpec{Name: "own", Schedule: "@daily", Env: []string{"PATH=" + bin}, Argv: []string{"myprog"}}, time.Second)
	if rec.Status != anarchon.StatusSuccess || !strings.Contains(rec.Output, "mine ") {
		t.Errorf("a program on the job's PATH: %s %q %q", rec.Status, rec.Error, rec.Output)
	}
	// A relative directory of the job's PATH, and a relative program, are
	// taken from the job's workdir, as exec takes a relative path from Dir.
	for _, j := range []*jobSpec{
		{Name: "relpath", Schedule: "@daily", Workdir: dir, Env: []string{"PATH=bin"}, Argv: []string{"myprog"}},
		{Name: "dotslash", Schedule: "@daily", Workdir: dir, Argv: []string{"./bin/myprog"}},
	} {
		if rec = runOnce(t, j, time.Second); rec.Status != anarchon.StatusSuccess || !strings.Contains(rec.Output, "mine ") {
			t.Errorf("%s: %s %q %q", j.Name, rec.Status, rec.Error, rec.Output)
		}
		if errs := startWarnings([]*jobSpec{j}); len(errs) != 0 {
			t.Errorf("%s: validate would warn %v of a job that runs", j.Name, errs)
		}
	}
	rec = runOnce(t, &jobSpec{Name: "other", Schedule: "@daily", Env: []string{"PATH=" + filepath.Join(dir, "none")}, Argv: []string{"sh", "-c", "true"}}, time.Second)
	if want := `start sh: "sh" not found in the job's PATH ` + filepath.Join(dir, "none"); rec.Status != anarchon.StatusError || rec.Error != want {
		t.Errorf("a program only on the daemon's PATH: %s %q, want %q", rec.Status, rec.Error, want)
	}
	// A missing workdir is named as such, not as exec's missing shell.
	gone := filepath.Join(dir, "gone")
	rec = runOnce(t, &jobSpec{Name: "nowhere", Schedule: "@daily", Workdir: gone, Argv: []string{"/bin/sh", "-c", "true"}}, time.Second)
	if want := fmt.Sprintf("workdir %q: no such file or directory; the command did not start", gone); rec.Status != anarchon.StatusError || rec.Error != want {
		t.Errorf("missing workdir: %s %q, want %q", rec.Status, rec.Error, want)
	}
}

func TestHandlerOutputTail(t *testing.T) {
	rec := runOnce(t, &jobSpec{
		Name: "big", Schedule: "@daily",
		Argv: []string{"/bin/sh", "-c", `i=0; while [ $i -lt 2000 ]; do echo "line $i"; i=$((i+1)); done; printf "no newline"`},
	}, time.Second)
	if rec.Status != anarchon.StatusSuccess || len(rec.Output) > outputTail || !strings.HasSuffix(rec.Output, "line 1999\nno newline") {
		t.Fatalf("status %s, output %d bytes ending %q", rec.Status, len(rec.Output), rec.Output[max(len(rec.Output)-30, 0):])
	}
}

func TestFormatSlot(t *testing.T) {
	for in, want := range map[time.Time]string{
		time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC):                             "2026-03-08T07:00:00Z",
		time.Date(2026, 3, 8, 7, 0, 0, 250e6, time.UTC):                         "2026-03-08T07:00:00.25Z",
		time.Date(2026, 3, 8, 3, 0, 0, 0, time.FixedZone("EDT", -4*3600)):       "2026-03-08T07:00:00Z",
		time.UnixMilli(1772953200001).In(time.FixedZone("X", 3600)).Truncate(0): "2026-03-08T07:00:00.001Z",
	} {
		if got := formatSlot(in); got != want {
			t.Errorf("formatSlot(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestTimeoutKillsProcessGroup runs a job whose shell starts a background
// sleep; the timeout must stop both, SIGKILLing the one that ignores
// SIGTERM.
func TestTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	j := &jobSpec{
		Name: "slow", Schedule: "@daily", Options: anarchon.JobOptions{Timeout: 2 * time.Second}, // long enough for "echo started" on a loaded machine
		Argv: []string{"/bin/sh", "-c", `sh -c 'trap "" TERM; sleep 30' & echo $! > ` + pidFile + `; echo started; wait`},
	}
	start := time.Now()
	rec := runOnce(t, j, 500*time.Millisecond)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v", took)
	}
	if rec.Status != anarchon.StatusError || !strings.Contains(rec.Error, anarchon.ErrTimeout.Error()) || !strings.Contains(rec.Output, "started") {
		t.Fatalf("status %s error %q output %q", rec.Status, rec.Error, rec.Output)
	}
	// The background child ignores SIGTERM: only the SIGKILL after the
	// grace period ends it.
	waitGonePID(t, pidFile, "background child")
}

// TestStopKillsGroupAfterLeader: the command exits on the stop's SIGTERM,
// but a process of its group ignores it (and holds none of its output);
// the group gets SIGKILL at the grace period's end all the same, instead
// of that process running on, orphaned.
func TestStopKillsGroupAfterLeader(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	j := &jobSpec{
		Name: "leader", Schedule: "@daily", Options: anarchon.JobOptions{Timeout: 2 * time.Second},
		Argv: []string{"/bin/sh", "-c", `sh -c 'trap "" TERM; sleep 30' >/dev/null 2>&1 & echo $! > ` + pidFile + `; echo started; exec sleep 30`},
	}
	rec := runOnce(t, j, 500*time.Millisecond)
	if rec.Status != anarchon.StatusError || !strings.Contains(rec.Error, "signal: terminated") || !strings.Contains(rec.Output, "started") {
		t.Fatalf("status %s error %q output %q", rec.Status, rec.Error, rec.Output)
	}
	waitGonePID(t, pidFile, "process of the stopped command's group")
}

// waitGonePID waits up to 5 s for the process whose PID is in pidFile to
// end (what names it in the failure). It may linger as a zombie until its
// new parent reaps it, which counts as ended.
func waitGonePID(t *testing.T, pidFile, what string) {
	t.Helper()
	pid := waitPID(t, pidFile, 0) // written before the run ended
	deadline := time.Now().Add(5 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s %d still running", what, pid)
		}
		time.Sleep(20 * time.Millisecond) // polling another process's state: no channel can say it
	}
}

// gone reports whether pid no longer runs (absent or a zombie).
func gone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// A command that exits and leaves a background process holding its output
// ("(sleep 30 &)") is recorded by its own exit status, not as an error of
// the output pipes.
func TestHandlerBackgroundChild(t *testing.T) {
	for code, want := range map[int]anarchon.Status{0: anarchon.StatusSuccess, 3: anarchon.StatusError} {
		rec := runOnce(t, &jobSpec{
			Name: "bg", Schedule: "@daily",
			Argv: []string{"/bin/sh", "-c", "(sleep 30 &); echo started; exit " + strconv.Itoa(code)},
		}, 50*time.Millisecond)
		if rec.Status != want || (code == 3 && rec.Error != "exit status 3") || !strings.Contains(rec.Output, "started") {
			t.Errorf("exit %d: status %s, error %q, output %q", code, rec.Status, rec.Error, rec.Output)
		}
	}
}
