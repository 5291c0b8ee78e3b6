package redisbackend_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startServer starts a redis-server of the test's own (a replica, a
// cluster node) on a free loopback port, with its files in a temporary
// directory, and stops it when the test ends. It needs the redis-server
// binary, which scripts/services/redis.sh installs, and runs, like every
// integration test, only with ANARCHON_TEST_REDIS_ADDR set; without either
// the test is skipped, or fails when CI=true. (The failover drills, which
// kill and restart servers, live in the faults module with their
// launchers.)
func startServer(t *testing.T, args ...string) string {
	t.Helper()
	redisAddr(t) // integration tests run only with ANARCHON_TEST_REDIS_ADDR
	if _, err := exec.LookPath("redis-server"); err != nil {
		msg := "redis-server is not in PATH (scripts/services/redis.sh installs it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	for range 5 {
		addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
		if launch(t, dir, addr, args) {
			return addr
		}
	}
	log, _ := os.ReadFile(dir + "/redis.log")
	t.Fatalf("redis-server did not start: %s", log)
	return ""
}

// launch starts redis-server on addr and waits until it answers PING; it
// kills it when the test ends.
func launch(t *testing.T, dir, addr string, args []string) bool {
	_, port, _ := strings.Cut(addr, ":")
	full := append([]string{
		"--bind", "127.0.0.1", "--port", port,
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--logfile", dir + "/redis.log"}, args...)
	cmd := exec.Command("redis-server", full...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	deadline := time.Now().Add(10 * time.Second)
	up := false
	for time.Now().Before(deadline) {
		select {
		case <-done:
		default:
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			up = c.Ping(ctx).Err() == nil
			cancel()
			if !up {
				time.Sleep(50 * time.Millisecond) // the server's start-up has no other signal
				continue
			}
		}
		break
	}
	_ = c.Close()
	if !up {
		_ = cmd.Process.Kill()
		<-done
		return false
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return true
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitInfo polls INFO section on addr until field has value, or fails.
func waitInfo(t *testing.T, addr, section, field, value string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		info, err := c.Info(t.Context(), section).Result()
		if err == nil && strings.Contains(info, field+":"+value) {
			return
		}
		time.Sleep(50 * time.Millisecond) // replication set-up has no event to wait on
	}
	t.Fatalf("%s: INFO %s never showed %s:%s", addr, section, field, value)
}
