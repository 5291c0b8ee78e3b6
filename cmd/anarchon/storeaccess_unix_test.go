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

// An SQLite store this user may not use is reported with the file system's
// reason and the path it concerns, not SQLite's bare "unable to open
// database file (14)" or "attempt to write a readonly database (1544)":
// a store file it cannot read, and a store in a directory where SQLite
// cannot create its -wal file. The code stays open_failed. As root, where
// modes deny nothing, the commands run as nobody.
func TestSQLiteStoreAccessDenied(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon binary")
	}
	dir, err := os.MkdirTemp("", "anarchon-access-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := daemonBinary(t)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		bin = binaryIn(t, dir)
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	ct := writeFile(t, dir, "t.cron", "# name: t\n@daily echo t\n")
	if err := os.Chmod(ct, 0o644); err != nil {
		t.Fatal(err)
	}
	// A store made by run-now, its companion files gone as after a clean
	// stop and the lock file's removal.
	newStore := func(sub string) string {
		d := filepath.Join(dir, sub)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(d, "s.db")
		if code, _, errOut := cli(t, "run-now", "t", "--crontab", ct, "--store", "sqlite:"+db); code != 0 {
			t.Fatalf("run-now: exit %d\n%s", code, errOut)
		}
		for _, suffix := range []string{"-wal", "-shm", "-writers"} {
			if err := os.Remove(db + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		return db
	}
	unreadable := newStore("unreadable")
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	roDir := newStore("rodir")
	if err := os.Chmod(roDir, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(roDir), 0o555); err != nil {
		t.Fatal(err)
	}
	// A -shm file another user's read-only session left, which this one
	// cannot write: the store's file and directory are open to it, and
	// only its first write (the migration) fails.
	leftShm := newStore("leftshm")
	if err := os.Chmod(leftShm, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(leftShm), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(leftShm+"-shm", make([]byte, 32768), 0o444); err != nil {
		t.Fatal(err)
	}
	if cred == nil {
		// Not root: the file is this user's own, so it is made another's
		// by its mode alone, which its owner may change back; SQLite does
		// not.
		if err := os.Chmod(leftShm+"-shm", 0o444); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--crontab", ct, "--store", "sqlite:" + leftShm, "--start-timeout", "0"}, "open " + leftShm + "-shm: permission denied"},
		{[]string{"status", "--store", "sqlite:" + unreadable}, "open " + unreadable + ": permission denied"},
		{[]string{"history", "t", "--store", "sqlite:" + unreadable}, "open " + unreadable + ": permission denied"},
		{[]string{"status", "--store", "sqlite:" + roDir}, "cannot create " + roDir + "-wal: directory " + filepath.Dir(roDir) + ": permission denied"},
		{[]string{"pause", "t", "--crontab", ct, "--store", "sqlite:" + roDir}, "cannot create " + roDir + "-wal: directory " + filepath.Dir(roDir) + ": permission denied"},
	} {
		cmd := exec.Command(bin, tc.args...)
		cmd.Dir = dir
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "(open_failed)") {
			t.Errorf("%q: %v, want exit 1, %q and open_failed in:\n%s", tc.args, err, tc.want, out)
		}
	}
}
