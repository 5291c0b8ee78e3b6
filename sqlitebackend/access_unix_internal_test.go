//go:build unix

package sqlitebackend

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// readOnlyEnv names, in the environment of this test binary run again as
// another user, the file TestAccessReasonReadOnlyFile checks.
const readOnlyEnv = "SQLITEBACKEND_TEST_READONLY_FILE"

// A database file this process may read but not write (mode 0444, in a
// directory open to it) is said to be readable and not writable, not
// only "permission denied", which reads as if the file were closed to it;
// also beside a -wal file made with its mode.
// Modes deny root nothing: as root, the test binary runs this test again
// as nobody.
func TestAccessReasonReadOnlyFile(t *testing.T) {
	if path := os.Getenv(readOnlyEnv); path != "" {
		checkReadOnlyReason(t, path)
		return
	}
	dir, err := os.MkdirTemp("", "sqlitebackend-access-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s.db")
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o444); err != nil { // past the umask
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		checkReadOnlyReason(t, path)
		return
	}
	// A copy of the test binary that nobody can run: its own directory
	// may be closed to that user.
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sqlitebackend.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestAccessReasonReadOnlyFile$", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), readOnlyEnv+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("as nobody: %v\n%s", err, out)
	}
}

// checkReadOnlyReason checks the reasons for path, a file this process
// may read but not write, in a directory where it may create files.
func checkReadOnlyReason(t *testing.T, path string) {
	t.Helper()
	want := "open " + path + ": permission denied: the file can be read but not written"
	reason := AccessReason(path)
	if reason == nil || reason.Error() != want || !errors.Is(reason, os.ErrPermission) {
		t.Errorf("AccessReason = %v, want %q wrapping fs.ErrPermission", reason, want)
	}
	err := withAccessReason(codeErr(8), path)
	if !strings.HasPrefix(err.Error(), want+"; SQLite: ") || !errors.Is(err, codeErr(8)) {
		t.Errorf("withAccessReason(READONLY) = %v, want %q ahead of SQLite's error, kept", err, want)
	}
	// The -wal file SQLite makes with the file's mode, which cannot be
	// written either: the file's mode is still the reason.
	if err := os.WriteFile(path+"-wal", nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path+"-wal", 0o444); err != nil {
		t.Fatal(err)
	}
	if reason := AccessReason(path); reason == nil || reason.Error() != want {
		t.Errorf("with a 0444 -wal file, AccessReason = %v, want %q", reason, want)
	}
}
