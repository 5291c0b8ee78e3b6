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
	"time"
)

// An SQLite store this user may not use is reported with the file system's
// reason and the path it concerns, not SQLite's bare "unable to open
// database file (14)" or "attempt to write a readonly database (1544)":
// a store file it cannot read, a store in a directory where SQLite
// cannot create its -wal file, a store file it can read but not write.
// The code stays open_failed, and every command (run, status, history,
// pause, backfill) prints the same line for the same problem. As root, where
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
	// A store file this user may read but not write, in a directory open
	// to it: "run" says so, not a bare "permission denied".
	readOnly := newStore("readonly")
	if err := os.Chmod(readOnly, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(readOnly), 0o777); err != nil {
		t.Fatal(err)
	}
	// A range with a slot of the @daily job in it, so that backfill
	// opens the store.
	now := time.Now().UTC()
	from, to := now.Add(-48*time.Hour).Format(time.RFC3339), now.Add(-time.Hour).Format(time.RFC3339)
	noRead := "open " + unreadable + ": permission denied"
	noCreate := "cannot create " + roDir + "-wal: directory " + filepath.Dir(roDir) + ": permission denied"
	// Cases with the same want are the same problem: every command
	// prints the same error line for it.
	lines := map[string]string{}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--crontab", ct, "--store", "sqlite:" + leftShm, "--start-timeout", "0"}, "open " + leftShm + "-shm: permission denied"},
		{[]string{"run", "--crontab", ct, "--store", "sqlite:" + unreadable, "--start-timeout", "0"}, noRead},
		{[]string{"status", "--store", "sqlite:" + unreadable}, noRead},
		{[]string{"history", "t", "--store", "sqlite:" + unreadable}, noRead},
		{[]string{"run", "--crontab", ct, "--store", "sqlite:" + roDir, "--start-timeout", "0"}, noCreate},
		{[]string{"status", "--store", "sqlite:" + roDir}, noCreate},
		{[]string{"pause", "t", "--crontab", ct, "--store", "sqlite:" + roDir}, noCreate},
		{[]string{"backfill", "t", "--crontab", ct, "--store", "sqlite:" + roDir, "--from", from, "--to", to}, noCreate},
		{[]string{"run", "--crontab", ct, "--store", "sqlite:" + readOnly, "--start-timeout", "0"}, "open " + readOnly + ": permission denied: the file can be read but not written"},
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
			continue
		}
		// The error line, from the reason on: the store URL before it
		// differs between the cases.
		var line string
		for l := range strings.Lines(string(out)) {
			if i := strings.Index(l, tc.want); i >= 0 {
				if !strings.HasPrefix(l, "anarchon: store URL ") {
					t.Errorf("%q: error %q, want it after the store URL", tc.args, l)
				}
				line = l[i:]
			}
		}
		if first, ok := lines[tc.want]; ok && line != first {
			t.Errorf("%q: error\n%s\nwant the same as for the same problem before:\n%s", tc.args, line, first)
		}
		lines[tc.want] = line
	}
}
