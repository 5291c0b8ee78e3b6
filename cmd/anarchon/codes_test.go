package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fileLine matches validate's line for a file: how it was read and its
// count of jobs.
var fileLine = regexp.MustCompile(`, [0-9]+ (valid )?jobs?(, [0-9]+ invalid)?$`)

// Every error the daemon ends with carries its code at the end of its
// message (of its first line, when a hint follows), as "(code)": usage
// errors, job file mistakes and an unknown job of history alike.
func TestErrorCodes(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.cron", `# name: ok
* * * * * echo fine
# name: hour
0 25 * * * echo never
not a job line
CRON_TZ=Atlantis/Capital
# name:
# name: ok
@daily echo again
`)
	yml := writeFile(t, dir, "bad.yaml", "jobs:\n  - name: y\n    schedule: \"@daily\"\n    shell: echo y\n    jitter: soon\n")
	good := writeFile(t, dir, "good.cron", "# name: known\n@daily echo hi\n")
	store := "sqlite:" + filepath.Join(dir, "s.db")
	if code, _, errOut := cli(t, "run-now", "known", "--crontab", good, "--store", store); code != 0 {
		t.Fatalf("run-now: exit %d %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		exit int
		want []string // substrings of stderr or stdout
	}{
		{[]string{"run", "--bogus"}, 2, []string{"unknown flag: --bogus (unknown_flag)"}},
		{[]string{"run", "-x"}, 2, []string{"(unknown_flag)"}},
		{[]string{"nosuch"}, 2, []string{`unknown command "nosuch" for "anarchon" (unknown_command)`}},
		{[]string{"rn"}, 2, []string{`unknown command "rn" for "anarchon" (unknown_command)` + "\n", "Did you mean this?"}},
		{[]string{"history"}, 2, []string{"JOB is missing (accepts 1 arg(s), received 0); usage: anarchon history JOB [flags] (bad_arguments)"}},
		// one code, not bad_arguments followed by unknown_command
		{[]string{"run", "extra"}, 2, []string{"anarchon: run takes no arguments, got [\"extra\"]; usage: anarchon run [flags] (bad_arguments)\n"}},
		{[]string{"next", "0", "12", "*", "*", "*"}, 2, []string{"received 5: quote the schedule as one argument, as in: anarchon next '0 12 * * *'; usage: anarchon next EXPR|JOB [flags] (bad_arguments)"}},
		{[]string{"run", "--poll", "abc", "--crontab", good}, 2, []string{`"--poll" flag`, "(bad_flag)"}},
		{[]string{"run", "--poll"}, 2, []string{"flag needs an argument: --poll (bad_flag)"}},
		{[]string{"run", "--poll", "0s", "--crontab", good}, 2, []string{"--poll 0s: must be positive (bad_flag)"}},
		{[]string{"run", "--log-level", "loud", "--crontab", good}, 2, []string{"(bad_flag)"}},
		{[]string{"run", "--http-token-file", good, "--crontab", good}, 2, []string{"--http-token-file has no effect without --http ADDR (bad_flag)"}},
		// Files without a job: validate fails as run would.
		{[]string{"validate", "--crontab", writeFile(t, dir, "empty.cron", "# nothing yet\n")}, 1, []string{"no jobs in the given files: run would have nothing to schedule (no_jobs)"}},
		{[]string{"run", "--crontab", filepath.Join(dir, "empty.cron"), "--store", "memory:"}, 1, []string{"(no_jobs)"}},
		// A file a flag names that cannot be read is no_file, as a --crontab is.
		{[]string{"history", "x", "--store-file", filepath.Join(dir, "nonexistent")}, 1, []string{"--store-file: open ", "no such file or directory (no_file)"}},
		{[]string{"run", "--crontab", good, "--store", "memory:", "--http", "127.0.0.1:0", "--http-token-file", filepath.Join(dir, "nonexistent")}, 1, []string{"--http-token-file: open ", "(no_file)"}},
		{[]string{"run", "--status-output", "--crontab", good}, 2, []string{"--status-output has no effect without --http ADDR (bad_flag)"}},
		{[]string{"validate"}, 2, []string{"nothing to validate", "(bad_flag)"}},
		{[]string{"validate", "--crontab", bad}, 1, []string{
			`bad.cron:4: job "hour": schedule: cron: "0 25 * * *" at 2 (hour): value 25 out of range 0-23 (bad_cron)`,
			`bad.cron:5: a job line needs 5 time fields (6 or 7 with seconds or a year) and a command: "not a job line" (bad_line)`,
			`bad.cron:6: CRON_TZ: unknown time zone "Atlantis/Capital": the job under it is invalid with it: ok (line 9) (unknown_zone)`,
			`bad.cron:7: empty job name in "# name:" (empty_name)`,
			`(duplicate_name)`,
		}},
		{[]string{"validate", "--config", yml}, 1, []string{`bad.yaml:5: job "y": jitter: "soon" is not a Go duration (like 30s, 5m, 1h30m) (bad_yaml)`}},
		{[]string{"run", "--crontab", bad, "--store", "memory:"}, 1, []string{"(bad_cron)", "(bad_line)"}},
		{[]string{"history", "nojob", "--store", store}, 1, []string{`no run of job "nojob" was ever recorded`, "(unknown_job)"}},
		{[]string{"pause", "ok", "--reason", "two\nlines", "--crontab", bad, "--store", store}, 2,
			[]string{`--reason has a control character ("\n" at byte 3): give one line of printable text (bad_flag)`}},
		{[]string{"next", "@reboot"}, 1, []string{"@reboot has no fire times", "(reboot_job)"}},
		{[]string{"pause", "rb", "--crontab", writeFile(t, dir, "rb2.cron", "# name: rb\n@reboot echo\n"), "--store", store}, 1,
			[]string{`job "rb" is an @reboot job: it has no slots to pause`, "(reboot_job)"}},
		{[]string{"trigger", "rb", "--crontab", writeFile(t, dir, "rb.cron", "# name: rb\n@reboot echo\n"), "--store", store}, 1,
			[]string{`job "rb" is an @reboot job`, `"anarchon run-now rb" (reboot_job)`}},
	} {
		code, out, errOut := cli(t, tc.args...)
		for _, w := range tc.want {
			if code != tc.exit || !strings.Contains(out+errOut, w) {
				t.Errorf("%q: exit %d, want %d and %q in:\n%s%s", tc.args, code, tc.exit, w, out, errOut)
				break
			}
		}
	}
	// Warnings carry no code: they are not errors.
	_, out, _ := cli(t, "validate", "--crontab", writeFile(t, dir, "unnamed.cron", "@daily echo hi\n"))
	if !strings.Contains(out, "warning: unnamed job") || strings.Contains(out, ") (") {
		t.Errorf("warning: %s", out)
	}
}

// A job file with several mistakes ends run (and the commands that read
// the files to know the jobs) with one line for each, every line said as
// an error of its own: "anarchon: FILE:LINE: reason (code)", as the one
// line of a file with a single mistake is.
func TestErrorListLines(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.cron", "# name: ok\n* * * * * echo fine\nnot a job line\n61 * * * * echo never\n* * * * *\n")
	for _, args := range [][]string{
		{"run", "--crontab", bad, "--store", "memory:"},
		{"run-now", "ok", "--crontab", bad, "--store", "sqlite:" + filepath.Join(dir, "s.db")},
	} {
		code, _, errOut := cli(t, args...)
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		if code != 1 || len(lines) != 3 {
			t.Errorf("%q: exit %d, want 1 and three lines:\n%s", args, code, errOut)
			continue
		}
		for i, want := range []string{":3: ", ":4: ", ":5: "} {
			if l := lines[i]; !strings.HasPrefix(l, "anarchon: "+bad+want) || !regexp.MustCompile(` \([a-z_]+\)$`).MatchString(l) {
				t.Errorf("%q: line %d is %q, want \"anarchon: %s%s… (code)\"", args, i+1, l, bad, want)
			}
		}
	}
}

// validate's line for each file counts the jobs that are valid, and says
// how many are not: a job the scheduler refuses, a line or YAML job that
// could not be read at all, a job whose user does not exist, the job lines
// under an unknown CRON_TZ and a job line under an empty "# name:" (which
// is not also warned about as unnamed).
func TestValidateCounts(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "jobs.cron", `# name: ok
* * * * * echo fine
# name: hour
0 25 * * * echo never
not a job line
CRON_TZ=Atlantis/Capital
# name: ok
@daily echo again
# name: fine
@hourly echo fine
CRON_TZ=UTC
# name:
@daily echo empty-name
# name: last
@daily echo last
`)
	yml := writeFile(t, dir, "jobs.yaml", `jobs:
  - name: y
    schedule: "@daily"
    shell: echo y
    jitter: soon
    timeout: later
  - name: nameless-schedule
    shell: echo z
  - schedule: "@daily"
  - name: good
    schedule: "@daily"
    command: [date]
`)
	good := writeFile(t, dir, "good.cron", "# name: a\n@daily echo a\n# name: b\n*/10 * * * * MON echo b\n")
	code, out, _ := cli(t, "validate", "--crontab", ct, "--config", yml, "--crontab", good)
	for _, want := range []string{
		ct + ": user crontab (detected: not a system crontab path), 2 valid jobs, 5 invalid\n",
		yml + ": YAML, 1 valid job, 3 invalid\n",
		good + ": user crontab (detected: not a system crontab path, six fields: seconds reading), 2 jobs\n",
	} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("exit %d, want 1 and %q in:\n%s", code, want, out)
		}
	}
	if strings.Contains(out, "unnamed job") {
		t.Errorf("the job under the empty name is also warned about as unnamed:\n%s", out)
	}
	code, out, _ = cli(t, "validate", "--crontab", good)
	if code != 0 || !strings.HasSuffix(out, "), 2 jobs\nok: 2 jobs\n") {
		t.Errorf("valid file: exit %d:\n%s", code, out)
	}
}

// A job file that is not there is an error with code no_file (exit 1),
// printed the same way by every command that reads job files: one line
// on stderr, "anarchon: open FILE: no such file or directory (no_file)".
// validate still lists what it found in the files it could read.
func TestMissingJobFile(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.cron", "# name: j\n@daily echo hi\n")
	gone := filepath.Join(dir, "nonexistent.cron")
	goneYAML := filepath.Join(dir, "nonexistent.yaml")
	goneDir := filepath.Join(dir, "nonexistent.d")
	store := "sqlite:" + filepath.Join(dir, "s.db")
	if code, _, errOut := cli(t, "run-now", "j", "--crontab", good, "--store", store); code != 0 {
		t.Fatalf("run-now: exit %d %s", code, errOut)
	}
	want := "anarchon: open " + gone + ": no such file or directory (no_file)\n"
	for _, args := range [][]string{
		{"run", "--crontab", gone, "--start-timeout", "0"},
		{"run", "--crontab", good, "--crontab", gone, "--start-timeout", "0"},
		{"validate", "--crontab", gone},
		{"run-now", "j", "--crontab", gone},
		{"status", "--crontab", gone},
		{"history", "j", "--crontab", gone},
		{"pause", "j", "--crontab", gone},
		{"resume", "j", "--crontab", gone},
		{"trigger", "j", "--crontab", gone, "--timeout", "1s"},
		{"backfill", "j", "--crontab", gone, "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-02T00:00:00Z"},
	} {
		args := append(args, "--store", store)
		code, _, errOut := cli(t, args...)
		if code != 1 || errOut != want {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and %q", args, code, errOut, want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run-now", "j", "--config", goneYAML}, "anarchon: open " + goneYAML + ": no such file or directory (no_file)\n"},
		{[]string{"validate", "--config", goneYAML}, "anarchon: open " + goneYAML + ": no such file or directory (no_file)\n"},
		{[]string{"run-now", "j", "--crontab-dir", goneDir}, "anarchon: --crontab-dir: open " + goneDir + ": no such file or directory (no_file)\n"},
		{[]string{"validate", "--crontab-dir", goneDir}, "anarchon: --crontab-dir: open " + goneDir + ": no such file or directory (no_file)\n"},
	} {
		code, _, errOut := cli(t, append(tc.args, "--store", store)...)
		if code != 1 || errOut != tc.want {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and %q", tc.args, code, errOut, tc.want)
		}
	}
	// validate lists what the files it could read hold, then fails.
	code, out, errOut := cli(t, "validate", "--crontab", good, "--crontab", gone)
	if code != 1 || !strings.Contains(out, good+": user crontab") || strings.Contains(out, "nonexistent") || errOut != want {
		t.Errorf("validate with a missing file: exit %d\nstdout:\n%sstderr:\n%s", code, out, errOut)
	}
}

// history of a job the store never recorded says what to do next: without
// job files, give them (the job may not have run yet); with job files
// that do not define it either, say so, and no longer ask for them.
func TestHistoryUnknownJobHint(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "jobs.cron", "# name: j\n@daily echo hi\n# name: idle\n@yearly echo later\n")
	yml := writeFile(t, dir, "jobs.yaml", "jobs:\n  - name: y\n    schedule: \"@daily\"\n    shell: echo y\n")
	store := "sqlite:" + filepath.Join(dir, "s.db")
	if code, _, errOut := cli(t, "run-now", "j", "--crontab", ct, "--store", store); code != 0 {
		t.Fatalf("run-now: exit %d %s", code, errOut)
	}
	code, _, errOut := cli(t, "history", "nosuchjob", "--store", store)
	if code != 1 || !strings.Contains(errOut, "give --crontab or --config to list a job that has not run yet") || !strings.HasSuffix(errOut, "(unknown_job)\n") {
		t.Errorf("without job files: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = cli(t, "history", "nosuchjob", "--crontab", ct, "--config", yml, "--store", store)
	want := `and the job files given (--crontab ` + ct + `, --config ` + yml + `) do not define it either`
	if code != 1 || !strings.Contains(errOut, want) || strings.Contains(errOut, "give --crontab") || !strings.HasSuffix(errOut, "(unknown_job)\n") {
		t.Errorf("with job files: exit %d, stderr %q; want %q", code, errOut, want)
	}
	code, _, errOut = cli(t, "history", "idle", "--crontab", ct, "--store", store)
	if code != 0 || errOut != "job \"idle\" has not run yet\n" {
		t.Errorf("a job of the files that has not run: exit %d, stderr %q", code, errOut)
	}
}

// TestValidateWarnsOfCommandsThatCannotStart: a crontab's SHELL, a YAML
// command's program or workdir that is not on this machine is a warning
// at its line (validate still passes: the replicas may be other
// machines), and a job whose program is found through its own PATH is not.
func TestValidateWarnsOfCommandsThatCannotStart(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "c.cron", "SHELL=/bin/fishy\n# name: s1\n0 1 * * * echo s1\nSHELL=/bin/sh\n# name: s2\n0 1 * * * echo s2\n")
	yml := writeFile(t, dir, "y.yaml", `jobs:
  - name: y1
    schedule: "@daily"
    workdir: `+filepath.Join(dir, "gone")+`
    shell: echo y
  - name: y2
    schedule: "@daily"
    command: [nosuchprog, x]
  - name: y3
    schedule: "@daily"
    command: [c.cron]
    env:
      PATH: `+dir+`
`)
	code, out, _ := cli(t, "validate", "--crontab", ct, "--config", yml)
	for _, want := range []string{
		ct + `:3: warning: job "s1": its shell "/bin/fishy" is not an executable file on this machine: every run of it here would fail to start`,
		yml + `:4: warning: job "y1": workdir "` + filepath.Join(dir, "gone") + `" does not exist or cannot be read (no such file or directory)`,
		yml + `:8: warning: job "y2": its program "nosuchprog" is not an executable file on this machine`,
		yml + `:11: warning: job "y3": its program "c.cron" is not an executable file`,
		"ok: 5 jobs",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, want 0 and %q in:\n%s", code, want, out)
		}
	}
	if strings.Contains(out, `"s2"`) {
		t.Errorf("a job whose shell is there was warned about:\n%s", out)
	}
	// The same file made executable: found through the job's PATH.
	if err := os.Chmod(ct, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, out, _ := cli(t, "validate", "--config", yml); strings.Contains(out, `"y3"`) {
		t.Errorf("a program on the job's own PATH was warned about:\n%s", out)
	}
}

// A message of several lines (a PostgreSQL error's detail and hint) has
// its code at the end of the first line, where a reader and a script look.
func TestCodeOnFirstLine(t *testing.T) {
	multi := errors.New("connect failed: FATAL: role \"x\" does not exist\nDETAIL: …\nHINT: create it")
	for _, err := range []error{
		&StoreURLError{URL: "postgres://h/db", Code: StoreOpenFailed, Reason: multi.Error()},
		codedError{codeTimeout, multi},
		usageError{codeBadFlag, multi},
	} {
		first, rest, _ := strings.Cut(err.Error(), "\n")
		if !strings.HasSuffix(first, ")") || !strings.Contains(first, "does not exist (") || rest != "DETAIL: …\nHINT: create it" {
			t.Errorf("%T: %q, want the code ending the first line and the rest below", err, err.Error())
		}
	}
}
