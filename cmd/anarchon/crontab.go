package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
	"go.yaml.in/yaml/v3"
)

var (
	envLine     = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$`)
	nameComment = regexp.MustCompile(`^#\s*name:\s*(.*?)\s*$`)
	// nameAnyCase is a name comment in other letter cases ("# Name: x"),
	// which is not one: warned of, since the job below stays unnamed.
	nameAnyCase = regexp.MustCompile(`(?i)^#\s*name\s*:`)
	// optionComment is a comment written as a YAML job option ("# retry:
	// 3", "# Max-Late: 5m"): the word, then the value. optionWord says
	// which words are options.
	optionComment = regexp.MustCompile(`^#\s*([A-Za-z][A-Za-z_-]*)\s*:\s*(.*?)\s*$`)
	// upperWord is a word in capitals: a day's or month's name, mistyped.
	upperWord  = regexp.MustCompile(`^[A-Z]{3,}$`)
	cronToken  = regexp.MustCompile(`^[0-9*?,/\-LW#]+$`)
	dayNames   = regexp.MustCompile(`(?i)` + dayList)
	monthNames = regexp.MustCompile(`(?i)` + monthList)
	timeStart  = regexp.MustCompile(`(?i)^([0-9*?]|` + dayList + `|` + monthList + `)`)
)

// The names a day-of-week and a month field may use (crontab(5)).
const (
	dayList   = `SUN|MON|TUE|WED|THU|FRI|SAT`
	monthList = `JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC`
)

// optionKeys maps the words of optionComment that are options of a YAML
// job (or of its retry mapping), in lower case with "_" for "-", to the
// key that sets the option there. The job line's own parts (schedule,
// command, a system crontab's user) and words that are as likely the
// start of a note ("env", "shell") are left out.
var optionKeys = map[string]string{
	"zone":                 "zone",
	"at":                   "at",
	"workdir":              "workdir",
	"timeout":              "timeout",
	"jitter":               "jitter",
	"max_late":             "max_late",
	"overlap":              "overlap",
	"catch_up":             "catch_up",
	"lease":                "lease",
	"max_attempts":         "max_attempts",
	"history_size":         "history_size",
	"retry":                "retry.max_retries",
	"max_retries":          "retry.max_retries",
	"initial_backoff":      "retry.initial_backoff",
	"max_backoff":          "retry.max_backoff",
	"multiplier":           "retry.multiplier",
	"permanent_exit_codes": "retry.permanent_exit_codes",
}

// optionWarning is the warning for a comment that looks like a YAML job
// option ("# retry: 3"), which a crontab does not read: the job below it
// runs without the option, and nothing else would say so. "" for any
// other comment: a known word followed by a value of at most two words,
// or a {mapping} or [list], is an option; a longer text is a note
// ("# timeout: the export can take an hour").
func optionWarning(text string) string {
	m := optionComment.FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	key := optionKeys[strings.ReplaceAll(strings.ToLower(m[1]), "-", "_")]
	value := m[2]
	if key == "" || value == "" || (len(strings.Fields(value)) > 2 && !strings.ContainsAny(value[:1], "{[")) {
		return ""
	}
	where := "a YAML jobs file (--config) sets it with the job's key " + key
	if key == "zone" {
		where = "a CRON_TZ= line above the job line sets its zone, or a YAML jobs file (--config) with the job's key zone"
	}
	return fmt.Sprintf("%q is a comment, not an option of the job below it: a crontab line takes no option other than its \"# name:\" comment; %s", text, where)
}

// maxCrontabLine bounds one crontab line (bytes).
const maxCrontabLine = 1 << 20

// Crontab formats (--format).
const (
	formatAuto        = "auto"        // decide per file (see detectFormat)
	formatUser        = "user"        // crontab(5) of one user: time fields, then the command
	formatSystem      = "system"      // /etc/crontab and /etc/cron.d: time fields, a user name, the command
	formatSupercronic = "supercronic" // a user crontab read as supercronic reads it: 6 fields end with a year
)

// Readings of a line with six time fields (--six-fields).
const (
	sixSeconds = "seconds" // second minute hour day-of-month month day-of-week (anarchon, Quartz)
	sixYear    = "year"    // minute hour day-of-month month day-of-week year (supercronic)
)

// crontabOptions say how a crontab is read.
type crontabOptions struct {
	Format    string // formatUser, formatSystem or formatSupercronic ("" is formatUser)
	SixFields string // sixSeconds or sixYear; "" is sixSeconds, or sixYear for formatSupercronic
}

func (o crontabOptions) system() bool { return o.Format == formatSystem }

func (o crontabOptions) sixFields() string {
	switch {
	case o.SixFields != "":
		return o.SixFields
	case o.Format == formatSupercronic:
		return sixYear
	}
	return sixSeconds
}

// parseCrontab reads a user crontab with the default options.
func parseCrontab(file string, data []byte) ([]*jobSpec, []error) {
	jobs, errs, _ := parseCrontabWith(file, data, crontabOptions{})
	return jobs, errs
}

// parseCrontabWith reads a crontab. It returns the jobs of every line it
// could read and one *posError per mistake or warning (Warning set), so a
// caller can report them all.
//
// The format (see README.md): blank lines and # comments; "# name: NAME"
// directly above a job line names it; NAME=value lines set environment
// variables for the job lines after them (CRON_TZ sets their zone, TZ both
// their zone and their TZ variable, SHELL the shell that runs their
// commands); a job line is 5 cron fields, 6 (a leading seconds field, or a
// trailing year with --six-fields year), 7 (seconds … year), or a
// descriptor (@daily, @every 10s, @reboot), then in a system crontab a user
// name, then a shell command. In the command, an unescaped % ends the
// command and starts its standard input (each further % is a newline); \%
// is a literal %.
//
// sixSeen tells whether a line had six time fields, the lines whose
// reading --six-fields chooses (validate names the reading only then).
func parseCrontabWith(file string, data []byte, opts crontabOptions) (_ []*jobSpec, _ []error, sixSeen bool) {
	var (
		jobs      []*jobSpec
		errs      []error
		env       []string
		zone      string
		shell     = defaultShell
		name      string // from a "# name:" comment on the previous line
		nameLine  int
		nameErr   *posError // an empty "# name:" on the previous line
		zoneErr   *posError // the unknown CRON_TZ or TZ the job lines below are under
		mailWarns bool
	)
	fail := func(line int, code, format string, args ...any) *posError {
		pe := &posError{File: file, Line: line, Msg: fmt.Sprintf(format, args...), Code: code}
		errs = append(errs, pe)
		return pe
	}
	// A job line that cannot be read is an invalid job too.
	failJob := func(line int, err error) {
		errs = append(errs, &posError{File: file, Line: line, Msg: err.Error(), Code: codeBadLine, entry: line})
	}
	warn := func(line int, format string, args ...any) {
		errs = append(errs, &posError{File: file, Line: line, Msg: fmt.Sprintf(format, args...), Warning: true})
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxCrontabLine)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		text := strings.TrimSpace(sc.Text()) // also drops the \r of CRLF files
		pending, pendingLine, pendingErr := name, nameLine, nameErr
		name, nameLine, nameErr = "", 0, nil
		// A name with no job line right under it names nothing: said, so
		// that the job below a blank line does not run unnamed unnoticed.
		orphan := func(what string) {
			if pending != "" {
				warn(pendingLine, "\"# name: %s\" names no job: line %d below it is %s, and a name applies only to the job line directly under it", pending, lineNo, what)
			}
		}
		switch {
		case text == "":
			orphan("blank")
			continue
		case strings.HasPrefix(text, "#"):
			orphan("a comment")
			if m := nameComment.FindStringSubmatch(text); m != nil {
				if m[1] == "" {
					// The job line below is invalid with it: it is
					// counted so, and not also warned about as unnamed.
					nameErr = fail(lineNo, string(anarchon.CodeEmptyName), "empty job name in %q", text)
					continue
				}
				name, nameLine = m[1], lineNo
			} else if nameAnyCase.MatchString(text) {
				warn(lineNo, "%q is not a name comment, which is \"# name:\" in lower case with the colon right after it: the job below it is unnamed", text)
			} else if w := optionWarning(text); w != "" {
				warn(lineNo, "%s", w)
			}
			continue
		}
		if m := envLine.FindStringSubmatch(text); m != nil {
			orphan("an environment setting")
			key, val := m[1], unquote(m[2])
			switch key {
			case "CRON_TZ", "TZ":
				zoneErr = nil
				if val != "" {
					if _, err := anarchon.LoadLocation(val); err != nil {
						// Every job line under it is invalid with it.
						zoneErr = fail(lineNo, string(anarchon.CodeUnknownZone), "%s: unknown time zone %q", key, val)
						val = ""
					}
				}
				zone = val
				if key == "CRON_TZ" {
					continue
				}
			case "SHELL":
				shell = val
				if shell == "" {
					shell = defaultShell
				}
			case "MAILTO", "MAILFROM":
				if val != "" && !mailWarns {
					mailWarns = true
					warn(lineNo, "%s is set but anarchon sends no mail: each run's output goes to the log and its history record", key)
				}
			}
			env = setEnv(env, key, val)
			continue
		}
		ln, err := splitLine(text, opts)
		sixSeen = sixSeen || ln.six
		if err != nil {
			failJob(lineNo, err)
			continue
		}
		if ln.warning != "" {
			warn(lineNo, "%s", ln.warning)
		}
		argvCmd, stdin := percent(ln.command)
		if stdin != "" {
			// cron's rule, kept for crontabs that rely on it, but more
			// often a date format written without its backslashes.
			warn(lineNo, "an unescaped %% ends the command, which runs as %q with the rest as its standard input (crontab(5)); write \\%% for a literal %%", argvCmd)
		}
		j := &jobSpec{
			Name:     pending,
			Schedule: ln.schedule,
			Zone:     zone,
			Argv:     []string{shell, "-c", argvCmd},
			Stdin:    stdin,
			Env:      append([]string(nil), env...),
			User:     ln.user,
			Reboot:   ln.reboot,
			File:     file,
			Line:     lineNo,
			Crontab:  true,
		}
		if zoneErr != nil {
			zoneErr.jobs = append(zoneErr.jobs, j)
		}
		if pendingErr != nil {
			pendingErr.jobs = append(pendingErr.jobs, j)
		}
		if j.Name == "" {
			key := ln.schedule
			if ln.user != "" {
				key += " " + ln.user
			}
			j.Name = hashName(key, ln.command)
			// A job under an empty "# name:" is invalid with it, and
			// not also warned about as unnamed.
			j.Unnamed = pendingErr == nil
		} else {
			j.Lines = map[string]int{"name": pendingLine}
		}
		jobs = append(jobs, j)
	}
	if name != "" {
		warn(nameLine, "\"# name: %s\" names no job: it is the file's last line", name)
	}
	if err := sc.Err(); err != nil {
		fail(lineNo+1, codeBadLine, "%v", err)
	}
	for _, e := range errs {
		if pe := e.(*posError); pe.Code == string(anarchon.CodeUnknownZone) {
			pe.Msg += invalidUnder(pe.jobs)
		}
	}
	if len(errs) > 0 && looksLikeJobFile(data) {
		// A job file given as a crontab fails at most of its lines, and
		// none of those errors says why: one error says it, in their
		// place, at the first failing line; no line of it is a job.
		pe := errs[0].(*posError)
		return nil, []error{&posError{File: pe.File, Line: pe.Line, Code: codeBadLine,
			Msg: "this file is a YAML job file (its lines are no crontab lines): give it with --config, not as a crontab"}}, false
	}
	return jobs, errs, sixSeen
}

// looksLikeJobFile reports whether data is YAML in a job file's shape
// (parseConfig's): a list of mappings, or a mapping with the key "jobs".
// A crontab never is: its lines decode as one string, or not at all ("*"
// starts a YAML alias).
func looksLikeJobFile(data []byte) bool {
	var doc any
	if yaml.Unmarshal(data, &doc) != nil {
		return false
	}
	switch v := doc.(type) {
	case map[string]any:
		_, ok := v["jobs"]
		return ok
	case []any:
		if len(v) == 0 {
			return false
		}
		_, ok := v[0].(map[string]any)
		return ok
	}
	return false
}

// invalidUnder names the jobs an unknown zone line makes invalid, up to
// maxNamed of them, for its error: the line is far from them, and the
// count alone does not say which jobs will not run.
func invalidUnder(jobs []*jobSpec) string {
	const maxNamed = 5
	if len(jobs) == 0 {
		return "; no job line is under it"
	}
	var names []string
	for _, j := range jobs[:min(len(jobs), maxNamed)] {
		names = append(names, fmt.Sprintf("%s (line %d)", j.Name, j.Line))
	}
	more := ""
	if len(jobs) > maxNamed {
		more = fmt.Sprintf(" and %d more", len(jobs)-maxNamed)
	}
	if len(jobs) == 1 {
		return ": the job under it is invalid with it: " + names[0]
	}
	return fmt.Sprintf(": the %d jobs under it are invalid with it: %s%s", len(jobs), strings.Join(names, ", "), more)
}

// defaultShell runs crontab commands unless a SHELL= line says otherwise,
// as crontab(5) says (the user's login shell is not used: system accounts
// often have /usr/sbin/nologin).
const defaultShell = "/bin/sh"

// hashName is the name of a crontab job without a "# name:" comment: a hash
// of its schedule and command, so every replica reading the same line
// derives the same name.
func hashName(schedule, command string) string {
	sum := sha256.Sum256([]byte(schedule + "\x00" + command))
	return "job-" + hex.EncodeToString(sum[:])[:12]
}

// cronLine is a job line split into its parts.
type cronLine struct {
	schedule string // as the scheduler reads it: fields joined by one space, or a descriptor
	user     string // system crontabs: the user column
	command  string
	reboot   bool
	warning  string // something validate should point out
	six      bool   // six time fields, read as --six-fields says
}

// splitCronLine splits a user crontab's job line into its schedule and
// command, reading six fields as seconds first.
func splitCronLine(text string) (schedule, command string, err error) {
	ln, err := splitLine(text, crontabOptions{})
	return ln.schedule, ln.command, err
}

// splitLine splits a job line into schedule, user (system format) and
// command.
func splitLine(text string, opts crontabOptions) (cronLine, error) {
	var ln cronLine
	var rest string
	var fieldHelp = "5 time fields (6 or 7 with seconds or a year)"
	if strings.HasPrefix(text, "@") {
		f, r := splitFields(text, 1)
		rest = r
		ln.schedule = f[0]
		switch strings.ToLower(f[0]) {
		case "@reboot":
			ln.reboot = true
			ln.schedule = "@reboot"
		case "@every":
			f, r := splitFields(rest, 1)
			if f[0] == "" {
				return ln, fmt.Errorf("@every needs a duration and a command")
			}
			ln.schedule, rest = "@every "+f[0], r
		}
	} else {
		f, r := splitFields(text, 7)
		if f[4] == "" {
			return ln, fmt.Errorf("a job line needs %s and a command: %q", fieldHelp, text)
		}
		if !isTimeField(f[4]) && !timeStart.MatchString(f[4]) {
			// "* * * * /bin/true": a time field short. Said as such, not
			// as a schedule that takes the command for its day of week.
			// A fifth word that starts as a time field does ("MON-FUN",
			// "MONDAY") is a field mistyped: the schedule's parser names
			// the fault.
			k := 0
			for isTimeField(f[k]) {
				k++
			}
			err := fmt.Errorf("a job line needs %s and a command: %q has %d before %q", fieldHelp, text, k, f[k])
			if k == 4 && upperWord.MatchString(f[k]) {
				// "0 0 * * FUNDAY echo x": a word in capitals where the
				// day of week goes is more likely a name mistyped than a
				// command.
				err = fmt.Errorf("%w; if %q is meant as the day of week, it is not a day's name (SUN–SAT, or 0–7)", err, f[k])
			}
			return ln, err
		}
		n := 5
		switch {
		case isCronField(f[5]) && isYearField(f[6]) && hasCommand(r, opts):
			n = 7
		case isCronField(f[5]):
			n = 6
		}
		if n == 6 && opts.sixFields() == sixSeconds && userID(f[5]) && validSchedule(strings.Join(bigSteps(f[:5]), " ")) {
			// "* * * * * 65534 cmd": five fields and a number no day of
			// week is. In a system crontab that is the user column; in a
			// user crontab it is said as such, not as a day-of-week
			// range error.
			if !opts.system() {
				return ln, fmt.Errorf("%q after five time fields is no day of week (a sixth time field would be read as second … day-of-week): if it is a user column, this is a system crontab: give --format system, and a user name there, as cron takes", f[5])
			}
			n = 5
		}
		fields, r := splitFields(text, n)
		rest = r
		var year string
		switch n {
		case 7:
			year = fields[6]
			fields = fields[:6]
		case 6:
			ln.six = true
			secondsOK := validSchedule(strings.Join(bigSteps(fields), " "))
			yearOK := isYearField(fields[5]) && validSchedule(strings.Join(bigSteps(fields[:5]), " "))
			// The warnings are for a reading taken by default: an explicit
			// --six-fields is the operator's answer to them.
			chosen := opts.SixFields != ""
			if opts.sixFields() == sixYear {
				year = fields[5]
				fields = fields[:5]
				if secondsOK && !chosen {
					ln.warning = "six time fields read as minute … day-of-week year (--six-fields year); with --six-fields seconds the first would be the second"
				}
			} else if yearOK && !chosen {
				ln.warning = "six time fields read as second … day-of-week (--six-fields seconds); supercronic reads the last as a year: give --six-fields year if this line came from supercronic"
			}
		}
		if year != "" && year != "*" && year != "?" {
			return ln, fmt.Errorf("year field %q: only * is supported (anarchon's schedules repeat every year); remove the line or write the year into the command", year)
		}
		fields = bigSteps(fields)
		ln.schedule = strings.Join(fields, " ")
		if r == "" && !opts.system() {
			return ln, fmt.Errorf("no command after the schedule %q", strings.Join(fields, " "))
		}
	}
	if opts.system() {
		f, r := splitFields(rest, 1)
		if f[0] == "" {
			return ln, fmt.Errorf("no user and command after the schedule %q (a system crontab has a user column)", ln.schedule)
		}
		if r == "" {
			return ln, fmt.Errorf("no command after the user %q (a system crontab has a user column)", f[0])
		}
		ln.user, rest = f[0], r
	}
	ln.command = strings.TrimSpace(rest)
	if ln.command == "" {
		return ln, fmt.Errorf("no command after the schedule %q", ln.schedule)
	}
	if first, _ := splitFields(ln.command, 1); isCronField(first[0]) && strings.ContainsAny(first[0], "*?") {
		// "* * * * * * * * cmd": one more time field would run as a shell
		// glob. No real command starts with * or ?.
		return ln, fmt.Errorf("the command starts with %q: too many time fields (%s)", first[0], fieldHelp)
	} else if numericField.MatchString(first[0]) && ln.warning == "" {
		// "30 2 * * * 5 6 cmd" reads as six fields (a second first) and
		// runs "6 cmd": a number as a command's name, which no real one
		// is. A warning, not an error, as a script could be named "6".
		ln.warning = fmt.Sprintf("the command starts with %q, which reads as a time field: if the line has one time field too many, the shell will run %q as the command", first[0], first[0])
	}
	return ln, nil
}

// userID reports whether w is a whole number above 7, which no day-of-week
// field is: in the sixth place, a user ID rather than a time field.
func userID(w string) bool {
	n, err := strconv.Atoi(w)
	return err == nil && n > 7 && !strings.HasPrefix(w, "+")
}

// numericField is a time field of numbers only: 5, 1-5, 0,30, 10-50/5.
var numericField = regexp.MustCompile(`^[0-9]+([-,/][0-9]+)*$`)

// hasCommand reports whether rest, what follows seven time-like fields,
// still holds a command (and a user, in a system crontab).
func hasCommand(rest string, opts crontabOptions) bool {
	if !opts.system() {
		return rest != ""
	}
	f, r := splitFields(rest, 1)
	return f[0] != "" && r != ""
}

var yearToken = regexp.MustCompile(`^(\*|\?|[0-9]{4}([-,/][0-9]{1,4})*|\*/[0-9]+)$`)

// isYearField reports whether tok reads as a year field: *, ? or years
// (1970-2099) in lists, ranges and steps.
func isYearField(tok string) bool { return yearToken.MatchString(tok) }

// validSchedule reports whether expr parses as a cron schedule.
func validSchedule(expr string) bool {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{InstanceID: "check"})
	return s.Cron("x", expr, noop, nil) == nil
}

// fieldBounds are the minimum and maximum of the fields of a 5-field
// expression, or of a 6-field one after a leading seconds field.
var fieldBounds = [][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}}

var stepTerm = regexp.MustCompile(`^(\*|[0-9]+|[0-9]+-[0-9]+)/([0-9]+)$`)

// bigSteps rewrites terms whose step is larger than the field allows (*/60
// in the minute field) as Vixie cron and cronie read them: the range's
// start, stepped by more than the range, is its only value. anarchon's
// cron engine (used by the library) refuses such steps instead.
func bigSteps(fields []string) []string {
	bounds := fieldBounds
	if len(fields) == 6 {
		bounds = append([][2]int{{0, 59}}, fieldBounds...)
	}
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f
		if i >= len(bounds) {
			continue
		}
		lo, hi := bounds[i][0], bounds[i][1]
		terms := strings.Split(f, ",")
		changed := false
		for k, t := range terms {
			m := stepTerm.FindStringSubmatch(t)
			if m == nil {
				continue
			}
			step, err := strconv.Atoi(m[2])
			if err != nil || step <= hi {
				continue
			}
			start := lo
			if m[1] != "*" {
				a, _, _ := strings.Cut(m[1], "-")
				start, _ = strconv.Atoi(a)
			}
			terms[k] = strconv.Itoa(start)
			changed = true
		}
		if changed {
			out[i] = strings.Join(terms, ",")
		}
	}
	return out
}

// isCronField reports whether tok reads as a day-of-week field (digits,
// * ? , / - L W # and day names), which makes a line's sixth token the
// last of six time fields rather than the command's first word.
func isCronField(tok string) bool {
	return cronToken.MatchString(dayNames.ReplaceAllString(tok, "0"))
}

// isTimeField reports whether tok reads as any of a line's first five
// fields, month names included: the fifth is the month in six and seven
// fields (second first). isCronField, which decides on six or seven
// fields, leaves the month names out: the sixth and seventh fields are
// never months, and a command named like one ("mar") stays a command.
func isTimeField(tok string) bool {
	return isCronField(tok) || cronToken.MatchString(monthNames.ReplaceAllString(tok, "1"))
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
