package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// anarchon backfill runs each slot of the range once and prints a JSON
// line per slot and a summary when stdout is not a terminal; a second
// backfill of the same SQLite store skips every slot; bad ranges are usage
// errors.
func TestBackfillCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "jobs.yaml", "- name: m\n  schedule: '* * * * *'\n  shell: echo \"$ANARCHON_SLOT\" >> "+filepath.Join(dir, "ran")+"\n")
	store := "sqlite:" + filepath.Join(dir, "s.db")
	to := time.Now().UTC().Truncate(time.Minute)
	from := to.Add(-5 * time.Minute)
	args := []string{"backfill", "m", "--config", cfg, "--store", store, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--concurrency", "2", "--log-level", "error"}

	for round, wantRan := range []int{5, 0} {
		code, out, errOut := cli(t, args...)
		if code != 0 {
			t.Fatalf("round %d: exit %d: %s%s", round, code, out, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 6 {
			t.Fatalf("round %d: %d lines, want 5 slots and a summary:\n%s", round, len(lines), out)
		}
		var line backfillLine
		if err := json.Unmarshal([]byte(lines[0]), &line); err != nil || line.Total != 5 {
			t.Errorf("round %d: first line %q: %+v %v", round, lines[0], line, err)
		}
		var sum map[string]int
		if err := json.Unmarshal([]byte(lines[5]), &sum); err != nil || sum["total"] != 5 || sum["ran"] != wantRan || sum["skipped"] != 5-wantRan {
			t.Errorf("round %d: summary %q, want %d ran", round, lines[5], wantRan)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "ran"))
	if err != nil {
		t.Fatal(err)
	}
	ran := strings.Fields(string(data))
	if len(ran) != 5 {
		t.Errorf("the command ran %d times, want 5: %v", len(ran), ran)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"empty range", []string{"--from", to.Format(time.RFC3339), "--to", to.Format(time.RFC3339)},
			`anarchon: job "m": --from ` + to.Format("2006-01-02T15:04:05.000Z") + ` is not before --to ` + to.Format("2006-01-02T15:04:05.000Z") + " (bad_range)\n"},
		{"future", []string{"--from", from.Format(time.RFC3339), "--to", to.Add(time.Hour).Format(time.RFC3339)}, `anarchon: job "m": --to `},
		{"negative", []string{"--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--concurrency", "-1"},
			`anarchon: job "m": --concurrency and --max-slots must not be negative (bad_option)`},
		{"bad time", []string{"--from", "yesterday", "--to", to.Format(time.RFC3339)}, "RFC 3339"},
		{"too many", []string{"--from", to.Add(-2 * time.Hour).Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--max-slots", "100"}, "pass --yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := append([]string{"backfill", "m", "--config", cfg, "--store", store, "--log-level", "error"}, tc.args...)
			code, out, errOut := cli(t, a...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q, want an error containing %q", code, errOut, tc.want)
			}
			// Refused before any slot: no summary, one prefix, no Go field names.
			if out != "" {
				t.Errorf("stdout %q, want nothing from a backfill that did not run", out)
			}
			if strings.Count(errOut, "anarchon:") > 1 || strings.Contains(errOut, "From:") || strings.Contains(errOut, "Concurrency") {
				t.Errorf("stderr %q: a doubled prefix or a Go field name", errOut)
			}
			// The same refusal on a store that does not exist yet
			// leaves no file behind.
			fresh := filepath.Join(t.TempDir(), "new.db")
			a = append([]string{"backfill", "m", "--config", cfg, "--store", "sqlite:" + fresh, "--log-level", "error"}, tc.args...)
			if code, _, errOut := cli(t, a...); code == 0 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("on a new store: exit %d, stderr %q", code, errOut)
			}
			if left, _ := filepath.Glob(fresh + "*"); len(left) > 0 {
				t.Errorf("a refused backfill left %v", left)
			}
		})
	}
}

// On a terminal the progress is a bar redrawn in place, then a summary.
func TestBackfillBar(t *testing.T) {
	var b strings.Builder
	p := &backfillPrinter{w: &b, bar: true}
	slot := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	p.progress(anarchon.BackfillProgress{Slot: slot, Ran: true, Status: anarchon.StatusSuccess, Done: 1, Total: 3})
	p.progress(anarchon.BackfillProgress{Slot: slot.Add(time.Minute), Ran: true, Status: anarchon.StatusError, Done: 2, Total: 3})
	p.progress(anarchon.BackfillProgress{Slot: slot.Add(2 * time.Minute), Done: 3, Total: 3})
	p.done(anarchon.BackfillResult{Total: 3, Ran: 2, Skipped: 1})
	want := "\r[##########....................] 1/3  ran 1  failed 0  2026-11-30T00:00:00Z" +
		"\r[####################..........] 2/3  ran 2  failed 1  2026-11-30T00:01:00Z" +
		"\r[##############################] 3/3  ran 2  failed 1  2026-11-30T00:02:00Z" +
		"\n3 slots: 2 ran here (1 failed), 1 skipped (settled, or run elsewhere)\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	if isTerminal(&b) {
		t.Error("a strings.Builder is a terminal")
	}
}

// A backfill that starts before the oldest record a full history keeps
// says that the older slots count as done (the store trimmed them to its
// mark) rather than letting "skipped" pass for "ran"; a backfill of slots
// that did run, inside the history, says nothing of the kind.
func TestBackfillTrimmedNote(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "jobs.yaml", "- name: m\n  schedule: '* * * * *'\n  shell: 'true'\n  history_size: 3\n")
	store := "sqlite:" + filepath.Join(dir, "s.db")
	to := time.Now().UTC().Truncate(time.Minute)
	bf := func(from, to time.Time) (int, string, string) {
		return cli(t, "backfill", "m", "--config", cfg, "--store", store, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--log-level", "error")
	}
	if code, out, errOut := bf(to.Add(-5*time.Minute), to); code != 0 || strings.Contains(errOut, "note:") {
		t.Fatalf("first backfill: exit %d:\n%s%s", code, out, errOut)
	}
	if code, out, errOut := bf(to.Add(-2*time.Minute), to); code != 0 || strings.Contains(errOut, "note:") {
		t.Errorf("a backfill of slots that ran, inside the history: exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut := bf(to.Add(-time.Hour), to.Add(-55*time.Minute))
	if code != 0 || !strings.Contains(out, `"skipped":5`) ||
		!strings.Contains(errOut, "note: slots before "+to.Add(-3*time.Minute).Format("2006-01-02T15:04:05.000Z")+`, the oldest of the 3 records the store keeps of "m" (history_size), count as done`) {
		t.Errorf("a backfill before the history: exit %d:\n%s%s\nwant 5 skipped and the note", code, out, errOut)
	}
}
