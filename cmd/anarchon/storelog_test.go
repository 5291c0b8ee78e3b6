package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
			v := serverEnv(t, c.env, c.name)
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

// Each command logs the store's start-up report (Redis: the persistence
// WARN and the topology; NATS: the bound bucket; PostgreSQL: its
// replication report, a WARN per durability risk such as
// synchronous_commit=off, nothing on a safe single server) at most once,
// the read-only ones (history, status) not at all, and a daemon whose
// crontab has an @reboot job logs it once at start (PostgreSQL: at most
// once): its @reboot runs initialise the store again, on a scheduler of
// their own.
func TestStoreStartupReportOnce(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: lg\n@daily echo hi\n# name: boot\n@reboot echo up\n")
	for _, c := range []struct {
		name, env, store, msg string
		always                bool // the report is never empty
	}{
		{"redis", "ANARCHON_TEST_REDIS_ADDR", "redis://%s/0?prefix=once" + randSuffix(), "redis: topology", true},
		{"nats", "ANARCHON_TEST_NATS_URL", "%s?prefix=once" + randSuffix(), "nats store bound", true},
		{"postgres", "ANARCHON_TEST_POSTGRES_URL", "", "postgres: ", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := ""
			if c.name == "postgres" {
				store = postgresStore(t, "the start-up report test", "once")
			} else {
				store = strings.Replace(c.store, "%s", serverEnv(t, c.env, c.name), 1)
			}
			for _, args := range [][]string{
				{"run-now", "lg", "--crontab", ct},
				{"history", "lg"},
				{"history", "lg", "--crontab", ct},
				{"status"},
				{"status", "--json"},
				{"status", "--crontab", ct},
				{"pause", "lg", "--crontab", ct},
				{"resume", "lg", "--crontab", ct},
			} {
				code, out, errOut := cli(t, append(args, "--store", store)...)
				if code != 0 {
					t.Fatalf("%q: exit %d\n%s%s", args, code, out, errOut)
				}
				n := strings.Count(errOut, c.msg)
				if n > 1 {
					t.Errorf("%q: %d %q lines, want at most one:\n%s", args, n, c.msg, errOut)
				}
				if read := args[0] == "history" || args[0] == "status"; read && (n > 0 || strings.Contains(errOut, "persistence")) {
					t.Errorf("%q: a read-only command logs the store's start-up report:\n%s", args, errOut)
				}
			}
			if testing.Short() {
				return
			}
			p := startDaemon(t, dir, c.name+"-boot", "--crontab", ct, "--store", store)
			p.waitReady(t, 60*time.Second)
			pollLog(t, p.logPath, "run succeeded", 30*time.Second) // the @reboot run
			p.stop(t, 15*time.Second)
			data, err := os.ReadFile(p.logPath)
			if err != nil {
				t.Fatal(err)
			}
			if log := string(data); strings.Count(log, c.msg) > 1 || c.always && strings.Count(log, c.msg) != 1 {
				n := strings.Count(log, c.msg)
				t.Errorf("run with an @reboot job: %d %q lines, want one:\n%s", n, c.msg, log)
			}
		})
	}
}

// The SQLite backend's ERROR for a database file deleted under the daemon
// goes through the daemon's logger too: with --log-format json it is a
// JSON line, and the file is not made again at the path.
func TestSQLiteFileLossLogsThroughDaemonLogger(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a daemon")
	}
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: tick\n* * * * * * true\n")
	db := filepath.Join(dir, "gone.db")
	p := startDaemon(t, dir, "lost", "--crontab", ct, "--store", "sqlite:"+db, "--log-format", "json")
	pollLog(t, p.logPath, `"msg":"started"`, 30*time.Second) // JSON: no summary on stdout
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	line := pollLog(t, p.logPath, "the database file was", 30*time.Second)
	var rec struct{ Level, Msg string }
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Level != "ERROR" || !strings.Contains(rec.Msg, "was deleted") {
		t.Fatalf("the lost file's line is not the daemon's JSON ERROR saying it was deleted: %q (%v)", line, err)
	}
	if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deleted database's path after the ERROR: %v, want it absent", err)
	}
	p.stop(t, 15*time.Second)
}
