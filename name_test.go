package anarchon_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// Names up to MaxNameLength bytes of valid UTF-8 without control characters
// or blanks around them register; anything else is refused with
// CodeBadName.
func TestNameLimits(t *testing.T) {
	h := func(context.Context, *anarchon.Run) error { return nil }
	atLimit := strings.Repeat("日", anarchon.MaxNameLength/3) + strings.Repeat("x", anarchon.MaxNameLength%3)
	if len(atLimit) != anarchon.MaxNameLength {
		t.Fatalf("test name is %d bytes", len(atLimit))
	}
	good := []string{atLimit, strings.Repeat("a", anarchon.MaxNameLength), "nightly backup", "a  b", `odd "job" {tag} a.b.* > Ωμέγα ✓`, "x"}
	bad := map[string]string{
		"one byte past":       strings.Repeat("a", anarchon.MaxNameLength+1),
		"one rune past":       atLimit[:anarchon.MaxNameLength-2] + "é" + "é",
		"NUL":                 "backup\x00nightly",
		"newline":             "backup\nnightly",
		"tab":                 "backup\tnightly",
		"DEL":                 "backup\x7f",
		"C1 control":          "backup\u0085",
		"escape":              "\x1b[31mred",
		"invalid UTF-8":       "backup\xff",
		"truncated UTF-8":     "backup\xe6\x97",
		"NUL at the end only": "backup\x00",
		"blank":               "   ",
		"blank, other spaces": "\u00a0\u3000",
		"leading blank":       " backup",
		"trailing blank":      "backup ",
	}
	s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: quiet})
	for _, name := range good {
		if err := s.Every(name, 60e9, h, nil); err != nil {
			t.Errorf("%d-byte name %.20q…: %v", len(name), name, err)
		}
	}
	for what, name := range bad {
		err := s.Every(name, 60e9, h, nil)
		var ve *anarchon.ValidationError
		if !errors.As(err, &ve) || ve.Code != anarchon.CodeBadName || ve.Field != "Name" || ve.Job != name {
			t.Errorf("%s: %v, want a ValidationError with CodeBadName on Name", what, err)
			continue
		}
		t.Logf("%s: %s", what, ve.Reason)
	}
}

// The message of a refused name longer than MaxNameLength repeats 64
// bytes of it and its length, not the whole name; a name that could be
// registered is repeated whole.
func TestLongNameShortenedInError(t *testing.T) {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: quiet})
	name := strings.Repeat("n", 600)
	err := s.Every(name, 60e9, noop, nil)
	var ve *anarchon.ValidationError
	if !errors.As(err, &ve) || ve.Code != anarchon.CodeBadName || ve.Job != name {
		t.Fatalf("600-byte name: %v", err)
	}
	if msg, want := err.Error(), `job "`+strings.Repeat("n", 64)+`…(600 bytes)": Name: `; !strings.Contains(msg, want) || len(msg) > 300 {
		t.Errorf("600-byte name's error is %d bytes: %q, want it to contain %q", len(msg), msg, want)
	}
	// Cut at a character's start: no broken UTF-8 in the message.
	name = "é" + strings.Repeat("日", 200)
	if msg := s.Every(name, 60e9, noop, nil).Error(); !strings.Contains(msg, `"é`+strings.Repeat("日", 20)+`…(602 bytes)"`) {
		t.Errorf("602-byte name's error: %q", msg)
	}
	// A registrable name is the job's identity: repeated whole.
	name = strings.Repeat("m", anarchon.MaxNameLength)
	if msg := s.Every(name, -1, noop, nil).Error(); !strings.Contains(msg, `"`+name+`"`) {
		t.Errorf("512-byte name not repeated whole: %q", msg)
	}
}
