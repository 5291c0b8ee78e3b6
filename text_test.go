package anarchon_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/anarchon/anarchon"
)

func TestEscapeText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain text\n\ttabs \\ and é ✓", "plain text\n\ttabs \\ and é ✓"},
		{"a\x00b", `a\x00b`},
		{"\xff\xfe", `\xff\xfe`},
		{"ok é \xc3", `ok é \xc3`},
		{"\xe2\x9c", `\xe2\x9c`}, // a cut sequence: each byte
	} {
		if got := anarchon.EscapeText(c.in); got != c.want {
			t.Errorf("EscapeText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzEscapeText(f *testing.F) {
	f.Add("a\x00b\xff")
	f.Add("é✓")
	f.Fuzz(func(t *testing.T, s string) {
		got := anarchon.EscapeText(s)
		if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 {
			t.Fatalf("EscapeText(%q) = %q: not valid UTF-8 without NUL", s, got)
		}
		if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 && got != s {
			t.Fatalf("EscapeText changed valid text %q into %q", s, got)
		}
	})
}
