package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The Redis and NATS backends log their start-up report (the topology
// found, WARNs about it) through the daemon's logger, so --log-format
// json gives JSON lines: each stderr line that names the report parses
// as JSON with it as msg.
func TestStoreStartupLogsThroughDaemonLogger(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: lg\n@daily echo hi\n")
	for _, c := range []struct{ name, env, store, msg string }{
		{"redis", "ANARCHON_TEST_REDIS_ADDR", "redis://%s/0?prefix=lg" + randSuffix(), "redis: topology"},
		{"nats", "ANARCHON_TEST_NATS_URL", "%s?prefix=lg" + randSuffix(), "nats store bound"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := os.Getenv(c.env)
			if v == "" {
				msg := c.env + " is not set: start a server with scripts/services/" + c.name + ".sh and export its output"
				if os.Getenv("CI") == "true" {
					t.Fatal(msg)
				}
				t.Skip(msg)
			}
			store := strings.Replace(c.store, "%s", v, 1)
			code, out, errOut := cli(t, "run-now", "lg", "--crontab", ct, "--store", store, "--log-format", "json")
			if code != 0 {
				t.Fatalf("run-now: exit %d\n%s%s", code, out, errOut)
			}
			found := false
			for _, line := range strings.Split(errOut, "\n") {
				if !strings.Contains(line, c.msg) {
					continue
				}
				var rec struct{ Msg string }
				if err := json.Unmarshal([]byte(line), &rec); err != nil || !strings.HasPrefix(rec.Msg, c.msg) {
					t.Fatalf("start-up line is not the daemon's JSON: %q (%v)", line, err)
				}
				found = true
			}
			if !found {
				t.Fatalf("no %q line on stderr:\n%s", c.msg, errOut)
			}
		})
	}
}
