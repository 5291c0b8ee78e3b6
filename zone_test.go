package anarchon_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// fixedTZif returns a version 1 TZif file for a zone with one fixed offset
// (seconds east of UTC) and no transitions: a database that disagrees with
// the real one wherever the real zone keeps summer time.
func fixedTZif(offset int32, abbr string) []byte {
	var b []byte
	b = append(b, "TZif"...)
	b = append(b, make([]byte, 16)...) // version 1, reserved
	// isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
	for _, n := range []uint32{0, 0, 0, 0, 1, uint32(len(abbr) + 1)} {
		b = binary.BigEndian.AppendUint32(b, n)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(offset))
	b = append(b, 0, 0) // not DST, abbreviation at index 0
	b = append(b, abbr...)
	return append(b, 0)
}

// With ZONEINFO pointing at a database whose America/Tijuana has no summer
// time, the scheduler still computes the embedded database's slots, and only
// Options.HostZoneinfo makes it read the host's. ZONEINFO is read once per
// process, so the checks run in a child process that starts with it set.
func TestZonesComeFromTheEmbeddedDatabase(t *testing.T) {
	if os.Getenv("ANARCHON_TEST_ZONE_CHILD") == "1" {
		zoneChecks(t)
		return
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "America"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "America", "Tijuana"), fixedTZif(-8*3600, "XST"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestZonesComeFromTheEmbeddedDatabase$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "ANARCHON_TEST_ZONE_CHILD=1", "ZONEINFO="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestZonesComeFromTheEmbeddedDatabase") {
		t.Fatalf("child with ZONEINFO=%s: %v\n%s", dir, err, out)
	}
}

func zoneChecks(t *testing.T) {
	// The crafted database is in effect for time.LoadLocation.
	host, err := time.LoadLocation("America/Tijuana")
	if err != nil {
		t.Fatal(err)
	}
	if name, off := time.Date(2026, 7, 1, 12, 0, 0, 0, host).Zone(); name != "XST" || off != -8*3600 {
		t.Fatalf("ZONEINFO not in effect: host Tijuana in July is %s %d", name, off)
	}
	slots := func(opts *anarchon.Options, after string) []string {
		t.Helper()
		s := anarchon.New(membackend.New(nil), opts)
		h := func(context.Context, *anarchon.Run) error { return nil }
		if err := s.Cron("noon", "0 12 * * *", h, &anarchon.JobOptions{Zone: "America/Tijuana"}); err != nil {
			t.Fatal(err)
		}
		from, _ := time.Parse(time.RFC3339, after)
		got, err := s.NextSlots("noon", from, 2)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, g := range got {
			out = append(out, g.Format(time.RFC3339))
		}
		return out
	}
	cases := []struct {
		after          string
		embedded, host []string
	}{
		// Tijuana kept summer time from 26 April 1970 (tzdata's backzone).
		{"1970-04-25T00:00:00Z", []string{"1970-04-25T20:00:00Z", "1970-04-26T19:00:00Z"}, []string{"1970-04-25T20:00:00Z", "1970-04-26T20:00:00Z"}},
		{"2026-07-01T00:00:00Z", []string{"2026-07-01T19:00:00Z", "2026-07-02T19:00:00Z"}, []string{"2026-07-01T20:00:00Z", "2026-07-02T20:00:00Z"}},
	}
	for _, c := range cases {
		if got := slots(&anarchon.Options{Logger: quiet}, c.after); strings.Join(got, " ") != strings.Join(c.embedded, " ") {
			t.Errorf("after %s, default options: slots %v, want the embedded database's %v", c.after, got, c.embedded)
		}
		if got := slots(&anarchon.Options{Logger: quiet, HostZoneinfo: true}, c.after); strings.Join(got, " ") != strings.Join(c.host, " ") {
			t.Errorf("after %s, HostZoneinfo: slots %v, want the host database's %v", c.after, got, c.host)
		}
	}
	l, err := anarchon.LoadLocation("America/Tijuana")
	if err != nil {
		t.Fatal(err)
	}
	if _, off := time.Date(2026, 7, 1, 12, 0, 0, 0, l).Zone(); off != -7*3600 {
		t.Errorf("LoadLocation read the host's database: July offset %d", off)
	}
}

func TestLoadLocationAndVersion(t *testing.T) {
	if v := anarchon.TZDataVersion(); !regexp.MustCompile(`^[0-9]{4}[a-z]$`).MatchString(v) {
		t.Errorf("TZDataVersion() = %q", v)
	}
	if _, err := anarchon.LoadLocation("Nowhere/Special"); err == nil {
		t.Error("LoadLocation of an unknown zone succeeded")
	}
	s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: quiet})
	err := s.Cron("x", "0 12 * * *", func(context.Context, *anarchon.Run) error { return nil }, &anarchon.JobOptions{Zone: "Nowhere/Special"})
	var ve *anarchon.ValidationError
	if !errors.As(err, &ve) || ve.Code != anarchon.CodeUnknownZone {
		t.Errorf("unknown zone: %v, want CodeUnknownZone", err)
	}
}

// A misspelt zone is refused on a job whose schedule ignores zones (an
// interval, "@every", a one-off time) as on a cron job: it would pass
// unnoticed until the schedule became a cron expression. A known zone is
// still ignored there.
func TestUnknownZoneRefusedOnEveryJob(t *testing.T) {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: quiet})
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	for _, zone := range []string{"Mars/Olympus", "Local"} {
		o := &anarchon.JobOptions{Zone: zone}
		for what, err := range map[string]error{
			"Every":  s.Every("e", time.Hour, noop, o),
			"@every": s.Cron("g", "@every 1h", noop, o),
			"At":     s.At("a", at, noop, o),
			"cron":   s.Cron("c", "0 * * * *", noop, o),
		} {
			var ve *anarchon.ValidationError
			if !errors.As(err, &ve) || ve.Code != anarchon.CodeUnknownZone || ve.Field != "Zone" {
				t.Errorf("%s with zone %q: %v, want unknown_zone", what, zone, err)
			}
		}
	}
	o := &anarchon.JobOptions{Zone: "Asia/Kolkata"} // +05:30: a grid in it would move
	if err := s.Every("e", time.Hour, noop, o); err != nil {
		t.Fatal(err)
	}
	if err := s.Cron("g", "@every 1h", noop, o); err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)
	for _, name := range []string{"e", "g"} {
		next, err := s.NextSlots(name, from, 1)
		if want := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC); err != nil || !next[0].Equal(want) {
			t.Errorf("%s: next slot %v, %v, want %v: the zone is ignored", name, next, err, want)
		}
	}
	for _, j := range s.Jobs() {
		if j.Zone != "" {
			t.Errorf("%s: Jobs says zone %q for an interval job", j.Name, j.Zone)
		}
	}
}
