package main

import (
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
	if want := "wait for it with anarchon trigger t --key k1 (timeout)"; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant 1 and %q", code, errOut, want)
	}
}
