package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/anarchon/anarchon"
)

// cli runs the command line in-process and returns its exit code and
// output.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = execute(args, &o, &e)
	return code, o.String(), e.String()
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNextDST(t *testing.T) {
	code, out, errOut := cli(t, "next", "0 2 * * *", "--zone", "America/New_York", "--after", "2026-03-07T12:00:00-05:00", "-n", "3")
	want := "2026-03-08T03:00:00-04:00\n2026-03-09T02:00:00-04:00\n2026-03-10T02:00:00-04:00\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s\nwant:\n%s", code, out, errOut, want)
	}
	code, out, _ = cli(t, "next", "*/90 * * * *")
	if code != 1 || out != "" {
		t.Errorf("bad expression: exit %d, stdout %q", code, out)
	}
	code, _, errOut = cli(t, "next", "@hourly", "--after", "yesterday")
	if code != 2 || !strings.Contains(errOut, "RFC 3339") { // a bad flag value
		t.Errorf("bad --after: exit %d, %q", code, errOut)
	}
	code, _, errOut = cli(t, "next", "@hourly", "--zone", "Nowhere/Land")
	if code != 2 || !strings.Contains(errOut, "Nowhere/Land") { // a bad flag value too
		t.Errorf("bad zone: exit %d, %q", code, errOut)
	}
	// More times than the scheduler computes in one call is a bad flag
	// value, not an error of the expression.
	code, out, errOut = cli(t, "next", "* * * * *", "-n", strconv.Itoa(anarchon.MaxNextSlots+1))
	if code != 2 || out != "" || !strings.Contains(errOut, "-n") {
		t.Errorf("-n above MaxNextSlots: exit %d, stdout %d bytes, stderr %q", code, len(out), errOut)
	}
	code, out, _ = cli(t, "next", "* * * * *", "-n", strconv.Itoa(anarchon.MaxNextSlots))
	if code != 0 || strings.Count(out, "\n") != anarchon.MaxNextSlots {
		t.Errorf("-n MaxNextSlots: exit %d, %d lines", code, strings.Count(out, "\n"))
	}
}

// next takes a job's name with --crontab or --config: that job's times,
// in its own zone; a name without files, or not in them, is refused with
// a hint, as --zone beside a job's name is, and an @reboot job has none.
func TestNextOfJob(t *testing.T) {
	dir := t.TempDir()
	crontab := writeFile(t, dir, "crontab", "CRON_TZ=America/New_York\n# name: nightly\n0 2 * * * true\n# name: boot\n@reboot true\n")
	code, out, errOut := cli(t, "next", "nightly", "--crontab", crontab, "--after", "2026-03-07T12:00:00-05:00", "-n", "2")
	want := "2026-03-08T03:00:00-04:00\n2026-03-09T02:00:00-04:00\n"
	if code != 0 || out != want {
		t.Fatalf("next nightly: exit %d, stdout:\n%s\nstderr: %s\nwant:\n%s", code, out, errOut, want)
	}
	code, out, errOut = cli(t, "next", "nightly")
	if code != 1 || out != "" || !strings.Contains(errOut, "give its name with --crontab FILE or --config FILE (bad_cron)") {
		t.Errorf("a name without files: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = cli(t, "next", "nightlly", "--crontab", crontab)
	if code != 1 || !strings.Contains(errOut, `nor is "nightlly" a job of --crontab `+crontab) {
		t.Errorf("an unknown name: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = cli(t, "next", "nightly", "--crontab", crontab, "--zone", "UTC")
	if code != 2 || !strings.Contains(errOut, "its own zone, America/New_York") {
		t.Errorf("--zone beside a job: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = cli(t, "next", "boot", "--crontab", crontab)
	if code != 1 || !strings.Contains(errOut, `job "boot" is an @reboot job`) {
		t.Errorf("an @reboot job: exit %d, stderr %q", code, errOut)
	}
	// An expression still reads as one beside the files.
	code, out, _ = cli(t, "next", "0 2 * * *", "--crontab", crontab, "--after", "2026-03-07T12:00:00Z", "-n", "1")
	if code != 0 || out != "2026-03-08T02:00:00Z\n" {
		t.Errorf("an expression beside the files: exit %d, stdout %q", code, out)
	}
}

// next JOB reads the files as run does: a mistake in them (an unknown
// CRON_TZ, a duplicate name) refuses them, a file that cannot be read
// is its no_file error, and a one-off job whose time is past has no
// times (too_late), where each of those printed times or "not found".
func TestNextOfJobRefusesWhatRunRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file, text, job string
		want                  []string // in stderr
	}{
		{"unknown zone", "zone.cron", "CRON_TZ=Mars/Olympus\n# name: z\n0 1 * * * true\n", "z", []string{"Mars/Olympus", "(unknown_zone)"}},
		{"duplicate name", "dup.cron", "# name: a\n0 * * * * true\n# name: a\n0 1 * * * true\n", "a", []string{"dup.cron:4", "(duplicate_name)"}},
		{"past one-off", "past.yaml", "jobs:\n  - name: past\n    at: 2020-01-01T10:00:00Z\n    shell: true\n", "past", []string{`job "past" has no fire times`, "(too_late)"}},
	} {
		flag := "--crontab"
		if strings.HasSuffix(tc.file, ".yaml") {
			flag = "--config"
		}
		path := writeFile(t, dir, tc.file, tc.text)
		code, out, errOut := cli(t, "next", tc.job, flag, path)
		if code != 1 || out != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and no times", tc.name, code, out, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: stderr %q, want %q in it", tc.name, errOut, w)
			}
		}
	}
	code, _, errOut := cli(t, "next", "nightly", "--crontab", filepath.Join(dir, "none.cron"))
	if code != 1 || !strings.Contains(errOut, "no such file") || !strings.Contains(errOut, "(no_file)") {
		t.Errorf("a missing file: exit %d, stderr %q, want its no_file error", code, errOut)
	}
}

func TestValidateReportsEverything(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", `# name: good
* * * * * echo fine
# name: badfield
0 25 * * * echo never
# name: zoned
CRON_TZ=Atlantis/Capital
0 1 * * * echo z
# name: good
5 * * * * echo again
`)
	cfg := writeFile(t, dir, "jobs.yaml", `jobs:
  - name: neg
    schedule: "@hourly"
    shell: date
    timeout: -5s
  - name: zone
    schedule: "0 9 * * *"
    zone: Mars/Base
    shell: date
  - name: good
    schedule: "@daily"
    command: [date]
`)
	code, out, errOut := cli(t, "validate", "--crontab", ct, "--config", cfg)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(l, ": warning: ") && !fileLine.MatchString(l) {
			lines = append(lines, l)
		}
	}
	if !strings.Contains(out, ct+": user crontab (detected: not a system crontab path") || !strings.Contains(out, ct+":7: warning: unnamed job") {
		t.Errorf("no format line or unnamed-job warning:\n%s", out)
	}
	want := []string{
		ct + `:4: job "badfield": schedule:`,
		ct + `:6: CRON_TZ: unknown time zone "Atlantis/Capital"`,
		ct + `:9: job "good": duplicate name (first defined at ` + ct + `:2)`,
		cfg + `:5: job "neg": timeout: -5s is negative`,
		cfg + `:8: job "zone": zone: unknown time zone "Mars/Base"`,
		cfg + `:10: job "good": duplicate name (first defined at ` + ct + `:2)`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d:\n got %s\nwant %s…", i, lines[i], w)
		}
	}

	// A valid job named as an invalid one before it: a warning at the
	// valid one's line, naming the invalid one's, and the valid one counts.
	dup := writeFile(t, dir, "dup.cron", "# name: dup\n61 * * * * echo\n# name: dup\n@daily echo ok\n")
	code, out, _ = cli(t, "validate", "--crontab", dup)
	if w := dup + `:4: warning: job "dup": the invalid job at ` + dup + `:2 has this name too`; code != 1 || !strings.Contains(out, w) || !strings.Contains(out, "1 valid job, 1 invalid") {
		t.Errorf("a name shared with an invalid job: exit %d, want 1 and %q:\n%s", code, w, out)
	}

	// Two equal unnamed lines hash to one name: the error asks for names,
	// not for renaming what no one named.
	twin := writeFile(t, dir, "twin.cron", "@daily echo same\n@daily echo same\n")
	code, out, _ = cli(t, "validate", "--crontab", twin)
	if w := `the same unnamed line as at ` + twin + `:1, so the same hashed name: give each line a "# name:" to run both, or remove one (duplicate_name)`; code != 1 || !strings.Contains(out, w) {
		t.Errorf("equal unnamed lines: exit %d, want 1 and %q:\n%s", code, w, out)
	}

	code, out, _ = cli(t, "validate", "--crontab", writeFile(t, dir, "ok", "@every 1s echo x\n"))
	if code != 0 || !strings.HasSuffix(out, "ok: 1 job\n") {
		t.Errorf("valid file: exit %d, %q", code, out)
	}
	if code, _, _ = cli(t, "validate"); code != 2 {
		t.Errorf("no files: exit %d", code)
	}
	if code, _, _ = cli(t, "validate", "--crontab", filepath.Join(dir, "missing")); code != 1 {
		t.Errorf("missing file: exit %d", code)
	}
}

// TestSystemExampleValidates checks examples/cron.d-example, whose lines
// run as root and nobody: as root it validates; otherwise each line is an
// error naming root.
func TestSystemExampleValidates(t *testing.T) {
	code, out, errOut := cli(t, "validate", "--crontab", "../../examples/cron.d-example", "--format", "system")
	if os.Geteuid() == 0 {
		if code != 0 || !strings.Contains(out, "system crontab (--format system") {
			t.Errorf("exit %d:\n%s%s", code, out, errOut)
		}
		return
	}
	if code != 1 || !strings.Contains(out, "not root") {
		t.Errorf("as uid %d: exit %d:\n%s%s", os.Geteuid(), code, out, errOut)
	}
}

// The examples validate, and the README's first command, the daemon on
// examples/crontab, warns of nothing: the only warning validate gives is
// the unnamed job the crontab shows on purpose.
func TestExamplesValidate(t *testing.T) {
	for _, args := range [][]string{{"--crontab", "../../examples/crontab"}, {"--config", "../../examples/anarchon.yaml"}} {
		code, out, errOut := cli(t, append([]string{"validate"}, args...)...)
		if code != 0 {
			t.Errorf("%s: exit %d:\n%s%s", args[1], code, out, errOut)
		}
		for _, line := range strings.Split(out+errOut, "\n") {
			if strings.Contains(line, "warning:") && !strings.Contains(line, "unnamed job") {
				t.Errorf("%s: %s", args[1], line)
			}
		}
	}
}

func TestRunNowAndHistory(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", `# name: hello
@daily echo "hello $ANARCHON_JOB manual=$ANARCHON_MANUAL $GREETING"; echo to-stderr >&2
# name: broken
@daily exit 7
GREETING=hi
`)
	store := "sqlite:" + filepath.Join(dir, "a.db")
	code, out, errOut := cli(t, "run-now", "hello", "--crontab", ct, "--store", store, "--json")
	if code != 0 {
		t.Fatalf("run-now: exit %d\n%s%s", code, out, errOut)
	}
	var rec recordJSON
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rec.Status != "success" || !rec.Manual || !strings.Contains(rec.Output, "hello hello manual=1 \n") || !strings.Contains(rec.Output, "to-stderr\n") {
		t.Errorf("record %+v", rec)
	}
	if !strings.Contains(errOut, "msg=to-stderr") || !strings.Contains(errOut, "stream=stderr") {
		t.Errorf("output not logged:\n%s", errOut)
	}

	code, out, _ = cli(t, "run-now", "broken", "--crontab", ct, "--store", store)
	if code != 7 || !strings.Contains(out, "exit status 7") {
		t.Errorf("failing run-now: exit %d, want the job's 7\n%s", code, out)
	}
	code, _, errOut = cli(t, "run-now", "nope", "--crontab", ct, "--store", store)
	if code != 1 || !strings.Contains(errOut, `no job "nope"`) {
		t.Errorf("unknown job: exit %d %q", code, errOut)
	}

	code, out, _ = cli(t, "history", "hello", "--store", store, "--json")
	var recs []map[string]any
	if err := json.Unmarshal([]byte(out), &recs); code != 0 || err != nil || len(recs) != 1 {
		t.Fatalf("history: exit %d, %v\n%s", code, err, out)
	}
	for _, k := range []string{"job", "slot", "instance", "attempt", "status", "started_at", "finished_at", "error", "manual"} {
		if _, ok := recs[0][k]; !ok {
			t.Errorf("history record has no %q: %v", k, recs[0])
		}
	}
	code, out, _ = cli(t, "history", "broken", "--store", store)
	if code != 0 || !strings.Contains(out, "exit status 7") || !strings.Contains(out, "SLOT") {
		t.Errorf("history table: exit %d\n%s", code, out)
	}

	code, out, errOut = cli(t, "status", "--crontab", ct, "--store", store, "--json")
	var st statusReport
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || len(st.Jobs) != 2 {
		t.Fatalf("status: exit %d %v\n%s%s", code, err, out, errOut)
	}
	if st.Jobs[0].Last == nil || st.Jobs[0].Last.Status != "success" || len(st.Jobs[0].Next) != 3 {
		t.Errorf("status job %+v", st.Jobs[0])
	}
	if code, out, _ = cli(t, "status", "--crontab", ct, "--store", store); code != 0 || !strings.Contains(out, "exit status 7") {
		t.Errorf("status table: exit %d\n%s", code, out)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"run"},
		{"run", "--crontab", "/nonexistent"},
		{"history"},
		{"history", "x", "-n", "0"},
		{"history", "x", "--store", "bogus://x"},
		{"nosuch"},
		{"run", "--log-level", "loud", "--crontab", "x"},
	} {
		if code, _, errOut := cli(t, args...); code == 0 || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
	// A duration or size run cannot mean is a usage error (exit 2) that
	// names the flag, checked before the job files are read ("x" does not
	// exist: reaching it would exit 1).
	for _, c := range []struct{ flag, value string }{
		{"--registry-ttl", "0s"},
		{"--registry-ttl", "-1s"},
		{"--kill-grace", "-1s"},
		{"--stop-timeout", "-1s"},
		{"--poll", "-1s"},
		{"--poll", "0s"},
		{"--watch", "-1s"},
		{"--max-log-bytes", "-5"},
		{"--http", "99999"},
		{"--http", "127.0.0.1:70000"},
		{"--http", "-1"},
		{"--http", ""},
		{"--http", ":"},
		{"--http", "127.0.0.1:"},
		{"--instance", ""},
		{"--instance", " "},
		{"--instance", " web-1"},
		{"--instance", "web\n1"},
		{"--instance", "web\xff1"},
	} {
		if code, _, errOut := cli(t, "run", c.flag+"="+c.value, "--crontab", "x"); code != 2 || !strings.Contains(errOut, c.flag) {
			t.Errorf("%s=%s: exit %d, stderr %q", c.flag, c.value, code, errOut)
		}
	}
	// A blank job file path is refused up front, quoted as other flag
	// values are, not opened (Go's error would print the path bare).
	for _, c := range []struct{ flag, value string }{
		{"--crontab", " "},
		{"--crontab", ""},
		{"--crontab-dir", " \t"},
		{"--config", " "},
	} {
		want := fmt.Sprintf("anarchon: %s %q: a blank path: give the path of ", c.flag, c.value)
		for _, cmd := range []string{"run", "validate", "status"} {
			if code, _, errOut := cli(t, cmd, c.flag, c.value); code != 2 || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, "(bad_flag)") {
				t.Errorf("%s %s %q: exit %d, stderr %q; want 2 and %q… (bad_flag)", cmd, c.flag, c.value, code, errOut, want)
			}
		}
	}
	// Zero where the README gives it a meaning is accepted: the run gets
	// past the flags to the missing job file (exit 1).
	for _, c := range []struct{ flag, value string }{
		{"--kill-grace", "0s"},
		{"--stop-timeout", "0s"},
		{"--watch", "0s"},
		{"--max-log-bytes", "0"},
		{"--instance", "web-1 (eu)"}, // blanks inside an ID are its own
	} {
		if code, _, errOut := cli(t, "run", c.flag+"="+c.value, "--crontab", "/nonexistent"); code != 1 || strings.Contains(errOut, c.flag) {
			t.Errorf("%s=%s: exit %d, stderr %q", c.flag, c.value, code, errOut)
		}
	}
	if code, out, _ := cli(t, "version"); code != 0 || !strings.HasPrefix(out, "anarchon ") {
		t.Errorf("version: %d %q", code, out)
	}
}

// TestVersionFlag checks that --version prints the line the version
// command prints, which the release checks (scripts/release-proxy.sh,
// scripts/release.sh) read.
func TestVersionFlag(t *testing.T) {
	code, out, errOut := cli(t, "--version")
	_, cmdOut, _ := cli(t, "version")
	if want := "anarchon " + version() + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"; code != 0 || out != want || cmdOut != want {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; version: %q; want %q from both", code, out, errOut, cmdOut, want)
	}
}

// With --log-format json (or ANARCHON_LOG_FORMAT=json) the error that ends
// the process is a JSON record too; without, a plain line.
func TestFatalErrorFormat(t *testing.T) {
	t.Setenv("ANARCHON_LOG_FORMAT", "")
	for _, args := range [][]string{
		{"history", "x", "--store", "ftp://h/x", "--log-format", "json"},
		{"run", "--store", "memory:", "--crontab", "/nonexistent/crontab", "--log-format=json"},
	} {
		code, _, errOut := cli(t, args...)
		var rec struct {
			Level, Msg, Error string
			Exit              int
		}
		if err := json.Unmarshal([]byte(errOut), &rec); err != nil || rec.Level != "ERROR" || rec.Error == "" || rec.Exit != code || code == 0 {
			t.Errorf("%q: exit %d, stderr %q is not one JSON error record: %v", args, code, errOut, err)
		}
	}
	code, _, errOut := cli(t, "history", "x", "--store", "ftp://h/x")
	if code == 0 || !strings.HasPrefix(errOut, "anarchon: store URL") {
		t.Errorf("text: exit %d, %q", code, errOut)
	}
	t.Setenv("ANARCHON_LOG_FORMAT", "json")
	if _, _, errOut := cli(t, "history", "x", "--store", "ftp://h/x"); !json.Valid([]byte(errOut)) {
		t.Errorf("ANARCHON_LOG_FORMAT=json: %q", errOut)
	}
}

// ANARCHON_CLOCK_OFFSET shifts the clock, as --clock-offset does: the
// daemon says so before anything else, and a value that is not a Go
// duration is an error naming it.
func TestClockOffsetEnv(t *testing.T) {
	ct := writeFile(t, t.TempDir(), "crontab", "# name: hello\n@daily echo hi\n")
	t.Setenv("ANARCHON_CLOCK_OFFSET", "-3s")
	// A bad --http stops the start right after the clock is set up.
	code, _, errOut := cli(t, "run", "--store", "memory:", "--crontab", ct, "--http", "bad")
	if code == 0 || !strings.Contains(errOut, "clock shifted for fault injection") || !strings.Contains(errOut, "offset=-3s") {
		t.Errorf("ANARCHON_CLOCK_OFFSET=-3s: exit %d, stderr %q", code, errOut)
	}
	t.Setenv("ANARCHON_CLOCK_OFFSET", "soon")
	if code, _, errOut := cli(t, "run", "--store", "memory:", "--crontab", ct, "--http", "bad"); code == 0 || !strings.Contains(errOut, `clock offset "soon"`) {
		t.Errorf("ANARCHON_CLOCK_OFFSET=soon: exit %d, stderr %q", code, errOut)
	}
}

// An error of the library, which starts "anarchon: " itself, is printed
// with the prefix once (a trigger nobody runs times out).
func TestErrorPrefixOnce(t *testing.T) {
	dir := t.TempDir()
	crontab := writeFile(t, dir, "jobs.cron", "# name: e\n@daily echo hi\n")
	writeFile(t, dir, "s.db", "") // trigger never creates the file
	code, _, errOut := cli(t, "trigger", "e", "--crontab", crontab, "--store", "sqlite:"+filepath.Join(dir, "s.db"), "--timeout", "200ms")
	if code == 0 || !strings.HasPrefix(errOut, "anarchon: job \"e\": trigger") || strings.Contains(errOut, "anarchon: anarchon:") {
		t.Fatalf("exit %d, stderr %q; want one \"anarchon: \" before the trigger's timeout", code, errOut)
	}
}

// serverEnv returns the server address in variable env, or skips the test
// (fails it under CI=true) naming the script that starts the server
// (scripts/services/<name>.sh).
func serverEnv(t *testing.T, env, name string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		msg := env + " is not set: start a server with scripts/services/" + name + ".sh and export its output"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return v
}
