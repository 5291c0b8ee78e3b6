package anarchon

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLength is the longest job name, in bytes of UTF-8, that a Scheduler
// registers (SPEC §3). Every built-in store keeps names of this length, with
// room to spare: the SQL backends take up to 1,024 bytes (their index
// limits: MySQL's 3,072-byte keys, PostgreSQL's btree entries of about
// 2.7 KB); NATS carries a name base64-encoded in subjects, and its server
// closes the connection on a protocol line longer than 4 KB (about 3,000
// bytes of name). The conformance suite (anarchontest, "Names") runs every
// store at this length.
const MaxNameLength = 512

// nameError returns the ValidationError for a job name that is not empty
// but that a store could not keep or a reader could not tell apart:
// longer than MaxNameLength bytes, not valid UTF-8 (PostgreSQL's TEXT
// refuses it), with a control character (NUL ends a C string and is
// refused by PostgreSQL; the others break logs and the daemon's
// line-oriented files), blank, or with blanks around it (" nightly" reads
// as "nightly" in every table; the daemon's "# name:" comments drop them,
// so such a name could not be written there). It returns nil for a good
// name.
func nameError(name string) *ValidationError {
	reason := ""
	if len(name) > MaxNameLength {
		reason = fmt.Sprintf("the name is %d bytes long, more than the limit of %d (MaxNameLength)", len(name), MaxNameLength)
	} else {
		reason = textError(name, "name")
	}
	if reason == "" {
		return nil
	}
	return &ValidationError{Job: name, Field: "Name", Code: CodeBadName, Reason: reason}
}

// textError returns why s cannot name what (a "name", an "ID"), "" if it
// can: it is printed in logs, history and the daemon's tables, so it must
// be valid UTF-8 (PostgreSQL's TEXT refuses anything else), have no
// control character (a newline breaks a log line, NUL a C string), and
// have no blanks around it (" web-1" reads as "web-1"), which also
// refuses one of blanks only. The daemon's --instance flag keeps the same
// rule.
func textError(s, what string) string {
	if !utf8.ValidString(s) {
		return "the " + what + " is not valid UTF-8"
	}
	for i, r := range s {
		if unicode.IsControl(r) {
			return fmt.Sprintf("the %s has the control character %U at byte %d", what, r, i)
		}
	}
	switch t := strings.TrimSpace(s); {
	case t == "":
		return fmt.Sprintf("the %s is blank", what)
	case t != s:
		return fmt.Sprintf("the %s has blanks around it", what)
	}
	return ""
}

// echoLimit is how much of a refused value an error message repeats.
const echoLimit = 64

// shorten returns s, or for a value longer than echoLimit bytes its first
// echoLimit bytes (cut at a character's start) and its length: an error
// about a 600-byte name should not be 600 bytes long.
func shorten(s string) string {
	if len(s) <= echoLimit {
		return s
	}
	cut := echoLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}
