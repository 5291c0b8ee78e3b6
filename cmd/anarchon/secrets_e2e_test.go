package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A password (or token) in every form of store URL shows up nowhere: not
// in the errors of commands that cannot open the store, nor in the logs,
// the start-up summary and /status of a daemon that runs on it.
func TestNoPasswordAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the binary")
	}
	const pw = "Pw0rdLeak"
	forms := []string{
		"postgres://user:" + pw + "@127.0.0.1:1/db",
		"postgres://user:" + pw + "/@?#x@127.0.0.1:1/db",
		"postgresql://127.0.0.1:1/db?user=u&password=" + pw,
		"redis://:" + pw + "@127.0.0.1:1/0",
		"redis://user:" + pw + "%zz@127.0.0.1:1",
		"nats://" + pw + "@127.0.0.1:1",
		"nats://user:" + pw + "@127.0.0.1:1",
		"rediss://u:" + pw + "@[::1:1",
	}
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: tick\n* * * * * * true\n")
	for _, store := range forms {
		for _, args := range [][]string{{"history", "tick"}, {"status"}, {"run-now", "tick"}} {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cmd := exec.CommandContext(ctx, daemonBinary(t), append(args, "--store", store, "--crontab", ct)...)
			out, _ := cmd.CombinedOutput()
			cancel()
			if strings.Contains(string(out), pw) {
				t.Errorf("anarchon %s --store %s prints the password:\n%s", strings.Join(args, " "), store, out)
			}
		}
	}

	url := os.Getenv("ANARCHON_TEST_NATS_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("ANARCHON_TEST_NATS_URL is not set")
		}
		t.Skip("ANARCHON_TEST_NATS_URL is not set: the running daemon part needs a NATS server (scripts/services/nats.sh)")
	}
	// A server without authentication takes any token: the daemon runs.
	store := strings.Replace(url, "nats://", "nats://"+pw+"@", 1) + "?prefix=leak" + randSuffix()
	p := startDaemon(t, dir, "leak", "--crontab", ct, "--store", store, "--http", "127.0.0.1:0", "--log-level", "debug")
	p.waitReady(t, 60*time.Second)
	base := p.httpBase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, path := range []string{"/status", "/metrics", "/readyz"} {
		body, code := httpGet(ctx, base+path)
		if code != 200 || strings.Contains(body, pw) {
			t.Errorf("%s: %d, password shown: %v", path, code, strings.Contains(body, pw))
		}
	}
	time.Sleep(1500 * time.Millisecond) // a run or two, logged
	p.stop(t, 15*time.Second)
	data, err := os.ReadFile(filepath.Join(dir, "leak.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "store:") {
		t.Errorf("no summary in the log:\n%s", data)
	}
	if strings.Contains(string(data), pw) {
		t.Errorf("the daemon's summary or logs show the token:\n%s", data)
	}
}
