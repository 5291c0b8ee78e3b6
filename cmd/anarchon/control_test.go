package main

import (
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// TestTriggerTimeoutNamesItsKey: a trigger no replica ran within
// --timeout stays pending, and the error says how to wait for that one
// request instead of asking for another run.
func TestTriggerTimeoutNamesItsKey(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "t.cron", "# name: t\n@daily echo t\n")
	code, _, errOut := cli(t, "trigger", "t", "--crontab", ct, "--store", "sqlite:"+filepath.Join(dir, "s.db"), "--timeout", "200ms", "--key", "k1")
	if want := "wait for it by running this command again with --key k1 (timeout)"; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant 1 and %q", code, errOut, want)
	}
	// --timeout bounds the wait, not the request: one that ends before
	// the request is stored still stores it and names its key; --json
	// prints the request as it stands.
	code, out, errOut := cli(t, "trigger", "t", "--crontab", ct, "--store", "sqlite:"+filepath.Join(dir, "s.db"), "--timeout", "1ns", "--key", "k2", "--json")
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || !strings.Contains(errOut, "--key k2 (timeout)") ||
		got["key"] != "k2" || got["state"] != "pending" || got["job"] != "t" || got["exit_code"] != nil {
		t.Errorf("--timeout 1ns --json: exit %d, stdout %q (%v), stderr:\n%s\nwant 1, the pending request k2 without an exit code, and its key named", code, out, err, errOut)
	}
}

// TestReadCommandsKeepFileWarningsAtDebug: the commands that read the job
// files only to know the jobs do not repeat the files' warnings at every
// call; --log-level debug shows them.
func TestReadCommandsKeepFileWarningsAtDebug(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "t.cron", "# name: t\n@daily echo t\n# name: pct\n@hourly echo 50%\n")
	store := "sqlite:" + filepath.Join(dir, "s.db")
	for _, args := range [][]string{{"run-now", "t"}, {"history", "t"}, {"status"}} {
		code, _, errOut := cli(t, append(args, "--crontab", ct, "--store", store)...)
		if code != 0 || strings.Contains(errOut, "warning:") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant 0 and no file warning", args[0], code, errOut)
		}
	}
	code, _, errOut := cli(t, "history", "t", "--crontab", ct, "--store", store, "--log-level", "debug")
	if code != 0 || !strings.Contains(errOut, "level=DEBUG") || !strings.Contains(errOut, "warning:") {
		t.Errorf("history --log-level debug: exit %d, stderr:\n%s\nwant 0 and the file's warning at DEBUG", code, errOut)
	}
}

// TestWhoWithoutUser: pause and trigger record who asked; without $USER
// (a container, a service) that is $LOGNAME, else the uid's own name.
func TestWhoWithoutUser(t *testing.T) {
	t.Setenv("USER", "")
	t.Setenv("LOGNAME", "lg")
	if got := who(); !strings.HasPrefix(got, "lg@") {
		t.Errorf("who() with LOGNAME=lg = %q", got)
	}
	t.Setenv("LOGNAME", "")
	u, err := user.Current()
	if err != nil {
		t.Skipf("no user for uid %d: %v", os.Getuid(), err)
	}
	if got := who(); !strings.HasPrefix(got, u.Username+"@") {
		t.Errorf("who() without USER and LOGNAME = %q, want %s@…", got, u.Username)
	}
}
