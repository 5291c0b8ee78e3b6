package anarchon

import (
	"strings"
	"unicode/utf8"
)

// EscapeText returns s unchanged when it is valid UTF-8 without a NUL
// byte, which every built-in store keeps as it is. Otherwise it returns a
// copy in which each NUL byte and each byte that is not part of a valid
// UTF-8 sequence is written as `\xNN` (two lower-case hex digits), and the
// rest is kept. Backends whose stores cannot hold such bytes in a text
// field (PostgreSQL's text type refuses NUL and invalid UTF-8; JSON
// records replace invalid bytes with U+FFFD) store a run's Output and
// Error through it, so a job that prints binary (a `pg_dump -Fc` or `gzip`
// to stdout) still gets its result stored (SPEC §4, "Any bytes"). The
// escape is for reading, not reversible: a text that already held `\x00`
// reads the same as one that held a NUL.
func EscapeText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || s[i] == 0 {
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
			i++
			continue
		}
		b.WriteString(s[i : i+n])
		i += n
	}
	return b.String()
}
