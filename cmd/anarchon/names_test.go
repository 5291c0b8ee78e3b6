package main

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
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

// A job name longer than the start summary's cell is cut there, so that it
// does not widen every row; the other rows keep their width.
func TestSummaryCutsLongNames(t *testing.T) {
	long := strings.Repeat("n", 512)
	d := &daemon{backend: membackend.New(nil), store: "memory:", jobs: []*jobSpec{
		{Name: long, Schedule: "@reboot", Reboot: true},
		{Name: "short", Schedule: "@reboot", Reboot: true},
	}}
	var sb strings.Builder
	d.summary(&sb, nil, true)
	for _, line := range strings.Split(sb.String(), "\n") {
		if utf8.RuneCountInString(line) > 120 {
			t.Errorf("summary line of %d runes: %q", utf8.RuneCountInString(line), line)
		}
	}
	if !strings.Contains(sb.String(), strings.Repeat("n", summaryCell-1)+"…") {
		t.Errorf("summary lacks the cut name:\n%s", sb.String())
	}
}

// replicatedBackend is a store that reports its replication, for the start
// summary's "replication:" line.
type replicatedBackend struct{ anarchon.Backend }

// The start summary's values start in one column, a "replication:" line
// (the longest label) included, with or without it.
func TestSummaryAligned(t *testing.T) {
	old := replicationOf
	t.Cleanup(func() { replicationOf = old })
	replicationOf = append(slices.Clone(old), func(b anarchon.Backend) string {
		if _, ok := b.(replicatedBackend); ok {
			return "synchronous, 2 standbys"
		}
		return ""
	})
	for _, b := range []anarchon.Backend{replicatedBackend{membackend.New(nil)}, membackend.New(nil)} {
		d := &daemon{backend: b, store: "memory:", instance: "web-1"}
		var sb strings.Builder
		d.summary(&sb, nil, false)
		out := sb.String()
		_, replicated := b.(replicatedBackend)
		if strings.Contains(out, "replication:") != replicated {
			t.Fatalf("replication line: want it %v:\n%s", replicated, out)
		}
		col := -1
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] { // after the version line
			label, _, _ := strings.Cut(line, ":")
			at := len(label) + 1 + len(line[len(label)+1:]) - len(strings.TrimLeft(line[len(label)+1:], " "))
			if col == -1 {
				col = at
			}
			if at != col {
				t.Errorf("%q: value at column %d, want %d as on the line above:\n%s", line, at, col, out)
			}
		}
	}
}
