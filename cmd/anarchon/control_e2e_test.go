package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// anarchonCmd runs the binary with args in dir and returns its stdout and
// exit code.
func anarchonCmd(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(daemonBinary(t), args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return string(out), stderr.String(), code
}

// slotsOf returns how many lines of an output file each slot has.
func slotsOf(t *testing.T, path string) map[time.Time]int {
	out := map[time.Time]int{}
	for _, l := range readOutput(t, path) {
		out[l.slot]++
	}
	return out
}

// jobControl runs three daemons on store with a 1 s job "tick" and a 1 s
// job "other": "pause tick" from a fourth process stops tick on all three
// (no run for the slots while paused) while other runs; after "resume"
// every slot runs once; "trigger fail" from the fourth process runs once
// on a replica and exits with the job's status; "pause nope" is a coded
// error; a SIGHUP with an edited crontab removes "other" and adds "added"
// on every replica without a restart and without a duplicate run; a
// broken file on SIGHUP is rejected and the jobs keep running.
func jobControl(t *testing.T, store string) {
	daemonBinary(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	crontab := filepath.Join(dir, "crontab")
	write := func(jobs ...string) {
		text := "OUT=" + out + "\n"
		for _, j := range jobs {
			text += "# name: " + j + "\n* * * * * * mkdir -p \"$OUT\" && echo \"$ANARCHON_SLOT $ANARCHON_ATTEMPT $ANARCHON_INSTANCE\" >> \"$OUT/" + j + "\"\n"
		}
		text += "# name: fail\n0 0 1 1 * exit 3\n"
		if err := os.WriteFile(crontab, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tick", "other")
	args := []string{"--store", store, "--crontab", crontab, "--poll", "200ms"}
	var ps []*proc
	for _, id := range []string{"r1", "r2", "r3"} {
		ps = append(ps, startDaemon(t, dir, id, args...))
	}
	for _, p := range ps {
		p.waitReady(t, 30*time.Second)
	}
	cli := []string{"--store", store, "--crontab", crontab}
	time.Sleep(3 * time.Second)
	if o, e, code := anarchonCmd(t, dir, append([]string{"pause", "tick", "--reason", "e2e"}, cli...)...); code != 0 {
		t.Fatalf("pause: exit %d\n%s%s", code, o, e)
	}
	paused := time.Now()
	time.Sleep(5500 * time.Millisecond) // five slots
	rep := statusJSON(t, dir, cli...)
	if len(rep.Paused) != 1 || rep.Paused[0].Job != "tick" || rep.Paused[0].Reason != "e2e" || rep.Paused[0].By == "" {
		t.Errorf("status paused = %+v, want tick paused with who and why", rep.Paused)
	}
	resumed := time.Now()
	if o, e, code := anarchonCmd(t, dir, append([]string{"resume", "tick", "--json"}, cli...)...); code != 0 || !strings.Contains(o, `"paused": false`) {
		t.Fatalf("resume: exit %d\n%s%s", code, o, e)
	}
	// Resumed already: a second resume changes nothing and says so.
	if o, e, code := anarchonCmd(t, dir, append([]string{"resume", "tick"}, cli...)...); code != 0 || !strings.Contains(o, "tick is not paused: nothing to resume") {
		t.Errorf("resume of a job not paused: exit %d\n%s%s", code, o, e)
	}
	time.Sleep(3 * time.Second)

	o, e, code := anarchonCmd(t, dir, append([]string{"trigger", "fail", "--timeout", "30s"}, cli...)...)
	if code != 3 || !strings.Contains(o, "fail ran on r") {
		t.Errorf("trigger fail: exit %d, want 3 and where it ran\n%s%s", code, o, e)
	}
	// The slot as history shows it: three fraction digits, zeros kept.
	if !regexp.MustCompile(`\(slot \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\)`).MatchString(o) {
		t.Errorf("trigger fail: the slot not in history's form:\n%s", o)
	}
	if _, e, code := anarchonCmd(t, dir, append([]string{"pause", "nope"}, cli...)...); code != 1 || !strings.Contains(e, "(unknown_job)") {
		t.Errorf("pause nope: exit %d, stderr %q; want 1 and (unknown_job)", code, e)
	}

	// A broken file is rejected; then a good edit applies.
	if err := os.WriteFile(crontab, []byte("# name: broken\n* * * * 99 echo month 99 does not exist\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		_ = p.cmd.Process.Signal(syscall.SIGHUP)
	}
	time.Sleep(2 * time.Second)
	write("tick", "added")
	for _, p := range ps {
		_ = p.cmd.Process.Signal(syscall.SIGHUP)
	}
	hup := time.Now()
	time.Sleep(4 * time.Second)
	end := time.Now()
	for _, p := range ps {
		p.stop(t, 30*time.Second)
	}

	ticks := slotsOf(t, filepath.Join(out, "tick"))
	for s, n := range ticks {
		if n != 1 {
			t.Errorf("tick slot %v ran %d times", s, n)
		}
		if s.After(paused.Add(time.Second)) && s.Before(resumed.Add(-time.Second)) {
			t.Errorf("tick slot %v ran while paused (%v to %v)", s, paused, resumed)
		}
	}
	for s := resumed.Truncate(time.Second).Add(2 * time.Second); s.Before(end.Add(-2 * time.Second)); s = s.Add(time.Second) {
		if ticks[s.UTC()] != 1 {
			t.Errorf("tick slot %v after the resume ran %d times, want 1", s.UTC(), ticks[s.UTC()])
		}
	}
	others := slotsOf(t, filepath.Join(out, "other"))
	for s, n := range others {
		if n != 1 {
			t.Errorf("other slot %v ran %d times", s, n)
		}
		if s.After(hup.Add(time.Second)) {
			t.Errorf("other slot %v ran after it was removed", s)
		}
	}
	if len(others) < 10 {
		t.Errorf("other ran %d slots, want it running through the broken reload", len(others))
	}
	added := slotsOf(t, filepath.Join(out, "added"))
	if len(added) < 2 {
		t.Errorf("added ran %d slots after the reload, want >= 2", len(added))
	}
	for s, n := range added {
		if n != 1 {
			t.Errorf("added slot %v ran %d times", s, n)
		}
	}
	logs := ""
	for _, p := range ps {
		data, _ := os.ReadFile(p.logPath)
		logs += string(data)
	}
	for _, want := range []string{"reload rejected", "job added", "job removed", "reloaded"} {
		if n := strings.Count(logs, want); n < 3 {
			t.Errorf("%q logged %d times, want once per replica", want, n)
		}
	}
}

func TestJobControlSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three daemons for 25 s")
	}
	t.Parallel()
	jobControl(t, "sqlite:"+filepath.Join(t.TempDir(), "anarchon.db"))
}

func TestJobControlPostgres(t *testing.T) {
	store := postgresStore(t, "three daemons", "ctl_")
	if testing.Short() {
		t.Skip("runs three daemons for 25 s")
	}
	t.Parallel()
	jobControl(t, store)
}
