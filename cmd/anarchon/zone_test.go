package main

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fixedTZif returns a version 1 TZif file for a zone with one fixed offset
// (seconds east of UTC) and no transitions.
func fixedTZif(offset int32, abbr string) []byte {
	b := append([]byte("TZif"), make([]byte, 16)...) // version 1, reserved
	// isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
	for _, n := range []uint32{0, 0, 0, 0, 1, uint32(len(abbr) + 1)} {
		b = binary.BigEndian.AppendUint32(b, n)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(offset))
	b = append(b, 0, 0) // not DST, abbreviation at index 0
	b = append(b, abbr...)
	return append(b, 0)
}

// With ZONEINFO pointing at a database that differs from the embedded one
// (an America/Tijuana without summer time, and a zone the embedded database
// lacks), "next" prints the embedded database's slots and "validate" knows
// only the embedded zones. ZONEINFO is read once per process, so the checks
// run in a child process that starts with it set.
func TestZonesIgnoreZONEINFO(t *testing.T) {
	if os.Getenv("ANARCHON_TEST_ZONE_CHILD") == "1" {
		daemonZoneChecks(t)
		return
	}
	dir := t.TempDir()
	for _, z := range []string{"America/Tijuana", "Atlantis/Capital"} {
		p := filepath.Join(dir, filepath.FromSlash(z))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, fixedTZif(-8*3600, "XST"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestZonesIgnoreZONEINFO$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "ANARCHON_TEST_ZONE_CHILD=1", "ZONEINFO="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestZonesIgnoreZONEINFO") {
		t.Fatalf("child with ZONEINFO=%s: %v\n%s", dir, err, out)
	}
}

func daemonZoneChecks(t *testing.T) {
	code, out, errOut := cli(t, "next", "0 12 * * *", "--zone", "America/Tijuana", "--after", "1970-04-25T00:00:00Z", "-n", "2")
	if want := "1970-04-25T12:00:00-08:00\n1970-04-26T12:00:00-07:00\n"; code != 0 || out != want {
		t.Errorf("next: exit %d, stdout:\n%s\nstderr: %s\nwant the embedded database's:\n%s", code, out, errOut, want)
	}
	code, out, errOut = cli(t, "next", "0 12 * * *", "--zone", "America/Tijuana", "--after", "2026-07-01T00:00:00Z", "-n", "1")
	if want := "2026-07-01T12:00:00-07:00\n"; code != 0 || out != want {
		t.Errorf("next: exit %d, stdout:\n%s\nstderr: %s\nwant the embedded database's:\n%s", code, out, errOut, want)
	}
	ct := writeFile(t, t.TempDir(), "crontab", "# name: z\nCRON_TZ=Atlantis/Capital\n0 1 * * * echo z\n")
	code, out, _ = cli(t, "validate", "--crontab", ct)
	if want := ct + `:2: CRON_TZ: unknown time zone "Atlantis/Capital"`; code != 1 || !strings.Contains(out, want) {
		t.Errorf("validate of a zone only the host database has: exit %d, stdout:\n%s\nwant %s", code, out, want)
	}
}
