package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
	"go.yaml.in/yaml/v3"
)

// jobKeys are the keys a job of a YAML file may have.
var jobKeys = []string{
	"name", "schedule", "zone", "command", "shell", "env", "workdir", "user", "timeout", "jitter",
	"max_late", "overlap", "catch_up", "lease", "max_attempts", "history_size", "retry", "at",
}

var (
	yamlErrLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	envName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// parseConfig reads a YAML job file: a list of jobs, or a mapping whose only
// key is "jobs" holding that list. Decoding is strict: an unknown key, a
// value of the wrong kind or a duration that does not parse is an error at
// its line. It returns the jobs it could read and one *posError per
// mistake, so a caller can report them all.
func parseConfig(file string, data []byte) ([]*jobSpec, []error) {
	jobs, errs := parseJobFile(file, data)
	if len(errs) > 0 {
		// A crontab given as a job file fails with YAML's own words,
		// which do not say why: one error says it, in their place.
		cj, all := parseCrontab(file, data)
		if cerrs, _ := splitWarnings(all); len(cj) > 0 && len(cerrs) == 0 {
			pe, _ := errs[0].(*posError)
			line := 0
			if pe != nil {
				line = pe.Line
			}
			return nil, []error{&posError{File: file, Line: line, Code: codeBadYAML,
				Msg: fmt.Sprintf("this file is a crontab (it reads as %d crontab job(s)), not a YAML job file: give it with --crontab, not --config", len(cj))}}
		}
	}
	return jobs, errs
}

// parseJobFile is parseConfig without the crontab check.
func parseJobFile(file string, data []byte) ([]*jobSpec, []error) {
	var errs []error
	fail := func(line int, format string, args ...any) {
		errs = append(errs, &posError{File: file, Line: line, Msg: fmt.Sprintf(format, args...), Code: codeBadYAML})
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) {
		err = nil // an empty file: reported below
	}
	if err == nil {
		// A second document ("---") would be ignored: refuse it.
		var more yaml.Node
		if err2 := dec.Decode(&more); err2 == nil {
			fail(more.Line, "a second YAML document: put every job in the first one")
			return nil, errs
		}
	}
	if err != nil {
		msg := err.Error()
		if m := yamlErrLine.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			fail(line, "%s", m[2])
		} else {
			fail(0, "%s", strings.TrimPrefix(msg, "yaml: "))
		}
		return nil, errs
	}
	if len(doc.Content) == 0 {
		fail(0, "no jobs: the file is empty")
		return nil, errs
	}
	list := doc.Content[0]
	if list.Kind == yaml.MappingNode {
		var found *yaml.Node
		foundAt := 0
		for i := 0; i+1 < len(list.Content); i += 2 {
			k, v := list.Content[i], list.Content[i+1]
			if k.Value != "jobs" {
				fail(k.Line, "unknown key %q at the top level (want \"jobs\")", k.Value)
				continue
			}
			if found != nil {
				fail(k.Line, "key \"jobs\" repeated (first at line %d): put every job in one list", foundAt)
				continue
			}
			found, foundAt = v, k.Line
		}
		if found == nil {
			if len(errs) == 0 {
				fail(list.Line, "no \"jobs\" list")
			}
			return nil, errs
		}
		list = found
	}
	if list.Kind != yaml.SequenceNode {
		fail(list.Line, "want a list of jobs")
		return nil, errs
	}
	var jobs []*jobSpec
	for _, item := range list.Content {
		j, es := decodeJob(file, item)
		for _, e := range es {
			// Every mistake of a job makes it invalid: validate counts it
			// so, read (j) or not.
			if pe, ok := e.(*posError); ok && !pe.Warning {
				if j != nil {
					pe.jobs = append(pe.jobs, j)
				} else {
					pe.entry = item.Line
				}
			}
		}
		errs = append(errs, es...)
		if j != nil {
			jobs = append(jobs, j)
		}
	}
	return jobs, errs
}

// decodeJob reads one job mapping. It returns nil when the job is too
// broken to register (no name, schedule or command); every mistake is in
// the errors.
func decodeJob(file string, n *yaml.Node) (*jobSpec, []error) {
	var errs []error
	// A mistake names its job, as the scheduler's validation errors do,
	// when the job has a name, wherever its key stands in the mapping.
	name := ""
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if k, v := n.Content[i], n.Content[i+1]; k.Value == "name" && v.Kind == yaml.ScalarNode && v.Tag != "!!null" && strings.TrimSpace(v.Value) != "" {
			name = v.Value
			break
		}
	}
	fail := func(line int, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if name != "" {
			msg = fmt.Sprintf("job %q: %s", name, msg)
		}
		errs = append(errs, &posError{File: file, Line: line, Msg: msg, Code: codeBadYAML})
	}
	if n.Kind != yaml.MappingNode {
		fail(n.Line, "a job must be a mapping with name, schedule and command or shell")
		return nil, errs
	}
	j := &jobSpec{File: file, Line: n.Line, Lines: map[string]int{}}
	var shell string
	hasCommand := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if _, dup := j.Lines[key]; dup {
			fail(k.Line, "key %q repeated (first at line %d)", key, j.Lines[key])
			continue
		}
		j.Lines[key] = k.Line
		str := func() (string, bool) {
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				fail(v.Line, "%s: want a string", key)
				return "", false
			}
			return v.Value, true
		}
		dur := func(set func(time.Duration)) {
			s, ok := str()
			if !ok {
				return
			}
			d, err := durationOf(key, s)
			if err != nil {
				fail(v.Line, "%v", err)
				return
			}
			set(d)
		}
		num := func(set func(int)) {
			s, ok := str()
			if !ok {
				return
			}
			x, err := strconv.Atoi(s)
			if err != nil {
				fail(v.Line, "%s: %q is not a whole number", key, s)
				return
			}
			set(x)
		}
		switch key {
		case "name":
			if s, ok := str(); ok && strings.TrimSpace(s) == "" {
				fail(v.Line, "name: empty: give the job a name, unique in the files")
			} else if ok {
				j.Name = s
			}
		case "schedule":
			if s, ok := str(); ok {
				j.Schedule = s
			}
		case "zone":
			if s, ok := str(); ok {
				j.Zone = s
			}
		case "at":
			if s, ok := str(); ok {
				t, err := time.Parse(time.RFC3339Nano, s)
				if err != nil {
					fail(v.Line, "at: %q is not an RFC 3339 time (like 2026-12-24T18:00:00+02:00)", s)
					continue
				}
				j.At = t.UTC()
				j.Schedule = "at " + j.At.Format(time.RFC3339Nano)
			}
		case "workdir":
			if s, ok := str(); ok {
				j.Workdir = s
			}
		case "user":
			if s, ok := str(); ok {
				j.User = strings.TrimSpace(s)
			}
		case "shell":
			if s, ok := str(); ok {
				shell = s
				if strings.TrimSpace(s) == "" {
					fail(v.Line, "shell: empty command")
				}
			}
		case "command":
			hasCommand = true
			if v.Kind != yaml.SequenceNode {
				fail(v.Line, "command: want a list of arguments (argv); use shell for a command line")
				continue
			}
			bad := false
			for _, a := range v.Content {
				if a.Kind != yaml.ScalarNode {
					fail(a.Line, "command: every argument must be a string")
					bad = true
					continue
				}
				j.Argv = append(j.Argv, a.Value)
			}
			if bad {
				// no command half read: nothing else is said of its program
				j.Argv = nil
			}
			if len(v.Content) == 0 {
				fail(v.Line, "command: empty list")
			}
		case "env":
			if v.Kind != yaml.MappingNode {
				fail(v.Line, "env: want a mapping of NAME: value")
				continue
			}
			for e := 0; e+1 < len(v.Content); e += 2 {
				ek, ev := v.Content[e], v.Content[e+1]
				if !envName.MatchString(ek.Value) {
					fail(ek.Line, "env: %q is not a variable name", ek.Value)
					continue
				}
				if ev.Kind != yaml.ScalarNode {
					fail(ev.Line, "env: %s: want a string", ek.Value)
					continue
				}
				j.Env = setEnv(j.Env, ek.Value, ev.Value)
			}
		case "timeout":
			dur(func(d time.Duration) { j.Options.Timeout = d })
		case "jitter":
			dur(func(d time.Duration) { j.Options.Jitter = d })
		case "max_late":
			dur(func(d time.Duration) { j.Options.MaxLate = d })
		case "lease":
			dur(func(d time.Duration) { j.Options.Lease = d })
		case "max_attempts":
			num(func(x int) { j.Options.MaxAttempts = x })
		case "history_size":
			num(func(x int) { j.Options.HistorySize = x })
		case "overlap":
			s, ok := str()
			if !ok {
				continue
			}
			decodeOverlap(j, v.Line, s, fail)
		case "retry":
			decodeRetry(j, v, fail)
		case "catch_up":
			if v.Kind != yaml.MappingNode {
				fail(v.Line, "catch_up: want a mapping with window and max")
				continue
			}
			seen := map[string]bool{}
			for c := 0; c+1 < len(v.Content); c += 2 {
				ck, cv := v.Content[c], v.Content[c+1]
				if seen[ck.Value] {
					fail(ck.Line, "catch_up: key %q repeated", ck.Value)
					continue
				}
				seen[ck.Value] = true
				switch ck.Value {
				case "window":
					d, err := durationOf("catch_up.window", cv.Value)
					if err != nil || cv.Kind != yaml.ScalarNode {
						fail(cv.Line, "catch_up.window: %q is not a Go duration (like 30s, 5m, 1h30m)", cv.Value)
						continue
					}
					j.Options.CatchUp.Window = d
				case "max":
					x, err := strconv.Atoi(cv.Value)
					if err != nil || cv.Kind != yaml.ScalarNode {
						fail(cv.Line, "catch_up.max: %q is not a whole number", cv.Value)
						continue
					}
					j.Options.CatchUp.Max = x
				default:
					fail(ck.Line, "catch_up: unknown key %q (want window, max)", ck.Value)
				}
			}
		default:
			fail(k.Line, "unknown key %q (want one of %s)", key, strings.Join(jobKeys, ", "))
		}
	}
	if _, ok := j.Lines["name"]; !ok {
		fail(n.Line, "job without a name")
	}
	_, hasSchedule := j.Lines["schedule"]
	_, hasAt := j.Lines["at"]
	switch {
	case hasSchedule && hasAt:
		fail(j.Lines["at"], "give schedule or at, not both")
	case !hasSchedule && !hasAt:
		fail(n.Line, "no schedule")
	}
	_, hasShell := j.Lines["shell"]
	switch {
	case hasShell && hasCommand:
		fail(j.Lines["shell"], "give command or shell, not both")
	case !hasShell && !hasCommand:
		fail(n.Line, "no command or shell")
	case hasShell:
		j.Argv = []string{"/bin/sh", "-c", shell}
	}
	if j.Name == "" || j.Schedule == "" || len(j.Argv) == 0 {
		if len(errs) == 0 {
			fail(n.Line, "incomplete")
		}
		return nil, errs
	}
	return j, errs
}

// decodeOverlap reads an overlap policy: skip, allow, buffer_one,
// replace, or "limit N" (at most N runs at once across the cluster,
// N >= 1). A count
// below 1 is left to the scheduler's check, which refuses it with
// anarchon.CodeBadOption at this line.
func decodeOverlap(j *jobSpec, line int, s string, fail func(int, string, ...any)) {
	f := strings.Fields(s)
	switch {
	case len(f) == 1 && f[0] == "skip":
		j.Options.Overlap = anarchon.OverlapSkip
	case len(f) == 1 && f[0] == "allow":
		j.Options.Overlap = anarchon.OverlapAllow
	case len(f) == 1 && f[0] == "buffer_one":
		j.Options.Overlap = anarchon.OverlapBufferOne
	case len(f) == 1 && f[0] == "replace":
		j.Options.Overlap = anarchon.OverlapReplace
	case len(f) >= 1 && f[0] == "limit":
		if len(f) != 2 {
			fail(line, "overlap: %q: limit takes one count, like \"limit 2\"", s)
			return
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			fail(line, "overlap: %q: %q is not a whole number", s, f[1])
			return
		}
		j.Options.Overlap, j.Options.OverlapLimit = anarchon.OverlapLimit, n
	default:
		fail(line, "overlap: %q is not skip, allow, buffer_one, replace or limit N", s)
	}
}
