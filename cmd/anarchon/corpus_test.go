package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// corpusWant is what a testdata/crontabs/NAME.want file expects of
// NAME.cron:
//
//	flags: --format system           extra flags for validate and run-now
//	format: system                   the format validate reports
//	needs: USER                      a user the test creates (as root, when allowed)
//	job: LINE | NAME | SCHEDULE | USER | EXIT | "OUTPUT"
//	error: LINE | text in the error
//	warning: LINE | text in the warning
//
// NAME "*" is a hashed name (no "# name:"), USER "-" none (a user
// crontab), OUTPUT a Go string compared with the run's trimmed output ("*":
// not compared, for a shell's own error message).
type corpusWant struct {
	flags    []string
	format   string
	needs    []string
	jobs     []corpusJob
	errors   map[int]string
	warnings map[int][]string
}

type corpusJob struct {
	line                 int
	name, schedule, user string
	exit                 int
	output               string
}

func readWant(t *testing.T, path string) corpusWant {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w := corpusWant{errors: map[int]string{}, warnings: map[int][]string{}}
	for n, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		key, val, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("%s:%d: bad line %q", path, n+1, l)
		}
		parts := strings.Split(val, " | ")
		line := func() int {
			i, err := strconv.Atoi(parts[0])
			if err != nil {
				t.Fatalf("%s:%d: bad line number in %q", path, n+1, l)
			}
			return i
		}
		switch key {
		case "flags":
			w.flags = strings.Fields(val)
		case "format":
			w.format = val
		case "needs":
			w.needs = append(w.needs, val)
		case "job":
			if len(parts) != 6 {
				t.Fatalf("%s:%d: want 6 parts: %q", path, n+1, l)
			}
			exit, err1 := strconv.Atoi(parts[4])
			out, err2 := strconv.Unquote(parts[5])
			if err1 != nil || err2 != nil {
				t.Fatalf("%s:%d: bad exit or output in %q", path, n+1, l)
			}
			u := parts[3]
			if u == "-" {
				u = ""
			}
			w.jobs = append(w.jobs, corpusJob{line: line(), name: parts[1], schedule: parts[2], user: u, exit: exit, output: out})
		case "error":
			w.errors[line()] = parts[1]
		case "warning":
			w.warnings[line()] = append(w.warnings[line()], parts[1])
		default:
			t.Fatalf("%s:%d: unknown key %q", path, n+1, key)
		}
	}
	return w
}

// corpusFiles lists the corpus crontabs; there are at least 30.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/crontabs/*.cron")
	if err != nil || len(files) < 30 {
		t.Fatalf("corpus: %d files, %v", len(files), err)
	}
	return files
}

// optionsFor turns a .want file's flags into parse options, as the
// command line would.
func optionsFor(t *testing.T, file string, w corpusWant, data []byte) crontabOptions {
	t.Helper()
	var o crontabOptions
	for i := 0; i < len(w.flags); i += 2 {
		switch w.flags[i] {
		case "--format":
			o.Format = w.flags[i+1]
		case "--six-fields":
			o.SixFields = w.flags[i+1]
		default:
			t.Fatalf("%s: flag %q", file, w.flags[i])
		}
	}
	if o.Format == "" {
		o.Format, _ = detectFormat(file, false)
	}
	return o
}

// TestCorpusParse reads every corpus file as validate would and compares
// its jobs, errors and warnings with the .want file. It needs no user
// switching, so it runs everywhere.
func TestCorpusParse(t *testing.T) {
	for _, file := range corpusFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			w := readWant(t, strings.TrimSuffix(file, ".cron")+".want")
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			opts := optionsFor(t, file, w, data)
			if opts.Format != w.format {
				t.Errorf("format %q, want %q", opts.Format, w.format)
			}
			jobs, all, _ := parseCrontabWith(file, data, opts)
			all = append(all, checkJobs(jobs)...)
			if !opts.system() {
				all = append(all, userColumnWarnings(jobs)...)
			}
			for _, j := range jobs {
				if j.Unnamed {
					all = append(all, &posError{File: file, Line: j.Line, Warning: true, Msg: "unnamed job"})
				}
			}
			errLines := map[int]bool{}
			gotWarn := map[int][]string{}
			for _, e := range all {
				var pe *posError
				if !errors.As(e, &pe) {
					t.Errorf("error without a position: %v", e)
					continue
				}
				if pe.Warning {
					gotWarn[pe.Line] = append(gotWarn[pe.Line], pe.Msg)
					continue
				}
				errLines[pe.Line] = true
				want, ok := w.errors[pe.Line]
				if !ok || !strings.Contains(pe.Msg, want) {
					t.Errorf("unexpected error %v (want at this line: %q)", e, want)
				}
			}
			for line, want := range w.errors {
				if !errLines[line] && !strings.Contains(want, "no such user") {
					t.Errorf("no error at line %d (%q)", line, want)
				}
			}
			for line, wants := range w.warnings {
				for _, want := range wants {
					if !strings.Contains(strings.Join(gotWarn[line], "\n"), want) {
						t.Errorf("no warning %q at line %d; got %q", want, line, gotWarn[line])
					}
				}
			}
			var got []*jobSpec
			for _, j := range jobs {
				if !errLines[j.Line] && w.errors[j.Line] == "" {
					got = append(got, j)
				}
			}
			if len(got) != len(w.jobs) {
				t.Fatalf("%d jobs, want %d", len(got), len(w.jobs))
			}
			for i, want := range w.jobs {
				j := got[i]
				name := want.name
				if name == "*" {
					name = j.Name
					if !j.Unnamed || !strings.HasPrefix(name, "job-") {
						t.Errorf("line %d: name %q, want a hashed name", j.Line, j.Name)
					}
				}
				if j.Line != want.line || j.Name != name || j.Schedule != want.schedule || j.User != want.user {
					t.Errorf("job %d: line %d name %q schedule %q user %q, want %d %q %q %q",
						i, j.Line, j.Name, j.Schedule, j.User, want.line, name, want.schedule, want.user)
				}
			}
		})
	}
}

// corpusUsers creates the users the corpus needs (anarchon-corpus, with the
// supplementary group anarchon-extra) when running as root and allowed to
// (CI=true or ANARCHON_TEST_USERADD=1). It reports whether they exist.
func corpusUsers(t *testing.T) bool {
	t.Helper()
	if _, err := user.Lookup("anarchon-corpus"); err == nil {
		return true
	}
	ci := os.Getenv("CI") == "true"
	allowed := ci || os.Getenv("ANARCHON_TEST_USERADD") == "1"
	if os.Geteuid() != 0 || !allowed {
		return false
	}
	for _, args := range [][]string{
		{"groupadd", "-f", "anarchon-extra"},
		{"useradd", "-M", "-d", "/home/anarchon-corpus", "-s", "/bin/sh", "-G", "anarchon-extra", "anarchon-corpus"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			if ci {
				t.Fatalf("%q: %v\n%s", args, err, out)
			}
			t.Logf("%q: %v\n%s", args, err, out)
			return false
		}
	}
	return true
}

// TestCorpusRunNow runs every job of the corpus through "anarchon run-now"
// (the binary) and checks, from the job's own output, what ran: the user
// it ran as, the shell, its stdin, and its exit status as run-now's.
// Lines for other users need root; the created user needs root and
// CI=true or ANARCHON_TEST_USERADD=1.
func TestCorpusRunNow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon binary")
	}
	bin := daemonBinary(t)
	root := os.Geteuid() == 0
	ci := os.Getenv("CI") == "true"
	haveUsers := corpusUsers(t)
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TZ=") && !strings.HasPrefix(kv, "ANARCHON_") {
			env = append(env, kv)
		}
	}
	for _, file := range corpusFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			w := readWant(t, strings.TrimSuffix(file, ".cron")+".want")
			file, err := filepath.Abs(file)
			if err != nil {
				t.Fatal(err)
			}
			needsRoot := false
			for _, j := range w.jobs {
				needsRoot = needsRoot || (j.user != "" && !root)
			}
			if len(w.needs) > 0 && !haveUsers {
				if ci {
					t.Fatalf("needs users %v: run as root", w.needs)
				}
				t.Skipf("needs users %v: run as root with ANARCHON_TEST_USERADD=1 (or CI=true) to create them", w.needs)
			}
			if needsRoot {
				// Not root: validate must refuse lines for other users.
				code, out, _ := cli(t, append([]string{"validate", "--crontab", file}, w.flags...)...)
				if code != 1 || !strings.Contains(out, "not root") {
					t.Errorf("validate as uid %d: exit %d, want 1 naming root:\n%s", os.Geteuid(), code, out)
				}
				if ci {
					t.Fatalf("lines for other users need root")
				}
				t.Skip("lines for other users run only as root")
			}
			store := "sqlite:" + filepath.Join(t.TempDir(), "corpus.db")
			// validate states the format, then each job runs.
			vcode, vout, _ := cli(t, append([]string{"validate", "--crontab", file}, w.flags...)...)
			if !strings.Contains(vout, file+": "+w.format+" crontab") {
				t.Errorf("validate does not state the format %q:\n%s", w.format, vout)
			}
			if (vcode != 0) != (len(w.errors) > 0) {
				t.Errorf("validate exit %d with %d expected errors:\n%s", vcode, len(w.errors), vout)
			}
			if len(w.errors) > 0 {
				return // run-now refuses a file with mistakes, as run does
			}
			for _, j := range w.jobs {
				name := j.name
				if name == "*" {
					jobs, _, _ := parseCrontabWith(file, mustRead(t, file), optionsFor(t, file, w, mustRead(t, file)))
					for _, pj := range jobs {
						if pj.Line == j.line {
							name = pj.Name
						}
					}
				}
				args := append([]string{"run-now", name, "--json", "--crontab", file, "--store", store}, w.flags...)
				cmd := exec.Command(bin, args...)
				cmd.Env = env
				cmd.Dir = t.TempDir()
				out, err := cmd.Output()
				code := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				var rec recordJSON
				if jerr := json.Unmarshal(out, &rec); jerr != nil {
					t.Errorf("line %d (%s): exit %d, no record: %v\n%s%s", j.line, name, code, jerr, out, stderrOf(err))
					continue
				}
				if code != j.exit {
					t.Errorf("line %d (%s): exit %d, want %d (%s)", j.line, name, code, j.exit, rec.Error)
				}
				if got := strings.TrimSpace(rec.Output); got != j.output && j.output != "*" {
					t.Errorf("line %d (%s): output %q, want %q", j.line, name, got, j.output)
				}
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}
