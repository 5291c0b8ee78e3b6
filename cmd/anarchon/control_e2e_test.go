package main

import (
	"bufio"
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
	// Paused already: a second pause keeps the first and says so.
	if o, e, code := anarchonCmd(t, dir, append([]string{"pause", "tick", "--reason", "again"}, cli...)...); code != 0 ||
		!strings.Contains(o, "tick is paused already, by ") || !strings.Contains(o, ": e2e; nothing changed") {
		t.Errorf("pause of a paused job: exit %d\n%s%s", code, o, e)
	}
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

	o, e, code := anarchonCmd(t, dir, append([]string{"trigger", "fail", "--timeout", "30s", "--key", "once"}, cli...)...)
	if code != 3 || !strings.Contains(o, "fail ran on r") || strings.Contains(o, "had run already") {
		t.Errorf("trigger fail: exit %d, want 3 and where it ran\n%s%s", code, o, e)
	}
	// The same key again answers the first run's result and says so.
	if o2, e, code := anarchonCmd(t, dir, append([]string{"trigger", "fail", "--timeout", "30s", "--key", "once"}, cli...)...); code != 3 ||
		!strings.Contains(o2, "key once had run already") || !strings.Contains(o2, "did not run the job again") {
		t.Errorf("trigger fail again: exit %d, want 3 and that the job did not run again\n%s%s", code, o2, e)
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

// TestStoppedDaemonSettlesTrigger: a daemon stopped past --stop-timeout
// while it runs a triggered job records the run as an error and finishes
// the request before it exits, so the waiting "trigger" ends with that
// error and the history has no run left running. Before, the daemon
// exited first: both stayed running for good, and trigger waited out its
// timeout.
func TestStoppedDaemonSettlesTrigger(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a daemon")
	}
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	crontab := writeFile(t, dir, "crontab", "# name: long\n@daily echo $$ > "+pidFile+"; sleep 60\n")
	store := "sqlite:" + filepath.Join(dir, "a.db")
	p := startDaemon(t, dir, "d1", "--crontab", crontab, "--store", store, "--stop-timeout", "1s", "--kill-grace", "1s")
	p.waitReady(t, 60*time.Second)
	trig := exec.Command(daemonBinary(t), "trigger", "long", "--crontab", crontab, "--store", store, "--key", "k1", "--timeout", "2m")
	trig.Dir = dir
	var tout, terr strings.Builder
	trig.Stdout, trig.Stderr = &tout, &terr
	if err := trig.Start(); err != nil {
		t.Fatal(err)
	}
	trigDone := make(chan error, 1)
	go func() { trigDone <- trig.Wait() }()
	waitPID(t, pidFile, 30*time.Second)
	p.stop(t, 30*time.Second)
	select {
	case err := <-trigDone:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 || !strings.Contains(tout.String(), "scheduler stopped") {
			t.Errorf("trigger: %v\nstdout %s\nstderr %s\nwant a failure naming the stop", err, tout.String(), terr.String())
		}
	case <-time.After(30 * time.Second):
		_ = trig.Process.Kill()
		t.Fatalf("trigger still waiting 30 s after the daemon stopped\nstderr %s", terr.String())
	}
	recs := historyJSON(t, dir, store, "long")
	if len(recs) != 1 || recs[0].Status != "error" || !strings.Contains(recs[0].Error, "scheduler stopped") {
		t.Errorf("history %+v, want one run, error naming the stop", recs)
	}
	data, _ := os.ReadFile(p.logPath)
	if !strings.Contains(string(data), "manual run stopped") || strings.Contains(string(data), "run handed over") {
		t.Errorf("the daemon's log does not say the manual run was stopped (and not handed over):\n%s", data)
	}
}

// TestTriggerInterrupted: Ctrl-C ends trigger's wait, not the request:
// it exits 130 and says where the request stands and the key to wait for
// it under (a random one, here), instead of ending silently.
func TestTriggerInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the anarchon binary")
	}
	t.Parallel()
	dir := t.TempDir()
	crontab := writeFile(t, dir, "crontab", "# name: j\n@daily true\n")
	store := "sqlite:" + writeFile(t, dir, "a.db", "") // trigger never creates the file
	trig := exec.Command(daemonBinary(t), "trigger", "j", "--crontab", crontab, "--store", store, "--timeout", "2m", "--log-level", "debug")
	trig.Dir = dir
	errPipe, err := trig.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := trig.Start(); err != nil {
		t.Fatal(err)
	}
	// The request is stored and the wait has begun once its line is out.
	waiting := make(chan struct{})
	var terr strings.Builder
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(errPipe)
		seen := false
		for sc.Scan() {
			terr.WriteString(sc.Text() + "\n")
			if !seen && strings.Contains(sc.Text(), "waiting for a replica to run the trigger") {
				seen = true
				close(waiting)
			}
		}
	}()
	select {
	case <-waiting:
	case <-time.After(30 * time.Second):
		_ = trig.Process.Kill()
		t.Fatal("trigger did not begin its wait")
	}
	done := make(chan error, 1)
	go func() {
		<-read // every line read before Wait closes the pipe
		done <- trig.Wait()
	}()
	_ = trig.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		msg := terr.String()
		if !ok || ee.ExitCode() != 130 ||
			!regexp.MustCompile(`(?m)^anarchon: job "j": .*pending: no instance that has the job took it yet.*stopped by signal interrupt; .*--key \S+ \(interrupted\)$`).MatchString(msg) {
			t.Errorf("trigger after SIGINT: %v\n%s\nwant exit 130 naming the state and the key", err, msg)
		}
	case <-time.After(20 * time.Second):
		_ = trig.Process.Kill()
		t.Fatal("trigger did not end on SIGINT")
	}
}
