package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestFailureIsLoggedAtWarn runs the daemon with a failing job at
// --log-level warn, in text and JSON: the failure is a WARN line with the
// exit code and the last output lines, and the job's ordinary output is not
// logged.
func TestFailureIsLoggedAtWarn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon binary")
	}
	bin := daemonBinary(t)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ct := writeFile(t, dir, "crontab", "# name: failing\n* * * * * * echo some output; echo last words >&2; exit 3\n")
			logPath := filepath.Join(dir, "log")
			logf, err := os.Create(logPath)
			if err != nil {
				t.Fatal(err)
			}
			defer logf.Close()
			cmd := exec.Command(bin, "run", "--crontab", ct, "--store", "memory:", "--log-level", "warn", "--log-format", format)
			cmd.Stderr, cmd.Stdout = logf, logf
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			line := pollLog(t, logPath, "run failed", 30*time.Second)
			if format == "json" {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("not JSON: %q", line)
				}
				if rec["level"] != "WARN" || rec["exit_code"] != float64(3) || rec["job"] != "failing" ||
					!strings.Contains(rec["output"].(string), "last words") || rec["attempt"] != float64(1) {
					t.Errorf("record %v", rec)
				}
				if _, err := time.Parse(time.RFC3339, rec["slot"].(string)); err != nil {
					t.Errorf("slot %v is not RFC 3339", rec["slot"])
				}
			} else if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "exit_code=3") || !strings.Contains(line, "last words") {
				t.Errorf("line %q", line)
			}
			data, _ := os.ReadFile(logPath)
			if strings.Contains(string(data), "level=INFO") || strings.Contains(string(data), `"level":"INFO"`) {
				t.Errorf("INFO lines at --log-level warn:\n%s", data)
			}
			// The text summary keeps its header and leaves out the jobs'
			// lines, which a crontab of hundreds of jobs would flood.
			if format == "text" && (!strings.Contains(string(data), "jobs:     1\n") || strings.Contains(string(data), "next:")) {
				t.Errorf("summary at --log-level warn: want the header with \"jobs:\" and no job's line:\n%s", data)
			}
		})
	}
}

// pollLog waits until a line of the file contains want. Another process
// writes it: there is no channel to wait on.
func pollLog(t *testing.T, path, want string, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		data, _ := os.ReadFile(path)
		for _, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, want) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %v:\n%s", want, within, data)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestOutcomeLines checks the outcome observer's lines from events.
func TestOutcomeLines(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	e := &executor{}
	o := newOutcomes(log, "inst-1", e)
	slot := time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
	run := &anarchon.Run{Job: "j", Slot: slot, Attempt: 2}
	e.keepOutput(run, "a\nb\nc\n")
	err := exec.Command("/bin/sh", "-c", "kill -TERM $$").Run()
	o.history = func(context.Context, string, int) ([]anarchon.RunRecord, error) {
		return []anarchon.RunRecord{{Slot: slot, Attempt: 1, InstanceID: "inst-2", Status: anarchon.StatusLeaseLost}}, nil
	}
	o.observe(anarchon.Event{Kind: anarchon.EventClaim, Job: "j", Slot: slot, Attempt: 2, Outcome: "won"})
	e.awaitLine(context.Background(), runKey("j", slot, 2)) // as the command of attempt 2 does
	o.observe(anarchon.Event{Kind: anarchon.EventRunEnd, Job: "j", Slot: slot, Attempt: 2, Status: anarchon.StatusError, Err: err, Duration: time.Second})
	o.observe(anarchon.Event{Kind: anarchon.EventSlotSkipped, Job: "j", Slot: slot, Status: anarchon.StatusSkipped})
	o.observe(anarchon.Event{Kind: anarchon.EventRunEnd, Job: "j", Slot: slot, Attempt: 1, Status: anarchon.StatusSuccess})
	o.observe(anarchon.Event{Kind: anarchon.EventSlotSkipped, Job: "j", Slot: slot, Status: anarchon.StatusMissed, Lateness: 3 * time.Second})
	o.observe(anarchon.Event{Kind: anarchon.EventSlotSkipped, Job: "j", Slot: slot, Attempt: 2, Status: anarchon.StatusSkipped})
	o.observe(anarchon.Event{Kind: anarchon.EventRunEnd, Job: "j", Slot: slot, Attempt: 1, Status: anarchon.StatusError,
		Err: fmt.Errorf("%w (process group stopped: signal: terminated)", anarchon.ErrStopped)})
	o.observe(anarchon.Event{Kind: anarchon.EventRunEnd, Job: "j", Slot: slot, Attempt: 1, Status: anarchon.StatusError, Manual: true,
		Err: fmt.Errorf("%w (process group stopped: signal: terminated)", anarchon.ErrStopped)})
	var recs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, m)
	}
	if len(recs) != 8 {
		t.Fatalf("%d lines:\n%s", len(recs), buf.String())
	}
	if recs[0]["msg"] != "taking over a run another instance did not finish" || recs[0]["attempt"] != float64(2) ||
		recs[0]["previous_instance"] != "inst-2" || recs[0]["previous_status"] != "lease_lost" {
		t.Errorf("takeover %v", recs[0])
	}
	if recs[1]["level"] != "WARN" || recs[1]["signal"] != "terminated" || recs[1]["output"] != "a\nb\nc" ||
		recs[1]["slot"] != "2026-03-08T07:00:00Z" || recs[1]["instance"] != "inst-1" {
		t.Errorf("failure %v", recs[1])
	}
	if recs[2]["msg"] != "slot skipped" || !strings.Contains(recs[2]["reason"].(string), "overlap") {
		t.Errorf("skip %v", recs[2])
	}
	if recs[3]["level"] != "INFO" || recs[3]["exit_code"] != float64(0) {
		t.Errorf("success %v", recs[3])
	}
	if recs[4]["level"] != "WARN" || recs[4]["status"] != "missed" || !strings.Contains(recs[4]["reason"].(string), "3s after the slot") {
		t.Errorf("missed %v", recs[4])
	}
	if recs[5]["status"] != "skipped" || !strings.Contains(recs[5]["reason"].(string), "attempt 2 took over a run") {
		t.Errorf("skipped takeover %v", recs[5])
	}
	if recs[6]["level"] != "INFO" || recs[6]["msg"] != "run handed over" || !strings.Contains(recs[6]["reason"].(string), "stopping") {
		t.Errorf("hand-over %v", recs[6])
	}
	// a manual run has no backup: not "handed over"
	if recs[7]["level"] != "WARN" || recs[7]["msg"] != "manual run stopped" || !strings.Contains(recs[7]["reason"].(string), "nothing runs it again") {
		t.Errorf("manual run stopped %v", recs[7])
	}
}

func TestLastLines(t *testing.T) {
	if got := lastLines("1\n2\n3\n", 2); got != "2\n3" {
		t.Errorf("%q", got)
	}
	if got := lastLines("", 2); got != "" {
		t.Errorf("%q", got)
	}
}

// TestEnvironmentFlags sets flags from ANARCHON_* variables; the command
// line wins over the environment.
func TestEnvironmentFlags(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: hello\n@daily echo hi\n")
	store := "sqlite:" + filepath.Join(dir, "env.db")
	t.Setenv("ANARCHON_STORE", store)
	t.Setenv("ANARCHON_CRONTAB", ct)
	if code, out, errOut := cli(t, "run-now", "hello"); code != 0 || !strings.Contains(out, "success") {
		t.Fatalf("run-now from the environment: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := cli(t, "history", "hello"); code != 0 || !strings.Contains(out, "success") {
		t.Fatalf("history with ANARCHON_STORE: exit %d\n%s", code, out)
	}
	if code, _, errOut := cli(t, "history", "hello", "--store", "sqlite:"+filepath.Join(dir, "other.db")); code != 1 || !strings.Contains(errOut, "no store at") {
		t.Errorf("the flag did not win over the environment: exit %d %s", code, errOut)
	}
	t.Setenv("ANARCHON_LOG_LEVEL", "loud")
	if code, _, errOut := cli(t, "history", "hello"); code != 2 || !strings.Contains(errOut, "loud") {
		t.Errorf("bad ANARCHON_LOG_LEVEL: exit %d %s", code, errOut)
	}
}

// TestOperatorEdges: read-only commands, and the commands that write for
// the replicas (pause, resume, trigger), create no SQLite file, history of
// an unknown job fails, usage errors exit 2, history shows claim times.
func TestOperatorEdges(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo.db")
	named := writeFile(t, dir, "named", "# name: x\n@daily echo\n")
	for _, args := range [][]string{
		{"history", "x", "--store", "sqlite:" + missing},
		{"status", "--crontab", writeFile(t, dir, "ct", "@daily echo\n"), "--store", "sqlite:" + missing},
		{"pause", "x", "--crontab", named, "--store", "sqlite:" + missing},
		{"resume", "x", "--crontab", named, "--store", "sqlite:" + missing},
		{"trigger", "x", "--crontab", named, "--timeout", "1s", "--store", "sqlite:" + missing},
		{"trigger", "x", "--cancel", "--key", "k", "--crontab", named, "--store", "sqlite:" + missing},
	} {
		code, _, errOut := cli(t, args...)
		if code != 1 || !strings.Contains(errOut, "no store at") {
			t.Errorf("%q: exit %d %q", args, code, errOut)
		}
		if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%q created %s", args, missing)
		}
	}
	store := "sqlite:" + filepath.Join(dir, "real.db")
	ct := writeFile(t, dir, "crontab", "# name: known\n@daily echo\n")
	if code, _, _ := cli(t, "run-now", "known", "--crontab", ct, "--store", store); code != 0 {
		t.Fatalf("run-now exit %d", code)
	}
	if code, _, errOut := cli(t, "history", "unknown", "--store", store); code != 1 || !strings.Contains(errOut, `no run of job "unknown" was ever recorded`) {
		t.Errorf("unknown job: exit %d %q", code, errOut)
	}
	code, out, _ := cli(t, "history", "known", "--store", store)
	if code != 0 || !strings.Contains(out, "CLAIMED") {
		t.Errorf("history: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"nosuch"}, {"history"}, {"run", "--bogus"}, {"history", "a", "b"}} {
		if code, _, _ := cli(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// TestRunAsOtherUserNotRoot: a line for another user is an error at
// validate when anarchon is not root (here: when the test is not root, or
// for a user that does not exist).
func TestRunAsOtherUser(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "ct", "# name: x\n0 0 * * * no-such-user-anarchon echo\n")
	code, out, _ := cli(t, "validate", "--crontab", ct, "--format", "system")
	if code != 1 || !strings.Contains(out, `user "no-such-user-anarchon": no such user`) {
		t.Errorf("unknown user: exit %d\n%s", code, out)
	}
	if os.Geteuid() != 0 {
		ct := writeFile(t, dir, "ct2", "# name: x\n0 0 * * * root echo\n")
		code, out, _ := cli(t, "validate", "--crontab", ct, "--format", "system")
		if code != 1 || !strings.Contains(out, "not root") {
			t.Errorf("root line as non-root: exit %d\n%s", code, out)
		}
	}
}

// TestCrontabDir reads a directory as cron reads /etc/cron.d: system
// format, and files with dots or ~ in their names skipped.
func TestCrontabDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "app", "# name: app\n0 0 * * * root echo\n")
	writeFile(t, dir, "app.dpkg-old", "garbage\n")
	writeFile(t, dir, "app~", "garbage\n")
	writeFile(t, dir, "app.cron", "garbage\n")
	writeFile(t, dir, "job.v1", "garbage\n")
	writeFile(t, dir, "job.v2", "garbage\n")
	writeFile(t, dir, "cleanup.sh", "garbage\n")
	writeFile(t, dir, "app.v1", "garbage\n") // with app.cron, beside app
	writeFile(t, dir, "cron_d", "# name: cd\n0 0 * * * root echo\n")
	writeFile(t, dir, "cron.d.bak2", "garbage\n")
	writeFile(t, dir, ".placeholder", "garbage\n")
	if err := os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	code, out, _ := cli(t, "validate", "--crontab-dir", dir)
	if os.Geteuid() != 0 {
		if code != 1 || !strings.Contains(out, "not root") {
			t.Errorf("exit %d\n%s", code, out)
		}
		return
	}
	if code != 0 || !strings.Contains(out, "system crontab (detected: a --crontab-dir file") || !strings.HasSuffix(out, "ok: 2 jobs\n") {
		t.Errorf("exit %d\n%s", code, out)
	}
	// The skipped files are named, but for the dot file (Debian ships
	// /etc/cron.d/.placeholder); a dangling link is skipped too, and the
	// directory's other file still runs.
	// Each warning says what to do: the name to give a file, the link's
	// missing target.
	for name, said := range map[string]string{
		"app.dpkg-old": "it looks like a copy a package manager or an editor left: remove it, or give it such a name if it is to run",
		"app~":         "it looks like a copy a package manager or an editor left: remove it, or give it such a name if it is to run",
		"app.cron":     `"app.cron" and "app.v1" look like other versions of "app", which is read: remove them, or give one a name no other file has to run it too`,
		"app.v1":       `"app.cron" and "app.v1" look like other versions of "app", which is read: remove them, or give one a name no other file has to run it too`,
		"cron.d.bak2":  `"cron_d" is read: if this is another version of it, remove it; to run both, rename it "cron_d_bak2"`,
		"job.v1":       `"job.v1" and "job.v2" look like versions of one job "job": rename the one that is to run "job" and remove the others`,
		"job.v2":       `"job.v1" and "job.v2" look like versions of one job "job": rename the one that is to run "job" and remove the others`,
		"cleanup.sh":   `rename it "cleanup" to have it read`,
		".placeholder": "",
		"dangling":     "a link to " + filepath.Join(dir, "gone") + ", which does not exist",
	} {
		line := filepath.Join(dir, name) + ": warning: skipped:"
		if strings.Contains(out, line) != (said != "") {
			t.Errorf("%q in the output: %v, want %v\n%s", line, !(said != ""), said != "", out)
		}
		if said != "" && !strings.Contains(out, said+"\n") {
			t.Errorf("no %q in the output:\n%s", said, out)
		}
	}
}

// TestBigSteps: steps larger than the field read as cron reads them.
func TestBigSteps(t *testing.T) {
	for in, want := range map[string]string{
		"*/60 * * * *":      "0 * * * *",
		"0 */24 * * *":      "0 0 * * *",
		"5-10/60 * * * *":   "5 * * * *",
		"*/59 * * * *":      "*/59 * * * *",
		"0 0 */32 * *":      "0 0 1 * *",
		"0 0 * */13 *":      "0 0 * 1 *",
		"0 0 * * */8":       "0 0 * * 0",
		"*/61 */60 * * * *": "0 0 * * * *",
	} {
		if got := strings.Join(bigSteps(strings.Fields(in)), " "); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// TestRebootRunsOnceAtStart: an @reboot job runs once when the daemon
// starts (on this replica), and never again on its own; the history
// records it as a manual run, as the README says.
func TestRebootRunsOnceAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon binary")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "boot")
	ct := writeFile(t, dir, "crontab", "# name: boot\n@reboot echo booted >> "+out+"\n")
	p := startDaemon(t, dir, "r1", "--crontab", ct, "--store", "sqlite:"+filepath.Join(dir, "db"))
	p.waitReady(t, 60*time.Second)
	pollLog(t, p.logPath, "run succeeded", 30*time.Second)
	p.stop(t, 15*time.Second)
	data, _ := os.ReadFile(out)
	if string(data) != "booted\n" {
		t.Errorf("output %q, want one run", data)
	}
	recs := historyJSON(t, dir, "sqlite:"+filepath.Join(dir, "db"), "boot")
	if len(recs) != 1 || recs[0].Status != "success" || !recs[0].Manual {
		t.Errorf("history %+v, want one successful manual run", recs)
	}
}

// TestMetricsFamilies: every family is present at zero from the start,
// with build info and help texts naming the claim outcomes.
func TestMetricsFamilies(t *testing.T) {
	m := newMetrics()
	m.initJobs([]*jobSpec{{Name: "j"}})
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]string{}
	for _, f := range fams {
		have[f.GetName()] = f.GetHelp()
	}
	for _, name := range []string{"anarchon_claims_total", "anarchon_runs_total", "anarchon_slots_skipped_total",
		"anarchon_store_errors_total", "anarchon_jobs_running", "anarchon_job_last_success_timestamp_seconds",
		"anarchon_job_last_failure_timestamp_seconds", "anarchon_build_info", "anarchon_run_duration_seconds",
		"anarchon_instances", "anarchon_job_set_mismatch", "anarchon_job_set_differs", "anarchon_slot_lateness_seconds",
		"anarchon_clock_offset_seconds", "go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := have[name]; !ok {
			t.Errorf("no %s at start", name)
		}
	}
	for _, o := range []string{"running (", "done (", "none (", "paused ("} {
		if !strings.Contains(have["anarchon_claims_total"], o) {
			t.Errorf("claims help does not explain %q", o)
		}
	}
	// The paused outcome and status are series at zero from the start,
	// as the others are, so a rate over them is defined before the first.
	for name, label := range map[string]string{"anarchon_claims_total": "outcome", "anarchon_slots_skipped_total": "status"} {
		found := false
		for _, f := range fams {
			for _, mt := range f.GetMetric() {
				for _, l := range mt.GetLabel() {
					found = found || (f.GetName() == name && l.GetName() == label && l.GetValue() == "paused")
				}
			}
		}
		if !found {
			t.Errorf("no %s{%s=\"paused\"} at start", name, label)
		}
	}
	if got := testutil.CollectAndCount(m.skipped); got != len(skipStatuses) {
		t.Errorf("%d skipped series at start for one job; want %d", got, len(skipStatuses))
	}
	m.observe(anarchon.Event{Kind: anarchon.EventSlotSkipped, Job: "j", Status: anarchon.StatusPaused})
	if got := testutil.CollectAndCount(m.skipped); got != len(skipStatuses) {
		t.Errorf("a paused slot made a new skipped series: %d; want %d", got, len(skipStatuses))
	}
	m.observe(anarchon.Event{Kind: anarchon.EventRunEnd, Job: "j", Status: anarchon.StatusError})
	if v := testutil.ToFloat64(m.lastFail.WithLabelValues("j")); v < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last failure %v after a failed run", v)
	}
	if v := testutil.ToFloat64(m.lastOK.WithLabelValues("j")); v != 0 {
		t.Errorf("last success %v with no success", v)
	}
}

// TestSplitAndPassthroughLogs: --split-logs sends job stdout to stdout and
// stderr to stderr; --passthrough-logs writes the lines as they are.
func TestSplitAndPassthroughLogs(t *testing.T) {
	job := &jobSpec{Name: "two-streams", Schedule: "@daily", Argv: []string{"/bin/sh", "-c", "echo to-out; echo to-err >&2"}}
	for _, tc := range []struct {
		name                 string
		out                  outputOptions
		wantStdout, wantErr  []string
		notStdout, notStderr []string
	}{
		{"default", outputOptions{}, nil, []string{"msg=to-out", "msg=to-err"}, []string{"to-"}, nil},
		{"split", outputOptions{split: true}, []string{"msg=to-out"}, []string{"msg=to-err"}, []string{"to-err"}, []string{"to-out"}},
		{"passthrough", outputOptions{passthrough: true}, nil, []string{"to-out\n", "to-err\n"}, []string{"to-"}, []string{"msg="}},
		{"split-passthrough", outputOptions{split: true, passthrough: true}, []string{"to-out\n"}, []string{"to-err\n"}, []string{"to-err", "msg="}, []string{"to-out", "msg="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			o := tc.out
			o.stdout, o.stderr = &stdout, &stderr
			if o.split && !o.passthrough {
				o.stdoutLog = slog.New(slog.NewTextHandler(&stdout, nil))
			}
			log := slog.New(slog.NewTextHandler(&stderr, nil))
			s := anarchon.New(membackend.New(nil), &anarchon.Options{InstanceID: "t", Logger: slog.New(slog.DiscardHandler)})
			e := &executor{log: log, instance: "t", grace: time.Second, out: o}
			if errs := register(s, s, []*jobSpec{job}, e.handler); len(errs) > 0 {
				t.Fatal(errs)
			}
			if _, err := s.RunNow(t.Context(), job.Name); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.wantStdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout %q lacks %q", stdout.String(), w)
				}
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
			for _, w := range tc.notStdout {
				if strings.Contains(stdout.String(), w) {
					t.Errorf("stdout %q has %q", stdout.String(), w)
				}
			}
			for _, w := range tc.notStderr {
				if strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q has %q", stderr.String(), w)
				}
			}
		})
	}
}

// TestYAMLUser: a YAML job's user is checked as a system crontab's.
func TestYAMLUser(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "jobs.yaml", "- name: x\n  schedule: \"@daily\"\n  shell: id -un\n  user: no-such-user-anarchon\n")
	code, out, _ := cli(t, "validate", "--config", cfg)
	if code != 1 || !strings.Contains(out, cfg+":4: job \"x\": user \"no-such-user-anarchon\": no such user") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if os.Geteuid() != 0 {
		return
	}
	cfg = writeFile(t, dir, "ok.yaml", "- name: x\n  schedule: \"@daily\"\n  shell: id -un\n  user: nobody\n")
	code, out, _ = cli(t, "run-now", "x", "--config", cfg, "--store", "memory:", "--json")
	if code != 0 || !strings.Contains(out, `"output": "nobody\n"`) {
		t.Errorf("exit %d\n%s", code, out)
	}
}

// TestHistoryOfJobNotRunYet: a job named in the given files that has not
// run is not an error; an unknown one is.
func TestHistoryOfJobNotRunYet(t *testing.T) {
	dir := t.TempDir()
	store := "sqlite:" + filepath.Join(dir, "db")
	ct := writeFile(t, dir, "ct", "# name: known\n@daily echo\n# name: other\n@daily echo\n")
	if code, _, _ := cli(t, "run-now", "other", "--crontab", ct, "--store", store); code != 0 {
		t.Fatalf("run-now exit %d", code)
	}
	code, out, errOut := cli(t, "history", "known", "--crontab", ct, "--store", store, "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" || !strings.Contains(errOut, "has not run yet") {
		t.Errorf("known job: exit %d %q %q", code, out, errOut)
	}
	if code, _, _ := cli(t, "history", "known", "--store", store); code != 1 {
		t.Errorf("without the crontab: exit %d, want 1", code)
	}
}

// TestRunningGauge: the running-commands gauge is 1 while a command runs
// and 0 after.
func TestRunningGauge(t *testing.T) {
	m := newMetrics()
	j := &jobSpec{Name: "g", Schedule: "@daily", Argv: []string{"/bin/sh", "-c", "sleep 0.2"}}
	log := slog.New(slog.DiscardHandler)
	s := anarchon.New(membackend.New(nil), &anarchon.Options{InstanceID: "t", Logger: log})
	var during []float64
	e := &executor{log: log, instance: "t", grace: time.Second, running: func(job string, delta float64) {
		m.running.WithLabelValues(job).Add(delta)
		during = append(during, testutil.ToFloat64(m.running.WithLabelValues(job)))
	}}
	if errs := register(s, s, []*jobSpec{j}, e.handler); len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, err := s.RunNow(t.Context(), "g"); err != nil {
		t.Fatal(err)
	}
	if len(during) != 2 || during[0] != 1 || during[1] != 0 {
		t.Errorf("gauge went %v, want [1 0]", during)
	}
}

// TestSkippedSlotLoggedOnce runs the daemon with a job that outlasts its
// one-second schedule (overlap skip): each slot it skips is logged once, as
// the daemon's "slot skipped" with a reason, and the scheduler's own line
// for the same event is not in the log.
func TestSkippedSlotLoggedOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon binary")
	}
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: slow\n* * * * * * sleep 3.5\n")
	cmd, logPath := startLogged(t, dir, "run", "--crontab", ct, "--store", "memory:", "--log-format", "json")
	// The first run ends after 3.5 s; the slots it overlapped were skipped
	// and logged before it ended.
	pollLog(t, logPath, `"run succeeded"`, 30*time.Second)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	perSlot := map[string]int{}
	for _, l := range strings.Split(string(data), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) != nil || rec["job"] != "slow" {
			continue
		}
		switch rec["msg"] {
		case "slot not run", "slot missed: too late to run":
			t.Errorf("the scheduler's own line: %s", l)
		case "slot skipped":
			if rec["status"] != "skipped" || rec["reason"] == "" || rec["level"] != "INFO" {
				t.Errorf("line %s", l)
			}
			perSlot[rec["slot"].(string)]++
		}
	}
	if len(perSlot) < 2 {
		t.Fatalf("%d slots skipped, want the 2 or more a 3.5 s run overlaps:\n%s", len(perSlot), data)
	}
	for slot, n := range perSlot {
		if n != 1 {
			t.Errorf("slot %s logged %d times", slot, n)
		}
	}
}

// startLogged starts the daemon binary with args, its stdout and stderr
// in dir/log; the process is killed when the test ends.
func startLogged(t *testing.T, dir string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	logPath := filepath.Join(dir, "log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(daemonBinary(t), args...)
	cmd.Stderr, cmd.Stdout = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); logf.Close() })
	return cmd, logPath
}

// TestSkipReasonIsTheRecords: a slot not run is logged with the reason its
// history record gives when the scheduler wrote one (a catch-up's older
// slot), so that the log and `history` agree; without one, with the
// daemon's own text for the status.
func TestSkipReasonIsTheRecords(t *testing.T) {
	why := "catch-up at start runs only the newest 1 slot(s) of its window: this older slot was not run"
	if got := skipReason(anarchon.Event{Status: anarchon.StatusMissed, Lateness: time.Hour, Reason: why}); got != why {
		t.Errorf("reason %q; want the record's %q", got, why)
	}
	if got := skipReason(anarchon.Event{Status: anarchon.StatusMissed, Lateness: time.Hour}); !strings.Contains(got, "past max_late") {
		t.Errorf("reason without a record's: %q; want the lateness past max_late", got)
	}
}

// A paused slot's "slot skipped" line says the job is paused and where to
// see who paused it, not the bare status.
func TestPausedSlotReason(t *testing.T) {
	var buf bytes.Buffer
	o := newOutcomes(slog.New(slog.NewTextHandler(&buf, nil)), "inst-1", &executor{})
	o.observe(anarchon.Event{Kind: anarchon.EventSlotSkipped, Job: "j", Slot: time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), Status: anarchon.StatusPaused})
	if got := buf.String(); !strings.Contains(got, `level=INFO msg="slot skipped"`) || !strings.Contains(got, "status=paused") ||
		!strings.Contains(got, `reason="the job is paused: the slot is recorded paused, not run (anarchon status shows who paused it and why`) {
		t.Errorf("paused slot's line:\n%s", got)
	}
}

// A replica's own retry of a slot whose attempt failed there is logged as
// a retry, not as a takeover of another instance's run, and so is a
// retry another replica set up (TestRetryWonByAnotherReplica); a later
// attempt whose attempt before did not finish is a takeover. The slot's
// history tells them apart: here attempt 1 failed on inst-1 and attempt 2
// lost its lease on inst-2.
func TestOwnRetryIsNotATakeover(t *testing.T) {
	var buf bytes.Buffer
	ex := &executor{}
	o := newOutcomes(slog.New(slog.NewJSONHandler(&buf, nil)), "inst-1", ex)
	slot := time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
	o.history = func(context.Context, string, int) ([]anarchon.RunRecord, error) {
		return []anarchon.RunRecord{
			{Slot: slot, Attempt: 2, InstanceID: "inst-2", Status: anarchon.StatusLeaseLost},
			{Slot: slot, Attempt: 1, InstanceID: "inst-1", Status: anarchon.StatusError},
		}, nil
	}
	o.observe(anarchon.Event{Kind: anarchon.EventRunEnd, Job: "j", Slot: slot, Attempt: 1, Status: anarchon.StatusError,
		Err: errors.New("exit status 3"), Retry: true, RetryIn: 5 * time.Second, Reason: "attempt 2 (of at most 3) follows in 5s"})
	o.observe(anarchon.Event{Kind: anarchon.EventClaim, Job: "j", Slot: slot, Attempt: 2, Outcome: "won", Retry: true})
	ex.awaitLine(context.Background(), runKey("j", slot, 2))
	o.observe(anarchon.Event{Kind: anarchon.EventClaim, Job: "j", Slot: slot, Attempt: 3, Outcome: "won"})
	ex.awaitLine(context.Background(), runKey("j", slot, 3))
	var msgs []string
	for l := range strings.Lines(buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, fmt.Sprintf("%v %v failed_on=%v previous_instance=%v", m["msg"], m["attempt"], m["failed_on"], m["previous_instance"]))
	}
	want := []string{"run failed 1 failed_on=<nil> previous_instance=<nil>",
		"retrying the slot after its failed attempt 2 failed_on=inst-1 previous_instance=<nil>",
		"taking over a run another instance did not finish 3 failed_on=<nil> previous_instance=inst-2"}
	if !slices.Equal(msgs, want) {
		t.Errorf("lines %q, want %q", msgs, want)
	}
}
