package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// daemonBinary builds the anarchon binary once per test run, with
// CGO_ENABLED=0 as it ships.
func daemonBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "anarchon-e2e-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "anarchon")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is one daemon process.
type proc struct {
	id      string
	cmd     *exec.Cmd
	logPath string
	ready   chan struct{} // closed when the start summary was printed
	exited  chan error
}

// startDaemon starts "anarchon run" with args, logging to dir/<id>.log.
func startDaemon(t *testing.T, dir, id string, args ...string) *proc {
	t.Helper()
	return startDaemonEnv(t, dir, id, nil, args...)
}

// startDaemonEnv is startDaemon with env (KEY=value) added to the
// process's environment.
func startDaemonEnv(t *testing.T, dir, id string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{id: id, logPath: filepath.Join(dir, id+".log"), ready: make(chan struct{}), exited: make(chan error, 1)}
	logf, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(daemonBinary(t), append([]string{"run", "--instance", id}, args...)...)
	p.cmd.Dir = dir
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stderr = logf
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			fmt.Fprintln(logf, "stdout:", sc.Text())
			if !signalled && strings.HasPrefix(sc.Text(), "jobs:") {
				close(p.ready)
				signalled = true
			}
		}
		p.exited <- p.cmd.Wait()
		logf.Close()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
		}
		if t.Failed() {
			data, _ := os.ReadFile(p.logPath)
			if len(data) > 6000 {
				data = data[len(data)-6000:]
			}
			t.Logf("log of %s (tail):\n%s", id, data)
		}
	})
	return p
}

// waitReady waits until p printed its summary.
func (p *proc) waitReady(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-p.ready:
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("%s exited before it was ready: %v", p.id, err)
	case <-time.After(within):
		t.Fatalf("%s not ready after %v", p.id, within)
	}
}

// stop sends SIGTERM and waits for a zero exit.
func (p *proc) stop(t *testing.T, within time.Duration) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	p.waitExit(t, within)
}

func (p *proc) waitExit(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case err := <-p.exited:
		if err != nil {
			t.Errorf("%s exited with %v", p.id, err)
		}
	case <-time.After(within):
		t.Errorf("%s did not exit within %v", p.id, within)
	}
}

// outLine is one line a test job appended to its output file.
type outLine struct {
	slot     time.Time
	attempt  int
	instance string
	word     string // optional trailing word
}

func readOutput(t *testing.T, path string) []outLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []outLine
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("%s: bad line %q", path, l)
		}
		slot, err := time.Parse(time.RFC3339Nano, f[0])
		if err != nil {
			t.Fatalf("%s: bad slot in %q: %v", path, l, err)
		}
		att, _ := strconv.Atoi(f[1])
		ol := outLine{slot: slot, attempt: att, instance: f[2]}
		if len(f) > 3 {
			ol.word = f[3]
		}
		out = append(out, ol)
	}
	return out
}

// historyJSON runs "anarchon history JOB --json".
func historyJSON(t *testing.T, dir, store, job string, extra ...string) []recordJSON {
	t.Helper()
	cmd := exec.Command(daemonBinary(t), append([]string{"history", job, "--store", store, "--json", "-n", "500"}, extra...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("history %s: %v\n%s", job, err, stderr)
	}
	var recs []recordJSON
	if err := json.Unmarshal(out, &recs); err != nil {
		t.Fatalf("history %s: %v\n%s", job, err, out)
	}
	return recs
}

// postgresStore returns the PostgreSQL test server's URL
// (ANARCHON_TEST_POSTGRES_URL) with a table prefix of its own, so that
// tests running at once do not share tables; without the variable the
// test is skipped (what says what it would run), or fails under CI=true.
func postgresStore(t *testing.T, what, prefix string) string {
	t.Helper()
	url := os.Getenv("ANARCHON_TEST_POSTGRES_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("ANARCHON_TEST_POSTGRES_URL is not set (required when CI=true)")
		}
		t.Skip("set ANARCHON_TEST_POSTGRES_URL to run " + what + " on PostgreSQL")
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "prefix=" + prefix + randSuffix() + "_"
}

func randSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// e2eJobs are the jobs of the three-replica test: (name, schedule).
var e2eJobs = [][2]string{
	{"every1s", "* * * * * *"},
	{"every2s", "*/2 * * * * *"},
	{"every3s", "*/3 * * * * *"},
	{"every4s", "1-59/4 * * * * *"},
	{"interval5s", "@every 5s"},
	{"minutely", "* * * * *"},
}

// threeReplicas runs three daemons on one store for about 22 s, stops them
// with SIGTERM and checks that every slot in the window ran exactly once,
// from the jobs' output files and from "anarchon history --json".
func threeReplicas(t *testing.T, store string) {
	daemonBinary(t)
	dir := t.TempDir()
	var ct strings.Builder
	for _, j := range e2eJobs {
		fmt.Fprintf(&ct, "# name: %s\n%s echo \"$ANARCHON_SLOT $ANARCHON_ATTEMPT $ANARCHON_INSTANCE\" >> %s\n",
			j[0], j[1], filepath.Join(dir, j[0]+".out"))
	}
	crontab := writeFile(t, dir, "crontab", ct.String())

	var procs []*proc
	for i := range 3 {
		procs = append(procs, startDaemon(t, dir, fmt.Sprintf("p%d", i),
			"--crontab", crontab, "--store", store, "--stop-timeout", "5s", "--poll", "200ms", "--log-level", "warn"))
	}
	for _, p := range procs {
		p.waitReady(t, 60*time.Second)
	}
	// The window starts once all three schedule, and ends a second before
	// the stop, so that no slot at an edge is half-seen.
	from := time.Now().Add(time.Second)
	<-time.After(22 * time.Second) // the length of the scheduled window under test
	to := time.Now().Add(-time.Second)
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		p.waitExit(t, 20*time.Second)
	}

	// Expected slots, computed as the daemons compute them.
	s := anarchon.New(membackend.New(nil), nil)
	for _, j := range e2eJobs {
		if err := s.Cron(j[0], j[1], noop, nil); err != nil {
			t.Fatal(err)
		}
	}
	instances := map[string]int{}
	total := 0
	for _, j := range e2eJobs {
		name := j[0]
		var want []time.Time
		for at := from.Add(-time.Nanosecond); ; {
			next, _ := s.NextSlots(name, at, 1)
			if next[0].After(to) {
				break
			}
			want = append(want, next[0])
			at = next[0]
		}
		ran := map[time.Time]int{}
		for _, l := range readOutput(t, filepath.Join(dir, name+".out")) {
			ran[l.slot.UTC()]++
			instances[l.instance]++
			if l.attempt != 1 {
				t.Errorf("%s slot %v: attempt %d", name, l.slot, l.attempt)
			}
		}
		for slot, n := range ran {
			if n != 1 {
				t.Errorf("%s slot %v ran %d times", name, slot, n)
			}
		}
		hist := map[time.Time]int{}
		for _, r := range historyJSON(t, dir, store, name, "--crontab", crontab) { // a job may not have run yet
			slot, err := time.Parse(time.RFC3339Nano, r.Slot)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status == string(anarchon.StatusSuccess) {
				hist[slot.UTC()]++
			}
			if r.Job != name || r.Instance == "" || r.StartedAt == nil {
				t.Errorf("%s: odd record %+v", name, r)
			}
		}
		for _, slot := range want {
			if ran[slot] != 1 {
				t.Errorf("%s slot %v: ran %d times in the output file, want 1", name, slot.Format(time.RFC3339), ran[slot])
			}
			if hist[slot] != 1 {
				t.Errorf("%s slot %v: %d successful records in history, want 1", name, slot.Format(time.RFC3339), hist[slot])
			}
		}
		for slot, n := range hist {
			if n != 1 {
				t.Errorf("%s slot %v: %d successful records in history", name, slot, n)
			}
		}
		total += len(want)
	}
	if total < 40 {
		t.Errorf("only %d slots in the window", total)
	}
	t.Logf("%d slots in %v checked; runs per instance: %v", total, to.Sub(from).Round(time.Second), instances)
}

func TestThreeReplicasSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three daemons for 22 s")
	}
	t.Parallel()
	threeReplicas(t, "sqlite:"+filepath.Join(t.TempDir(), "anarchon.db"))
}

func TestThreeReplicasPostgres(t *testing.T) {
	store := postgresStore(t, "three daemons", "e2e_")
	if testing.Short() {
		t.Skip("runs three daemons for 22 s")
	}
	t.Parallel()
	threeReplicas(t, store)
}

// TestHandOver stops the instance running a long job with a short
// --stop-timeout: its command is stopped, its lease released, and the other
// instance runs the slot to the end as attempt 2.
func TestHandOver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two daemons for about 15 s")
	}
	t.Parallel()
	daemonBinary(t)
	dir := t.TempDir()
	store := "sqlite:" + filepath.Join(dir, "anarchon.db")
	out := filepath.Join(dir, "long.out")
	// One slot a few seconds from now, in UTC.
	slot := time.Now().UTC().Add(6 * time.Second).Truncate(time.Second)
	crontab := writeFile(t, dir, "crontab", fmt.Sprintf(
		"# name: long\n%d %d %d * * * line() { echo \"$ANARCHON_SLOT $ANARCHON_ATTEMPT $ANARCHON_INSTANCE $1\" >> %s; }; line start; sleep 4; line done\n",
		slot.Second(), slot.Minute(), slot.Hour(), out))
	procs := map[string]*proc{}
	for _, id := range []string{"a", "b"} {
		procs[id] = startDaemon(t, dir, id, "--crontab", crontab, "--store", store, "--stop-timeout", "500ms",
			"--kill-grace", "1s", "--poll", "200ms")
	}
	for _, p := range procs {
		p.waitReady(t, 60*time.Second)
	}
	if time.Now().After(slot) {
		t.Skip("the daemons started after the slot; the machine is too slow for this test")
	}

	first := waitLine(t, out, func(l outLine) bool { return l.word == "start" }, time.Until(slot)+10*time.Second)
	holder := procs[first.instance]
	if holder == nil || first.attempt != 1 {
		t.Fatalf("first run %+v", first)
	}
	holder.stop(t, 15*time.Second)
	backup := "a"
	if first.instance == "a" {
		backup = "b"
	}
	done := waitLine(t, out, func(l outLine) bool { return l.word == "done" }, 15*time.Second)
	if done.instance != backup || done.attempt != 2 || !done.slot.Equal(slot) {
		t.Fatalf("finished by %+v, want instance %s attempt 2 slot %v", done, backup, slot)
	}
	procs[backup].stop(t, 15*time.Second)
	data, _ := os.ReadFile(procs[backup].logPath)
	if !strings.Contains(string(data), "taking over a run another instance did not finish") {
		t.Errorf("the backup logged no takeover line")
	}
	// The library's own line for it is dropped (eventLines): one line
	// per takeover.
	if strings.Contains(string(data), "slot taken over from another instance") {
		t.Errorf("the backup logged the takeover twice, the library's line beside its own")
	}

	lines := readOutput(t, out)
	for _, l := range lines {
		if l.instance == first.instance && l.word == "done" {
			t.Errorf("the stopped instance finished its run: %+v", lines)
		}
	}
	byAttempt := map[int]recordJSON{}
	for _, r := range historyJSON(t, dir, store, "long") {
		byAttempt[r.Attempt] = r
	}
	if r := byAttempt[1]; r.ClaimedAt == nil {
		t.Errorf("attempt 1 shows no claim time: %+v", r)
	}
	if r := byAttempt[1]; r.Status != string(anarchon.StatusHandedOver) || r.Instance != first.instance {
		t.Errorf("attempt 1: %+v, want handed_over by %s", r, first.instance)
	}
	if r := byAttempt[2]; r.Status != string(anarchon.StatusSuccess) || r.Instance != backup {
		t.Errorf("attempt 2: %+v, want success by %s", r, backup)
	}
}

// waitLine polls the output file until a line matches. The file is written
// by another process: there is no channel to wait on.
func waitLine(t *testing.T, path string, match func(outLine) bool, within time.Duration) outLine {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, l := range readOutput(t, path) {
			if match(l) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no matching line in %s after %v", path, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHTTPEndpoints starts one daemon with --http and reads every endpoint.
func TestHTTPEndpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a daemon")
	}
	t.Parallel()
	dir := t.TempDir()
	crontab := writeFile(t, dir, "crontab", "# name: tick\n* * * * * * true\n")
	p := startDaemon(t, dir, "h", "--crontab", crontab, "--store", "sqlite:"+filepath.Join(dir, "a.db"), "--http", "127.0.0.1:0")
	p.waitReady(t, 60*time.Second)
	data, _ := os.ReadFile(p.logPath)
	i := strings.Index(string(data), "http://")
	if i < 0 {
		t.Fatalf("no http address in the summary")
	}
	base := strings.Fields(string(data[i:]))[0]
	// Port 0 binds any free port: the log names the one bound, which is
	// where an operator who asked for 0 reads it.
	if bound := strings.TrimPrefix(base, "http://"); strings.HasSuffix(bound, ":0") ||
		!strings.Contains(string(data), `msg="http listening" addr=`+bound) {
		t.Errorf("the bound address %s is not the one logged:\n%s", bound, data)
	}
	get := func(path string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cmdOut, code := httpGet(ctx, base+path)
		return code, cmdOut
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 200 {
		t.Errorf("/readyz %d %q", code, body)
	}
	waitLineInMetrics := time.Now().Add(10 * time.Second)
	for {
		code, body := get("/metrics")
		if code == 200 && strings.Contains(body, `anarchon_runs_total{job="tick",status="success"}`) &&
			strings.Contains(body, "anarchon_clock_offset_seconds") && strings.Contains(body, "anarchon_slot_lateness_seconds_bucket") {
			break
		}
		if time.Now().After(waitLineInMetrics) {
			t.Fatalf("/metrics %d:\n%s", code, body)
		}
		time.Sleep(100 * time.Millisecond) // until the first run is counted
	}
	code, body := get("/status")
	var st statusReport
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || len(st.Jobs) != 1 || st.Instance != "h" {
		t.Errorf("/status %d %v %s", code, err, body)
	}
	// The database file deleted under the process: it claims nothing
	// more (fail closed), and /readyz says so (the file check runs at
	// most once a second).
	if err := os.Remove(filepath.Join(dir, "a.db")); err != nil {
		t.Fatal(err)
	}
	notReady := time.Now().Add(10 * time.Second)
	for {
		code, body := get("/readyz")
		if code == 503 && strings.Contains(body, "deleted") {
			break
		}
		if time.Now().After(notReady) {
			t.Fatalf("/readyz after the database file was deleted: %d %q, want 503 naming the deletion", code, body)
		}
		time.Sleep(100 * time.Millisecond) // the daemon is another process
	}
	p.stop(t, 15*time.Second)
}

// httpGet fetches url and returns the body and status code (0 on error).
func httpGet(ctx context.Context, url string) (string, int) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err.Error(), 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error(), 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body), resp.StatusCode
}

// TestSecondSignal checks that a second signal during a graceful stop exits
// at once with a non-zero status and kills the running command.
func TestSecondSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a daemon")
	}
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "pid")
	crontab := writeFile(t, dir, "crontab", "# name: sleeper\n* * * * * * sh -c 'echo \"$ANARCHON_SLOT 1 x $$\" >> "+out+"; exec sleep 60'\n")
	p := startDaemon(t, dir, "s", "--crontab", crontab, "--store", "sqlite:"+filepath.Join(dir, "a.db"))
	p.waitReady(t, 60*time.Second)
	l := waitLine(t, out, func(outLine) bool { return true }, 10*time.Second)
	pid, _ := strconv.Atoi(l.word)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	// Two signals sent back to back may reach the process as one: send the
	// second once the first has started the graceful stop.
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(p.logPath)
		if strings.Contains(string(data), "msg=stopping") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not log the start of its stop")
		}
		time.Sleep(20 * time.Millisecond) // another process's log: nothing to wait on
	}
	// SIGINT: SIGTERM again this soon would be taken for the first one's
	// echo (echoWindow; TestSecondSignalIgnoresEcho).
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-p.exited:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 128+int(syscall.SIGINT) {
			t.Errorf("exit: %v, want status %d", err, 128+int(syscall.SIGINT))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal did not end the daemon at once")
	}
	deadline = time.Now().Add(5 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("command %d still running", pid)
		}
		time.Sleep(20 * time.Millisecond) // another process's state: nothing to wait on
	}
}

// waitPID waits up to within for a command to write its PID to pidFile
// and returns it.
func waitPID(t *testing.T, pidFile string, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		data, _ := os.ReadFile(pidFile)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no PID in %s after %v: the command did not start", pidFile, within)
		}
		time.Sleep(20 * time.Millisecond) // another process's file: nothing to wait on
	}
}

// TestRunNowSignal: Ctrl-C (SIGINT) to "anarchon run-now" stops the
// command as the daemon stops its runs and records the run with its
// error, and run-now exits with the command's status; a command that
// ignores SIGTERM is killed by a second signal. Before, the signal ended
// anarchon alone: the command ran on in its own process group and its
// history record stayed running.
func TestRunNowSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the anarchon binary")
	}
	t.Parallel()
	for _, tc := range []struct {
		name, job string
		signals   int
		status    int // run-now's exit status: the command's
		errText   string
	}{
		{"sigint", "echo $$ > PIDFILE; exec sleep 60", 1, 128 + int(syscall.SIGTERM), "signal: terminated"},
		// the crontab's shell is the command: it ignores SIGTERM
		{"second", "trap '' TERM; echo $$ > PIDFILE; sleep 60; sleep 60", 2, 128 + int(syscall.SIGKILL), "signal: killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			crontab := writeFile(t, dir, "crontab", "# name: long\n@daily "+strings.ReplaceAll(tc.job, "PIDFILE", pidFile)+"\n")
			store := "sqlite:" + filepath.Join(dir, "a.db")
			cmd := exec.Command(daemonBinary(t), "run-now", "long", "--crontab", crontab, "--store", store, "--json")
			var stdout strings.Builder
			cmd.Stdout = &stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			pid := waitPID(t, pidFile, 30*time.Second)
			_ = cmd.Process.Signal(syscall.SIGINT)
			if tc.signals == 2 {
				// A second signal within echoWindow is the first one's
				// echo: this one comes later, as a person's would.
				time.Sleep(time.Second)
				_ = cmd.Process.Signal(syscall.SIGINT)
			}
			select {
			case err := <-exited:
				ee, ok := err.(*exec.ExitError)
				if !ok || ee.ExitCode() != tc.status {
					t.Errorf("run-now: %v, want exit status %d\n%s", err, tc.status, stdout.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatal("run-now did not end after the signal")
			}
			if !gone(pid) {
				t.Errorf("command %d still running after run-now ended", pid)
			}
			recs := historyJSON(t, dir, store, "long", "--crontab", crontab)
			if len(recs) != 1 || recs[0].Status != "error" || !strings.Contains(recs[0].Error, tc.errText) || !strings.Contains(recs[0].Error, "stopped by signal interrupt") {
				t.Errorf("history %+v, want one record, status error, naming the signal and %q", recs, tc.errText)
			}
		})
	}
}
