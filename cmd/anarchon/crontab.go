package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/anarchon/anarchon"
)

var (
	envLine     = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$`)
	nameComment = regexp.MustCompile(`^#\s*name:\s*(.*?)\s*$`)
	cronToken   = regexp.MustCompile(`^[0-9*?,/\-LW#]+$`)
	dayNames    = regexp.MustCompile(`(?i)SUN|MON|TUE|WED|THU|FRI|SAT`)
)

// maxCrontabLine bounds one crontab line (bytes).
const maxCrontabLine = 1 << 20

// parseCrontab reads a crontab. It returns the jobs of every line it could
// read and one *posError per mistake, so a caller can report them all.
//
// The format (see README.md): blank lines and # comments; "# name: NAME"
// directly above a job line names it; NAME=value lines set environment
// variables for the job lines after them (CRON_TZ sets their zone, TZ both
// their zone and their TZ variable); a job line is 5 cron fields, or 6 with a
// leading seconds field, or a descriptor (@daily, @every 10s), then a shell
// command. In the command, an unescaped % ends the command and starts its
// standard input (each further % is a newline); \% is a literal %.
func parseCrontab(file string, data []byte) ([]*jobSpec, []error) {
	var (
		jobs     []*jobSpec
		errs     []error
		env      []string
		zone     string
		name     string // from a "# name:" comment on the previous line
		nameLine int
	)
	fail := func(line int, format string, args ...any) {
		errs = append(errs, &posError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxCrontabLine)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		text := strings.TrimSpace(sc.Text())
		pending, pendingLine := name, nameLine
		name, nameLine = "", 0
		switch {
		case text == "":
			continue
		case strings.HasPrefix(text, "#"):
			if m := nameComment.FindStringSubmatch(text); m != nil {
				if m[1] == "" {
					fail(lineNo, "empty job name in %q", text)
					continue
				}
				name, nameLine = m[1], lineNo
			}
			continue
		}
		if m := envLine.FindStringSubmatch(text); m != nil {
			key, val := m[1], unquote(m[2])
			switch key {
			case "CRON_TZ", "TZ":
				if val != "" {
					if _, err := anarchon.LoadLocation(val); err != nil {
						fail(lineNo, "%s: unknown time zone %q", key, val)
						val = ""
					}
				}
				zone = val
				if key == "CRON_TZ" {
					continue
				}
			}
			env = setEnv(env, key, val)
			continue
		}
		schedule, command, err := splitCronLine(text)
		if err != nil {
			fail(lineNo, "%v", err)
			continue
		}
		argvCmd, stdin := percent(command)
		j := &jobSpec{
			Name:     pending,
			Schedule: schedule,
			Zone:     zone,
			Argv:     []string{"/bin/sh", "-c", argvCmd},
			Stdin:    stdin,
			Env:      append([]string(nil), env...),
			File:     file,
			Line:     lineNo,
		}
		if j.Name == "" {
			j.Name = hashName(schedule, command)
		} else {
			j.Lines = map[string]int{"name": pendingLine}
		}
		jobs = append(jobs, j)
	}
	if err := sc.Err(); err != nil {
		fail(lineNo+1, "%v", err)
	}
	return jobs, errs
}

// hashName is the name of a crontab job without a "# name:" comment: a hash
// of its schedule and command, so every replica reading the same line
// derives the same name.
func hashName(schedule, command string) string {
	sum := sha256.Sum256([]byte(schedule + "\x00" + command))
	return "job-" + hex.EncodeToString(sum[:])[:12]
}

// splitCronLine splits a job line into its schedule (fields joined by one
// space) and its command.
func splitCronLine(text string) (schedule, command string, err error) {
	fields, rest := splitFields(text, 1)
	if strings.HasPrefix(fields[0], "@") {
		switch strings.ToLower(fields[0]) {
		case "@reboot":
			return "", "", fmt.Errorf("@reboot is not supported: anarchon runs scheduled slots, not boot events")
		case "@every":
			f, r := splitFields(rest, 1)
			if f[0] == "" {
				return "", "", fmt.Errorf("@every needs a duration and a command")
			}
			fields, rest = append(fields, f[0]), r
		}
	} else {
		f, r := splitFields(text, 6)
		if f[4] == "" {
			return "", "", fmt.Errorf("a job line needs 5 time fields (6 with seconds) and a command: %q", text)
		}
		switch {
		case isCronField(f[5]) && r == "":
			return "", "", fmt.Errorf("no command after the schedule %q", strings.Join(f, " "))
		case isCronField(f[5]):
			fields, rest = f, r
		default:
			fields, rest = splitFields(text, 5)
		}
	}
	command = strings.TrimSpace(rest)
	if command == "" {
		return "", "", fmt.Errorf("no command after the schedule %q", strings.Join(fields, " "))
	}
	if first, _ := splitFields(command, 1); isCronField(first[0]) && strings.ContainsAny(first[0], "*?") {
		// "* * * * * * * cmd": a seventh time field would run as a shell
		// glob. No real command starts with * or ?.
		return "", "", fmt.Errorf("the command starts with %q: too many time fields (5, or 6 with seconds)", first[0])
	}
	return strings.Join(fields, " "), command, nil
}

// isCronField reports whether tok reads as a day-of-week field (digits,
// * ? , / - L W # and day names), which makes a line's sixth token the
// last of six time fields rather than the command's first word.
func isCronField(tok string) bool {
	return cronToken.MatchString(dayNames.ReplaceAllString(tok, "0"))
}

// splitFields returns the first n whitespace-separated tokens of s (missing
// ones are "") and the rest of s after them, leading space removed.
func splitFields(s string, n int) ([]string, string) {
	out := make([]string, n)
	for i := range n {
		s = strings.TrimLeft(s, " \t")
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			end = len(s)
		}
		out[i], s = s[:end], s[end:]
	}
	return out, strings.TrimLeft(s, " \t")
}

// percent applies crontab's % rule: an unescaped % ends the command and
// starts its standard input, further ones are newlines; \% is a %.
func percent(cmd string) (command, stdin string) {
	var b strings.Builder
	inStdin := false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == '\\' && i+1 < len(cmd) && cmd[i+1] == '%':
			b.WriteByte('%')
			i++
		case c == '%' && !inStdin:
			command = b.String()
			b.Reset()
			inStdin = true
		case c == '%':
			b.WriteByte('\n')
		default:
			b.WriteByte(c)
		}
	}
	if !inStdin {
		return b.String(), ""
	}
	return command, b.String() + "\n"
}

// unquote removes one pair of matching single or double quotes.
func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// setEnv sets key=val in env, replacing an earlier value.
func setEnv(env []string, key, val string) []string {
	for i, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			out := append([]string(nil), env...)
			out[i] = key + "=" + val
			return out
		}
	}
	return append(env, key+"="+val)
}
