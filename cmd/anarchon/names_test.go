package main

import (
	"strings"
	"testing"

	"github.com/anarchon/anarchon"
)

// validate refuses job names the library refuses: longer than
// anarchon.MaxNameLength bytes, or with a control character; a name at the
// limit passes.
func TestValidateNames(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("n", anarchon.MaxNameLength+1)
	ct := writeFile(t, dir, "crontab", "# name: "+long[:anarchon.MaxNameLength]+"\n* * * * * echo at-limit\n"+
		"# name: "+long+"\n* * * * * echo past\n"+
		"# name: tab\there\n* * * * * echo tab\n")
	cfg := writeFile(t, dir, "jobs.yaml", `jobs:
  - name: "nul\0here"
    schedule: "@hourly"
    shell: date
  - name: "esc\e[31m"
    schedule: "@hourly"
    shell: date
`)
	code, out, errOut := cli(t, "validate", "--crontab", ct, "--config", cfg)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	want := []string{
		ct + `:3: job "` + long + `": name: the name is 513 bytes long, more than the limit of 512`,
		ct + `:5: job "tab\there": name: the name has the control character U+0009`,
		cfg + `:2: job "nul\x00here": name: the name has the control character U+0000`,
		cfg + `:5: job "esc\x1b[31m": name: the name has the control character U+001B`,
	}
	// Keep the errors: drop the per-file format lines ("…, N jobs") and
	// warnings that validate also prints.
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(l, ": warning: ") && !fileLine.MatchString(l) {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d:\n got %s\nwant %s…", i, lines[i], w)
		}
	}
}
