//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A named pipe in a --crontab-dir is skipped with a warning, as cron
// skips every file that is not a regular one: reading it blocked
// validate and the daemon's start (deaf to signals) until something
// wrote to it. A link to a directory is skipped the same way.
func TestCrontabDirSkipsFIFO(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "app", "# name: app\n0 0 * * * root echo\n")
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	_, out, errOut := cli(t, "validate", "--crontab-dir", dir)
	for _, want := range []string{
		filepath.Join(dir, "pipe") + ": warning: skipped: a named pipe (FIFO), not a regular file",
		filepath.Join(dir, "sub") + ": warning: skipped: a directory, not a regular file",
		filepath.Join(dir, "app") + ": system crontab",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the output:\n%s%s", want, out, errOut)
		}
	}
	// --watch's fingerprint of the files does not read the pipe either.
	if fingerprintFiles(sources{CrontabDirs: []string{dir}}) == "" {
		t.Error("no fingerprint")
	}
}
