//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNoZombiesAsPID1 runs the daemon as PID 1 of a new PID namespace
// (unshare -pf --mount-proc, as a container runtime would) with a job that
// leaves an orphaned background process every second, and counts the
// zombies in the namespace at the start of each run: there must be none,
// since each orphan exited well before the next run. 5 runs here; 30 with
// ANARCHON_TEST_ZOMBIE_SOAK=1.
func TestNoZombiesAsPID1(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon binary")
	}
	runs := 5
	if os.Getenv("ANARCHON_TEST_ZOMBIE_SOAK") == "1" {
		runs = 30
	}
	ci := os.Getenv("CI") == "true"
	if out, err := exec.Command("unshare", "-pf", "--mount-proc", "true").CombinedOutput(); err != nil {
		if ci {
			t.Fatalf("unshare -pf --mount-proc: %v %s", err, out)
		}
		t.Skipf("unshare -pf --mount-proc does not work here (needs root or user namespaces): %v %s", err, out)
	}
	bin := daemonBinary(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "zombies")
	ct := writeFile(t, dir, "crontab", `# name: forker
* * * * * * grep -l '^State:.Z' /proc/[0-9]*/status 2>/dev/null | wc -l >> `+out+`; (sleep 0.2 &)
`)
	cmd := exec.Command("unshare", "-pf", "--mount-proc", "--kill-child", bin, "run", "--crontab", ct, "--store", "memory:", "--instance", "pid1")
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			data, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Logf("daemon log:\n%s", data)
		}
	}()
	deadline := time.Now().Add(time.Duration(runs)*time.Second + 30*time.Second)
	var counts []string
	for {
		data, _ := os.ReadFile(out)
		counts = strings.Fields(string(data))
		if len(counts) >= runs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d runs recorded before the deadline: %v", len(counts), counts)
		}
		time.Sleep(200 * time.Millisecond) // another process writes the file: poll it
	}
	for i, c := range counts[:runs] {
		if n, err := strconv.Atoi(c); err != nil || n != 0 {
			t.Errorf("run %d saw %s zombies, want 0 (all: %v)", i+1, c, counts)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "log"))
	if !strings.Contains(string(data), "reaping orphaned processes") {
		t.Errorf("the daemon did not say it reaps as PID 1")
	}
}
