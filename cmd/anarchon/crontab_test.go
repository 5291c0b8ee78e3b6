package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseCrontab(t *testing.T) {
	src := `# a comment
SHELL_VAR = "quoted value"
# name: heartbeat
*/5 * * * * * echo beat >> /tmp/beat

# this comment is not a name
0 3 * * * tar czf /tmp/b.tgz /etc
CRON_TZ=Europe/Athens
# name: report
30 9 * * MON-FRI echo report
TZ=America/New_York
OTHER='x'
@every 10s echo tick
@daily date +\%Y-\%m-\%d%line one%line two
15 4 * * SAT,SUN echo weekend
`
	jobs, all := parseCrontab("ct", []byte(src))
	errs, warns := splitWarnings(all)
	if len(warns) != 2 || !strings.HasPrefix(warns[0].Error(), "ct:4: warning: six time fields") ||
		!strings.HasPrefix(warns[1].Error(), `ct:14: warning: an unescaped % ends the command, which runs as "date +%Y-%m-%d" with the rest as its standard input`) {
		t.Errorf("warnings: %v", warns)
	}
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	type want struct {
		name, schedule, zone, cmd, stdin string
		line                             int
		env                              []string
	}
	wants := []want{
		{"heartbeat", "*/5 * * * * *", "", "echo beat >> /tmp/beat", "", 4, []string{"SHELL_VAR=quoted value"}},
		{hashName("0 3 * * *", "tar czf /tmp/b.tgz /etc"), "0 3 * * *", "", "tar czf /tmp/b.tgz /etc", "", 7, []string{"SHELL_VAR=quoted value"}},
		{"report", "30 9 * * MON-FRI", "Europe/Athens", "echo report", "", 10, []string{"SHELL_VAR=quoted value"}},
		{hashName("@every 10s", "echo tick"), "@every 10s", "America/New_York", "echo tick", "", 13,
			[]string{"SHELL_VAR=quoted value", "TZ=America/New_York", "OTHER=x"}},
		{hashName("@daily", `date +\%Y-\%m-\%d%line one%line two`), "@daily", "America/New_York", "date +%Y-%m-%d", "line one\nline two\n", 14, nil},
		{"", "15 4 * * SAT,SUN", "America/New_York", "echo weekend", "", 15, nil},
	}
	if len(jobs) != len(wants) {
		t.Fatalf("got %d jobs, want %d", len(jobs), len(wants))
	}
	for i, w := range wants {
		j := jobs[i]
		if w.name != "" && j.Name != w.name {
			t.Errorf("job %d: name %q, want %q", i, j.Name, w.name)
		}
		if j.Schedule != w.schedule || j.Zone != w.zone || j.Line != w.line {
			t.Errorf("job %d: schedule %q zone %q line %d, want %q %q %d", i, j.Schedule, j.Zone, j.Line, w.schedule, w.zone, w.line)
		}
		if !slices.Equal(j.Argv, []string{"/bin/sh", "-c", w.cmd}) || j.Stdin != w.stdin {
			t.Errorf("job %d: argv %q stdin %q, want %q %q", i, j.Argv, j.Stdin, w.cmd, w.stdin)
		}
		if w.env != nil && !slices.Equal(j.Env, w.env) {
			t.Errorf("job %d: env %q, want %q", i, j.Env, w.env)
		}
	}
	if errs := checkJobs(jobs); len(errs) > 0 {
		t.Errorf("registration: %v", errs)
	}
}

func TestHashNameStable(t *testing.T) {
	a, _ := parseCrontab("a", []byte("0  3 * *   * echo   hi\n"))
	b, _ := parseCrontab("b", []byte("# other\n0 3 * * * echo   hi\n"))
	if a[0].Name != b[0].Name {
		t.Fatalf("same schedule and command, names %q and %q", a[0].Name, b[0].Name)
	}
	if want := hashName("0 3 * * *", "echo   hi"); a[0].Name != want || len(want) != len("job-")+12 {
		t.Fatalf("name %q, want %q", a[0].Name, want)
	}
	c, _ := parseCrontab("c", []byte("0 3 * * * echo hi\n"))
	if c[0].Name == a[0].Name {
		t.Fatalf("different commands share the name %q", c[0].Name)
	}
}

func TestParseCrontabErrors(t *testing.T) {
	src := `# name: ok
* * * * * echo fine
* * * *
@reboot
CRON_TZ=Mars/Olympus
@every
# name:
0 0 * * *
*/5 * * * * *
* * * * * * 2026 echo seven
`
	jobs, errs := parseCrontab("bad.cron", []byte(src))
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	wantPrefixes := []string{"bad.cron:3:", "bad.cron:4:", "bad.cron:5:", "bad.cron:6:", "bad.cron:7:", "bad.cron:8:", "bad.cron:9:", "bad.cron:10:"}
	if len(got) != len(wantPrefixes) {
		t.Fatalf("got %d errors, want %d:\n%s", len(got), len(wantPrefixes), strings.Join(got, "\n"))
	}
	for i, p := range wantPrefixes {
		if !strings.HasPrefix(got[i], p) {
			t.Errorf("error %d = %q, want prefix %q", i, got[i], p)
		}
	}
	for _, tc := range []struct{ line, want string }{
		{"* * * * /bin/true", `"* * * * /bin/true" has 4 before "/bin/true"`},
		{"*/5 * * echo hi there", `has 3 before "echo"`},
		{"hourly * * * x", `has 0 before "hourly"`},
		{"0 9 1 JAN /bin/true", `has 4 before "/bin/true"`},
	} {
		_, errs := parseCrontab("short.cron", []byte(tc.line+"\n"))
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) || !strings.Contains(errs[0].Error(), "5 time fields") {
			t.Errorf("%q: errors %v, want one saying it %s", tc.line, errs, tc.want)
		}
	}
	// A mistyped fifth field is left to the schedule's parser, which
	// names the fault, not called a field short.
	for _, line := range []string{"0 0 * * MON-FUN echo x", "0 0 * * MONDAY echo x"} {
		jobs, errs := parseCrontab("typo.cron", []byte(line+"\n"))
		if len(errs) != 0 || len(jobs) != 1 || checkJobs(jobs) == nil {
			t.Errorf("%q: jobs %v, errors %v; want the line read and its schedule refused", line, jobs, errs)
		}
	}
	if !strings.Contains(got[2], "Mars/Olympus") {
		t.Errorf("zone error %q does not name the zone", got[2])
	}
	if len(jobs) != 1 || jobs[0].Name != "ok" {
		t.Fatalf("jobs %v, want only \"ok\"", jobs)
	}
}

// A command that starts with a number is read, with a warning that the
// line may have a time field too many; a program whose name only starts
// with a digit is not warned about.
func TestNumericCommandWarning(t *testing.T) {
	for _, tc := range []struct{ line, warn string }{
		{"30 2 * * * 5 6 /usr/bin/backup", `the command starts with "6", which reads as a time field`},
		{"0 3 * * * 1-5 2,4 echo x", `the command starts with "2,4"`},
		{"0 3 * * * 7z a /tmp/etc.7z /etc", ""},
		{"0 3 * * * echo 5", ""},
	} {
		jobs, all := parseCrontab("n.cron", []byte(tc.line+"\n"))
		errs, warns := splitWarnings(all)
		if len(errs) != 0 || len(jobs) != 1 {
			t.Errorf("%q: jobs %v, errors %v; want the line read", tc.line, jobs, errs)
			continue
		}
		switch {
		case tc.warn == "" && len(warns) != 0:
			t.Errorf("%q: warnings %v, want none", tc.line, warns)
		case tc.warn != "" && (len(warns) != 1 || !strings.Contains(warns[0].Error(), tc.warn)):
			t.Errorf("%q: warnings %v, want one saying %s", tc.line, warns, tc.warn)
		}
	}
}

func TestSixFieldDetection(t *testing.T) {
	for _, tc := range []struct{ line, schedule, cmd string }{
		{"*/5 * * * * * date", "*/5 * * * * *", "date"},
		{"0 0 9 * * MON-FRI date", "0 0 9 * * MON-FRI", "date"},
		{"0 9 * * MON-FRI date", "0 9 * * MON-FRI", "date"},
		{"0 9 * * 1 mon-script --x", "0 9 * * 1", "mon-script --x"},
		{"0 9 * * * ls -l", "0 9 * * *", "ls -l"},
		{"0 0 9 * * 5L ./x", "0 0 9 * * 5L", "./x"},
		{"0 0 9 1 JAN * ./new-year", "0 0 9 1 JAN *", "./new-year"},
		{"0 0 9 1 jan-mar mon ./q", "0 0 9 1 jan-mar mon", "./q"},
	} {
		s, c, err := splitCronLine(tc.line)
		if err != nil || s != tc.schedule || c != tc.cmd {
			t.Errorf("%q: %q %q %v, want %q %q", tc.line, s, c, err, tc.schedule, tc.cmd)
		}
	}
}

// A number no day of week is after five time fields is a user ID column:
// a system crontab reads it as the user (which must be a name), a user
// crontab says what it likely is, not that day-of-week 65534 is out of
// range.
func TestNumericUserColumn(t *testing.T) {
	line := []byte("* * * * * 65534 echo hi\n")
	jobs, errs, _ := parseCrontabWith("f", line, crontabOptions{Format: formatSystem})
	if len(errs) != 0 || len(jobs) != 1 || jobs[0].User != "65534" || jobs[0].Schedule != "* * * * *" {
		t.Errorf("system crontab: jobs %+v, errors %v; want schedule \"* * * * *\" run as user 65534", jobs, errs)
	}
	_, errs, _ = parseCrontabWith("f", line, crontabOptions{Format: formatUser})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `"65534" after five time fields is no day of week`) || !strings.Contains(errs[0].Error(), "--format system") {
		t.Errorf("user crontab: errors %v; want the user-column hint", errs)
	}
	// Six time fields with a valid day of week keep the seconds reading.
	jobs, errs, _ = parseCrontabWith("f", []byte("0 0 9 * * 5 echo hi\n"), crontabOptions{Format: formatSystem})
	if len(errs) != 0 || len(jobs) != 1 || jobs[0].Schedule != "0 0 9 * * 5" || jobs[0].User != "echo" {
		t.Errorf("system crontab, six fields: jobs %+v, errors %v; want schedule \"0 0 9 * * 5\" run as user echo", jobs, errs)
	}
}

func FuzzParseCrontab(f *testing.F) {
	f.Add("# name: x\n*/5 * * * * * echo hi\nA=b\nCRON_TZ=UTC\n@every 1s x%y\\%z\n")
	f.Add("* * *\n@reboot\n@every\n")
	f.Fuzz(func(t *testing.T, s string) {
		jobs, _ := parseCrontab("f", []byte(s))
		_ = checkJobs(jobs)
	})
}

// FuzzParseCrontabFormats reads arbitrary text in every format and reading
// of six fields: no panic, and every job has a schedule and a command (and
// a user in a system crontab).
func FuzzParseCrontabFormats(f *testing.F) {
	f.Add("# name: x\n*/60 * * * * * * root echo hi\nSHELL=/bin/bash\n@reboot nobody x%y\n")
	f.Add("MAILTO=a\n0 0 * * * * 2026 echo\n5-10/99 */30 * * * * echo\r\n@every 1s root\n")
	f.Add("* * * * * *\n0 0 1 1 * * * *\n@daily\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, format := range []string{formatUser, formatSystem, formatSupercronic} {
			for _, six := range []string{"", sixSeconds, sixYear} {
				jobs, _, _ := parseCrontabWith("f", []byte(s), crontabOptions{Format: format, SixFields: six})
				for _, j := range jobs {
					if j.Schedule == "" || len(j.Argv) != 3 || strings.TrimSpace(j.Argv[2]) == "" && j.Stdin == "" {
						t.Fatalf("%s/%s: job %+v", format, six, j)
					}
					if (format == formatSystem) != (j.User != "") {
						t.Fatalf("%s: user %q", format, j.User)
					}
				}
				_ = checkJobs(jobs)
			}
		}
	})
}

// A "# name:" comment names only the job line directly under it; one with
// anything else under it (a blank line, a comment, an environment
// setting, the end of the file) names nothing, and validate says so at
// the comment's line, while the job below runs under its hashed name.
func TestOrphanNameWarning(t *testing.T) {
	for _, tc := range []struct {
		src, warn string
		line      int
		named     bool
	}{
		{"# name: backup\n\n0 3 * * * /usr/bin/backup\n", "line 2 below it is blank", 1, false},
		{"# name: backup\n# nightly\n0 3 * * * /usr/bin/backup\n", "line 2 below it is a comment", 1, false},
		{"# name: backup\nPATH=/usr/bin\n0 3 * * * backup\n", "line 2 below it is an environment setting", 1, false},
		{"# name: backup\nCRON_TZ=UTC\n0 3 * * * backup\n", "line 2 below it is an environment setting", 1, false},
		{"0 3 * * * backup\n# name: later\n", "it is the file's last line", 2, false},
		{"# name: backup\n0 3 * * * /usr/bin/backup\n", "", 0, true},
	} {
		jobs, all := parseCrontab("o.cron", []byte(tc.src))
		errs, warns := splitWarnings(all)
		if len(errs) != 0 || len(jobs) != 1 || (jobs[0].Name == "backup") != tc.named {
			t.Errorf("%q: jobs %v, errors %v; want one job, named backup: %v", tc.src, jobs, errs, tc.named)
			continue
		}
		switch {
		case tc.warn == "" && len(warns) != 0:
			t.Errorf("%q: warnings %v, want none", tc.src, warns)
		case tc.warn != "" && (len(warns) != 1 || !strings.Contains(warns[0].Error(), tc.warn) ||
			!strings.HasPrefix(warns[0].Error(), fmt.Sprintf("o.cron:%d:", tc.line))):
			t.Errorf("%q: warnings %v, want one at line %d saying %s", tc.src, warns, tc.line, tc.warn)
		}
	}
}

// Crontab mistakes a new user made: a day's name mistyped in capitals
// where the day of week goes is said to be no day's name; "# Name:" is
// warned of as no name comment.
func TestMistypedNames(t *testing.T) {
	_, errs := parseCrontab("d.cron", []byte("0 0 * * FUNDAY echo x\n"))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `"FUNDAY" is meant as the day of week, it is not a day's name`) {
		t.Errorf("FUNDAY: %v", errs)
	}
	_, errs = parseCrontab("d.cron", []byte("* * * * echo hi\n"))
	if len(errs) != 1 || strings.Contains(errs[0].Error(), "day's name") {
		t.Errorf("a command in lower case: %v, want the field count only", errs)
	}
	for src, warned := range map[string]bool{
		"# Name: upper\n0 0 * * * echo x\n":           true,
		"# NAME : upper\n0 0 * * * echo x\n":          true,
		"# name: lower\n0 0 * * * echo x\n":           false,
		"# names: the jobs below\n0 0 * * * echo x\n": false,
	} {
		jobs, all := parseCrontab("n.cron", []byte(src))
		_, warns := splitWarnings(all)
		got := len(warns) == 1 && strings.Contains(warns[0].Error(), "is not a name comment")
		if got != warned || len(jobs) != 1 {
			t.Errorf("%q: jobs %v, warnings %v; want the name-comment warning: %v", src, jobs, warns, warned)
		}
	}
}

// TestOptionComments: a comment written as a job option of the YAML
// format ("# retry: 3") is not read by the crontab format, which takes
// only "# name:": it is warned of at its line, naming the YAML key that
// sets the option; a comment that is a note is not.
func TestOptionComments(t *testing.T) {
	for _, tc := range []struct {
		comment string
		key     string // the YAML key the warning names; "" for no warning
	}{
		{"# retry: 3", "retry.max_retries"},
		{"#retry:3", "retry.max_retries"},
		{"# Timeout: 5m", "timeout"},
		{"# max-late: 30s", "max_late"},
		{"# lease: 1m", "lease"},
		{"# overlap: limit 2", "overlap"},
		{"# catch_up: {window: 6h, max: 1}", "catch_up"},
		{"# permanent_exit_codes: [2, 64]", "retry.permanent_exit_codes"},
		{"# initial_backoff: 10s", "retry.initial_backoff"},
		{"# max_attempts: 3", "max_attempts"},
		{"# history_size: 500", "history_size"},
		{"# jitter: 30s", "jitter"},
		{"# workdir: /srv", "workdir"},
		{"# zone: Europe/Athens", "CRON_TZ="},
		{"# at: 2026-12-24T18:00:00+02:00", "at"},
		{"# timeout: the export can take an hour or more", ""},
		{"# Note: rotate the logs", ""},
		{"# retry:", ""},
		{"# schedule: nightly", ""},
		{"# backups", ""},
		{"# retries are handled by the script", ""},
	} {
		src := "# name: job\n0 3 * * * echo x\n" + tc.comment + "\n# name: other\n0 4 * * * echo y\n"
		jobs, all := parseCrontab("o.cron", []byte(src))
		errs, warns := splitWarnings(all)
		if len(errs) > 0 || len(jobs) != 2 {
			t.Errorf("%q: jobs %v, errors %v", tc.comment, jobs, errs)
			continue
		}
		if tc.key == "" {
			if len(warns) > 0 {
				t.Errorf("%q: warnings %v, want none: an ordinary comment", tc.comment, warns)
			}
			continue
		}
		want := fmt.Sprintf("o.cron:3: warning: %q is a comment, not an option of the job below it: a crontab line takes no option other than its \"# name:\" comment; ", tc.comment)
		if len(warns) != 1 || !strings.HasPrefix(warns[0].Error(), want) || !strings.Contains(warns[0].Error(), tc.key) {
			t.Errorf("%q: warnings %v, want one starting %q and naming %s", tc.comment, warns, want, tc.key)
		}
	}
}

// TestUnknownZoneNamesItsJobs: an unknown CRON_TZ or TZ line is far from
// the jobs it makes invalid, so its error names them (the first five, then
// a count), or says that none is under it.
func TestUnknownZoneNamesItsJobs(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("CRON_TZ=Mars/Olympus\n")
	for i := range 7 {
		fmt.Fprintf(&sb, "# name: j%d\n@daily echo %d\n", i, i)
	}
	sb.WriteString("TZ=Atlantis/Capital\n# name: last\n@hourly echo last\nCRON_TZ=Nowhere/Else\n")
	_, errs := parseCrontab("f", []byte(sb.String()))
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		`f:1: CRON_TZ: unknown time zone "Mars/Olympus": the 7 jobs under it are invalid with it: j0 (line 3), j1 (line 5), j2 (line 7), j3 (line 9), j4 (line 11) and 2 more (unknown_zone)`,
		`f:16: TZ: unknown time zone "Atlantis/Capital": the job under it is invalid with it: last (line 18) (unknown_zone)`,
		`f:19: CRON_TZ: unknown time zone "Nowhere/Else"; no job line is under it (unknown_zone)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A file given in the other format fails with one error that says to give
// it with the other flag, in place of its lines' or YAML's own errors (a
// YAML job file as a crontab, block or flow style; a crontab as a job
// file); a file of its own format with mistakes gets no such hint.
func TestWrongFormatHint(t *testing.T) {
	for _, tc := range []struct {
		flag, hint    string
		parse         func(string, []byte) ([]*jobSpec, []error)
		other, broken []string
	}{
		{"--crontab", "give it with --config", parseCrontab, []string{
			"jobs:\n  - name: hello\n    schedule: \"*/5 * * * *\"\n    command: echo hi\n",
			"- name: a\n  schedule: \"@daily\"\n  shell: echo a\n",
			"jobs:\n",
			"jobs: [{name: a, schedule: \"* * * * *\", command: \"echo hi\"}]\n",
		}, []string{"* * * *\n", "SHELL=/bin/sh\n# name: x\n0 0 * *\n", "name: x\n"}},
		{"--config", "give it with --crontab", parseConfig, []string{
			"* * * * * echo hi\n",
			"# name: backup\n0 3 * * * /usr/local/bin/backup --all\nMAILTO=ops\n*/5 * * * * * date\n",
		}, []string{"jobs:\n  - name: a\n    schedul: x\n", "- name: [\n"}},
	} {
		for _, src := range tc.other {
			jobs, errs := tc.parse("f", []byte(src))
			if len(jobs) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.hint) || strings.Contains(errs[0].Error(), "time fields") {
				t.Errorf("%s %q: jobs %v, errors %v; want no job and one error saying only %q", tc.flag, src, jobs, errs, tc.hint)
			}
		}
		for _, src := range tc.broken {
			_, errs := tc.parse("f", []byte(src))
			if len(errs) == 0 {
				t.Fatalf("%s %q: no error", tc.flag, src)
			}
			for _, e := range errs {
				if strings.Contains(e.Error(), tc.hint) {
					t.Errorf("%s %q: error %q names the other format", tc.flag, src, e)
				}
			}
		}
	}
}
