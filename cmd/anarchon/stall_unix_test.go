//go:build unix

package main

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStallSkipsLogged stops the daemon (SIGSTOP) for 4 s while a job
// with max_late 1s runs every second: the first slot overdue at SIGCONT is
// claimed and logged missed, and the slots after it that the timer loop
// skipped, never claimed, are named by one WARN line, not left unsaid.
func TestStallSkipsLogged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon binary")
	}
	dir := t.TempDir()
	cfg := writeFile(t, dir, "jobs.yaml", "- name: tick\n  schedule: '* * * * * *'\n  max_late: 1s\n  shell: 'true'\n")
	cmd, logPath := startLogged(t, dir, "run", "--config", cfg, "--store", "memory:", "--log-format", "json")
	pollLog(t, logPath, `"run succeeded"`, 30*time.Second)
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // the stall: a process that is stopped cannot be waited on otherwise
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	line := pollLog(t, logPath, `"slots skipped`, 30*time.Second)
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatal(err)
	}
	first, err1 := time.Parse(time.RFC3339Nano, rec["first_skipped"].(string))
	next, err2 := time.Parse(time.RFC3339Nano, rec["next_slot"].(string))
	if rec["level"] != "WARN" || rec["job"] != "tick" || err1 != nil || err2 != nil || !next.After(first) {
		t.Errorf("line %s", line)
	}
	data, _ := os.ReadFile(logPath)
	if n := strings.Count(string(data), `"slots skipped`); n != 1 {
		t.Errorf("%d skip lines for one stall, want 1:\n%s", n, data)
	}
}
