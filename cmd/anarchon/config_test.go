package main

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

func TestParseConfig(t *testing.T) {
	src := `jobs:
  - name: backup
    schedule: "0 3 * * *"
    zone: Europe/Athens
    command: [tar, czf, /tmp/b.tgz, /etc]
    env: {LEVEL: "9", MODE: fast}
    workdir: /tmp
    timeout: 10m
    jitter: 30s
    max_late: 5m
    overlap: allow
    catch_up: {window: 2h, max: 2}
    lease: 1m
    max_attempts: 4
    history_size: 50
  - name: beat
    schedule: "*/5 * * * * *"
    shell: echo "$ANARCHON_SLOT" >> /tmp/beat
`
	jobs, errs := parseConfig("a.yaml", []byte(src))
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs", len(jobs))
	}
	b := jobs[0]
	want := anarchon.JobOptions{
		Timeout: 10 * time.Minute, Jitter: 30 * time.Second, MaxLate: 5 * time.Minute, Overlap: anarchon.OverlapAllow,
		CatchUp: anarchon.CatchUp{Window: 2 * time.Hour, Max: 2}, Lease: time.Minute, MaxAttempts: 4, HistorySize: 50,
	}
	if b.Options != want {
		t.Errorf("options %+v, want %+v", b.Options, want)
	}
	if b.Name != "backup" || b.Zone != "Europe/Athens" || b.Workdir != "/tmp" || b.Line != 2 ||
		!slices.Equal(b.Argv, []string{"tar", "czf", "/tmp/b.tgz", "/etc"}) || !slices.Equal(b.Env, []string{"LEVEL=9", "MODE=fast"}) {
		t.Errorf("backup = %+v", b)
	}
	if got := jobs[1].Argv; !slices.Equal(got, []string{"/bin/sh", "-c", `echo "$ANARCHON_SLOT" >> /tmp/beat`}) {
		t.Errorf("beat argv %q", got)
	}
	if errs := checkJobs(jobs); len(errs) > 0 {
		t.Errorf("registration: %v", errs)
	}

	// overlap: buffer_one.
	jobs, errs = parseConfig("o.yaml", []byte("- name: x\n  schedule: '@hourly'\n  shell: date\n  overlap: buffer_one\n"))
	if len(errs) > 0 || len(jobs) != 1 || jobs[0].Options.Overlap != anarchon.OverlapBufferOne {
		t.Fatalf("buffer_one: %v %v", jobs, errs)
	}

	// overlap: limit N.
	jobs, errs = parseConfig("o.yaml", []byte("- name: x\n  schedule: '@hourly'\n  shell: date\n  overlap: limit 3\n"))
	if len(errs) > 0 || len(jobs) != 1 || jobs[0].Options.Overlap != anarchon.OverlapLimit || jobs[0].Options.OverlapLimit != 3 {
		t.Fatalf("limit 3: %v %v", jobs, errs)
	}
	if errs := checkJobs(jobs); len(errs) > 0 {
		t.Errorf("limit 3: registration: %v", errs)
	}

	// overlap: replace.
	jobs, errs = parseConfig("o.yaml", []byte("- name: x\n  schedule: '@hourly'\n  shell: date\n  overlap: replace\n"))
	if len(errs) > 0 || len(jobs) != 1 || jobs[0].Options.Overlap != anarchon.OverlapReplace {
		t.Fatalf("replace: %v %v", jobs, errs)
	}
	if errs := checkJobs(jobs); len(errs) > 0 {
		t.Errorf("replace: registration: %v", errs)
	}

	// A bare list works too.
	jobs, errs = parseConfig("b.yaml", []byte("- name: x\n  schedule: '@hourly'\n  shell: date\n"))
	if len(errs) > 0 || len(jobs) != 1 || jobs[0].Line != 1 {
		t.Fatalf("bare list: %v %v", jobs, errs)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string // substrings, in order, one per error
	}{
		{"jobs twice", "jobs:\n  - name: a\n    schedule: '@daily'\n    shell: date\njobs:\n  - name: b\n    schedule: '@daily'\n    shell: date\n",
			[]string{`c.yaml:5: key "jobs" repeated (first at line 1)`}},
		{"two documents", "- name: a\n  schedule: '@daily'\n  shell: date\n---\n- name: b\n  schedule: '@daily'\n  shell: date\n",
			[]string{`c.yaml:4: a second YAML document`}},
		{"unknown key", "- name: a\n  schedule: '@daily'\n  shell: date\n  retries: 3\n",
			[]string{`c.yaml:4: job "a": unknown key "retries"`}},
		{"bad duration", "- name: a\n  schedule: '@daily'\n  shell: date\n  timeout: 30\n",
			[]string{`c.yaml:4: job "a": timeout: "30" is not a Go duration`}},
		{"both commands", "- name: a\n  schedule: '@daily'\n  shell: date\n  command: [date]\n",
			[]string{`c.yaml:3: job "a": give command or shell, not both`}},
		{"command string", "- name: a\n  schedule: '@daily'\n  command: date\n",
			[]string{`c.yaml:3: job "a": command: want a list`}},
		{"no schedule, no command", "- name: a\n",
			[]string{`c.yaml:1: job "a": no schedule`, `c.yaml:1: job "a": no command or shell`}},
		{"repeated key", "- name: a\n  name: b\n  schedule: '@daily'\n  shell: date\n",
			[]string{`c.yaml:2: job "a": key "name" repeated (first at line 1)`}},
		{"overlap", "- name: a\n  schedule: '@daily'\n  shell: date\n  overlap: queue\n",
			[]string{`c.yaml:4: job "a": overlap: "queue" is not skip, allow, buffer_one, replace or limit N`}},
		{"overlap replace with a count", "- name: a\n  schedule: '@daily'\n  shell: date\n  overlap: replace 2\n",
			[]string{`c.yaml:4: job "a": overlap: "replace 2" is not skip, allow, buffer_one, replace or limit N`}},
		{"overlap limit without a count", "- name: a\n  schedule: '@daily'\n  shell: date\n  overlap: limit\n",
			[]string{`c.yaml:4: job "a": overlap: "limit": limit takes one count, like "limit 2"`}},
		{"overlap limit with two counts", "- name: a\n  schedule: '@daily'\n  shell: date\n  overlap: limit 2 3\n",
			[]string{`c.yaml:4: job "a": overlap: "limit 2 3": limit takes one count`}},
		{"overlap limit not a number", "- name: a\n  schedule: '@daily'\n  shell: date\n  overlap: limit two\n",
			[]string{`c.yaml:4: job "a": overlap: "limit two": "two" is not a whole number`}},
		{"catch_up", "- name: a\n  schedule: '@daily'\n  shell: date\n  catch_up: {window: 1h, max: x, size: 1}\n",
			[]string{`c.yaml:4: job "a": catch_up.max: "x"`, `c.yaml:4: job "a": catch_up: unknown key "size"`}},
		{"empty name", "- name: ' '\n  schedule: '@daily'\n  shell: date\n",
			[]string{`c.yaml:1: name: empty: give the job a name`}},
		{"name last", "- schedule: '@daily'\n  timeout: 30\n  shell: date\n  name: late\n",
			[]string{`c.yaml:2: job "late": timeout: "30" is not a Go duration`}},
		{"command argument", "- name: a\n  schedule: '@daily'\n  command: [date, {x: y}]\n",
			[]string{`c.yaml:3: job "a": command: every argument must be a string`}},
		{"top level", "jobz: []\n", []string{`c.yaml:1: unknown key "jobz"`}},
		{"syntax", "- name: a\n  schedule: [\n", []string{`c.yaml:2: did not find expected node content`}},
		{"not a list", "name: a\n", []string{`c.yaml:1: unknown key "name"`}},
		{"env", "- name: a\n  schedule: '@daily'\n  shell: date\n  env: {1X: y}\n", []string{`c.yaml:4: job "a": env: "1X" is not a variable name`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := parseConfig("c.yaml", []byte(tc.src))
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d", len(errs), errs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
}

// An overlap limit below 1 parses, and is refused at registration with
// anarchon.CodeBadOption at the overlap line.
func TestOverlapLimitRefused(t *testing.T) {
	for _, n := range []string{"0", "-1"} {
		jobs, errs := parseConfig("c.yaml", []byte("- name: a\n  schedule: '@daily'\n  shell: date\n  overlap: limit "+n+"\n"))
		if len(errs) > 0 || len(jobs) != 1 {
			t.Fatalf("limit %s: parse: %v", n, errs)
		}
		errs = checkJobs(jobs)
		if len(errs) != 1 {
			t.Fatalf("limit %s: %d errors %v, want 1", n, len(errs), errs)
		}
		var ve *anarchon.ValidationError
		if !errors.As(errs[0], &ve) || ve.Code != anarchon.CodeBadOption || ve.Field != "OverlapLimit" {
			t.Errorf("limit %s: %v, want a ValidationError with code %s on OverlapLimit", n, errs[0], anarchon.CodeBadOption)
		}
		if want := `c.yaml:4: job "a": overlap: limit ` + n + ": "; !strings.HasPrefix(errs[0].Error(), want) || strings.Contains(errs[0].Error(), "OverlapLimit") {
			t.Errorf("limit %s: %q, want it at the overlap line, starting %q, without the Go field name", n, errs[0], want)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add("jobs:\n  - name: a\n    schedule: '@daily'\n    shell: date\n    timeout: 1s\n")
	f.Add("- {name: a, schedule: '* * * * * *', command: [x], catch_up: {window: 1h}}\n")
	f.Add("- {name: a, schedule: '@hourly', shell: x, retry: {max_retries: 2, initial_backoff: 1s, multiplier: 1.5, permanent_exit_codes: [2]}}\n")
	f.Add("- {name: a, at: '2030-01-01T00:00:00+02:00', shell: x, overlap: buffer_one}\n")
	f.Add("- {name: a, schedule: '@hourly', shell: x, overlap: limit 2}\n")
	f.Fuzz(func(t *testing.T, s string) {
		jobs, _ := parseConfig("f", []byte(s))
		_ = checkJobs(jobs)
	})
}

// Scalars where text is wanted are taken exactly as written (the README's
// rule): a number-like name keeps its leading zero, environment values
// keep their spelling, and an empty value is the empty string.
func TestConfigScalarsAsWritten(t *testing.T) {
	src := "jobs:\n  - name: 012\n    schedule: \"@daily\"\n    shell: echo\n    env: {A: 1.10, B: true, C: null, D: }\n"
	jobs, errs := parseConfig("s.yaml", []byte(src))
	if len(errs) != 0 || len(jobs) != 1 {
		t.Fatalf("jobs %v, errors %v", jobs, errs)
	}
	if jobs[0].Name != "012" {
		t.Errorf("name %q, want \"012\"", jobs[0].Name)
	}
	for _, want := range []string{"A=1.10", "B=true", "C=null", "D="} {
		if !slices.Contains(jobs[0].Env, want) {
			t.Errorf("env %q lacks %q", jobs[0].Env, want)
		}
	}
}

// TestJobFileMessagesUseYAMLKeys goes through the scheduler's checks of a
// job's options that a job file reaches, the cross-field ones (retry,
// catch_up, jitter against max_late and the interval, the dedupe window)
// included: every message names the file's keys (retry.initial_backoff,
// max_late), never the Go fields the scheduler's reasons quote
// (InitialBackoff, MaxLate).
func TestJobFileMessagesUseYAMLKeys(t *testing.T) {
	goName := regexp.MustCompile(`\b(?:[A-Z][a-z]+){2,}\b|\bRetry\.|\bCatchUp\.`)
	for _, tc := range []struct {
		opts   string // the job's options, YAML lines
		window time.Duration
		want   string // the message after the job's name
	}{
		{"retry: {max_retries: 1, initial_backoff: 10s, max_backoff: 5s}", 0, "retry.max_backoff: 5s is below retry.initial_backoff 10s"},
		{"retry: {max_retries: 1, multiplier: 0.5}", 0, "retry.multiplier: 0.5 is not a finite number >= 1"},
		{"retry: {max_retries: 1001}", 0, "retry.max_retries: 1001 is above the limit 1000"},
		{"retry: {max_retries: 1, jitter: -1s}", 0, "retry.jitter: -1s is negative"},
		{"catch_up: {max: 2}", 0, "catch_up.max: catch_up.max without a catch_up.window does nothing"},
		{"catch_up: {window: 1h, max: 100000}", 0, "catch_up.max: 100000 is above the limit"},
		{"jitter: 2m", 0, "jitter: jitter 2m0s is not below max_late 1m0s: a slot delayed by its jitter would be skipped as late"},
		{"jitter: 2m\n  max_late: 3m\n  schedule: '@every 1m'", 0, "jitter: jitter 2m0s is not below the interval 1m0s"},
		{"max_late: 50ms", 0, "max_late: 50ms is below the floor of 100ms: a slot is that late by the time it is claimed"},
		{"lease: 1ms", 0, "lease: a lease must be at least 3ms (heartbeats every lease/3)"},
		{"overlap: limit 0", 0, "overlap: limit 0: the limit must be at least 1"},
		{"overlap: limit 100000", 0, "overlap: limit 100000: the limit must be at most 1000"},
		{"history_size: 100000000", 0, "history_size: 100000000 is above the limit"},
		{"max_attempts: 100000", 0, "max_attempts: 100000 is above the limit"},
		{"max_late: 15m", 10 * time.Minute, "max_late: jitter+max_late (15m0s) is not below the backend's dedupe window 10m0s"},
		{"catch_up: {window: 1h}", 10 * time.Minute, "catch_up.window: the catch-up window 1h0m0s is not below the backend's dedupe window 10m0s"},
		{"at: 2020-01-01T00:00:00Z", 0, "at: one-off time 2020-01-01T00:00:00Z is "},
	} {
		src := "- name: j\n  shell: date\n  " + tc.opts + "\n"
		if !strings.Contains(tc.opts, "schedule:") && !strings.Contains(tc.opts, "at:") {
			src += "  schedule: '@hourly'\n"
		}
		jobs, errs := parseConfig("j.yaml", []byte(src))
		if len(errs) == 0 {
			b := membackend.New(&membackend.Options{DedupeWindow: tc.window})
			s := anarchon.New(b, &anarchon.Options{InstanceID: "t"})
			errs = register(s, anarchon.New(b, &anarchon.Options{InstanceID: "t"}), jobs, func(*jobSpec) anarchon.Handler { return noop })
		}
		if len(errs) != 1 {
			t.Errorf("%s: %d messages %v, want 1", tc.opts, len(errs), errs)
			continue
		}
		msg := errs[0].Error()
		_, after, _ := strings.Cut(msg, `job "j": `)
		if !strings.HasPrefix(after, tc.want) {
			t.Errorf("%s:\n%s\nwant after the job's name\n%s", tc.opts, msg, tc.want)
		}
		if m := goName.FindString(msg); m != "" {
			t.Errorf("%s: %q names %q, a Go name, not a key of the file", tc.opts, msg, m)
		}
	}
}
