//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// binaryIn copies the daemon's binary into dir, so that a process of
// another user (nobody) can run it: the test binary's own directory may
// be closed to it.
func binaryIn(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(daemonBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "anarchon")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestOtherUserRefusedWhenNotRoot runs anarchon as nobody (the test must be
// root to switch) with a system crontab line for root: validate and run
// both refuse it, naming the reason, instead of accepting a line that
// would fail at every run.
func TestOtherUserRefusedWhenNotRoot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run anarchon as nobody (as non-root, TestCorpusRunNow checks the refusal)")
	}
	dir, err := os.MkdirTemp("", "anarchon-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := binaryIn(t, dir)
	ct := writeFile(t, dir, "crontab", "# name: as-root\n0 0 * * * root echo hi\n# name: as-nobody\n0 0 * * * nobody echo hi\n")
	for _, args := range [][]string{
		{"validate", "--crontab", ct, "--format", "system"},
		{"run", "--crontab", ct, "--format", "system", "--store", "memory:"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%q as nobody: %v, want exit 1\n%s", args, err, out)
		}
		if !strings.Contains(string(out), ct+":2: job \"as-root\": the line runs as user \"root\" but anarchon runs as uid 65534, not root") {
			t.Errorf("%q: no error for the root line:\n%s", args, out)
		}
		if strings.Contains(string(out), "as-nobody") {
			t.Errorf("%q: the line of anarchon's own user was refused:\n%s", args, out)
		}
	}
}
