package tz

import (
	"errors"
	"regexp"
	"testing"
	"time"
)

func TestLoadKnownAndUnknown(t *testing.T) {
	for _, name := range []string{"America/Tijuana", "Europe/Athens", "Asia/Kathmandu", "Etc/GMT+5"} {
		l, err := Load(name)
		if err != nil {
			t.Fatalf("Load(%q): %v", name, err)
		}
		if l.String() != name {
			t.Errorf("Load(%q).String() = %q", name, l.String())
		}
		l2, _ := Load(name)
		if l2 != l {
			t.Errorf("Load(%q) twice gave two Locations", name)
		}
	}
	if l, _ := Load("Asia/Kathmandu"); true {
		_, off := time.Date(2026, 1, 1, 0, 0, 0, 0, l).Zone()
		if off != 5*3600+45*60 {
			t.Errorf("Asia/Kathmandu offset %d s, want +05:45", off)
		}
	}
	for _, name := range []string{"Mars/Olympus", "../etc/passwd", "/usr/share/zoneinfo/UTC", "america/tijuana"} {
		if _, err := Load(name); !errors.Is(err, ErrUnknownZone) {
			t.Errorf("Load(%q) error %v, want ErrUnknownZone", name, err)
		}
	}
	if l, err := Load(""); err != nil || l != time.UTC {
		t.Errorf(`Load("") = %v, %v`, l, err)
	}
	if l, err := Load("Local"); err != nil || l != time.Local {
		t.Errorf(`Load("Local") = %v, %v`, l, err)
	}
}

// Version is what scripts/update-tzdata.sh read from the toolchain: a
// release name such as 2025c.
func TestVersionIsAReleaseName(t *testing.T) {
	if !regexp.MustCompile(`^[0-9]{4}[a-z]$`).MatchString(Version) {
		t.Fatalf("Version %q is not a tzdata release name", Version)
	}
}
