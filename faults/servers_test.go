package faults_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anarchon/anarchon/sqlitefile"
)

// freePort finds a free loopback port below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), so that while a server is down for a
// restart no client connection can take its port as a local port and
// keep the server from listening on it again.
func freePort(t *testing.T) int {
	t.Helper()
	return freePortPlus(t, 0)
}

// freePortPlus is freePort for a server that also listens on its port +
// offset (a Redis Cluster node's bus: +10000): both are free and below
// the ephemeral range.
func freePortPlus(t *testing.T, offset int) int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	const base = 10000
	if low-offset <= base+1000 {
		t.Fatalf("ephemeral ports start at %d: no room below them for the servers", low)
	}
	return freePortFrom(t, base, low, offset)
}

// freePortFrom returns a port in [base, low-offset) that is free, and
// whose port+offset is free too when offset is not 0 (a Redis Cluster
// node listens on port+10000 for its bus): both below the ephemeral
// range, where no outgoing connection takes them.
func freePortFrom(t *testing.T, base, low, offset int) int {
	t.Helper()
	free := func(port int) bool {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return false
		}
		ln.Close()
		return true
	}
	for range 100 {
		port := base + rand.IntN(low-offset-base)
		if free(port) && (offset == 0 || free(port+offset)) {
			return port
		}
	}
	t.Fatalf("no free port in [%d, %d) with port+%d free", base, low-offset, offset)
	return 0
}

// server is a store server process the harness owns, so that it can stop
// it and start it again on the same port.
type server struct {
	name  string
	bin   string
	args  []string
	addr  string
	ready func(addr string) error // one probe; nil when the server answers
	log   *os.File

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

func (s *server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.ready(s.addr)
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited while starting; see %s", s.name, s.log.Name())
		case <-time.After(50 * time.Millisecond): // waiting for another process to listen
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("%s did not answer on %s within 30 s: %v", s.name, s.addr, err)
		}
	}
}

// halt stops the server with SIGTERM (a clean shutdown that flushes its
// data), or SIGKILL after 20 s.
func (s *server) halt() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// restart stops the server, waits down and starts it again. The outage
// is [start, end): start is when the old process had exited, end when the
// new one was started (it answers a little later).
func (s *server) restart(down time.Duration) (start, end time.Time, err error) {
	s.halt()
	start = time.Now() // a stopping server may still answer until it exits
	time.Sleep(down)   // the outage itself
	end, err = startRetrying(s.start)
	return start, end, err
}

// startRetrying calls start up to 5 times, 1 s apart, and returns the
// first success or every error: a server that fails to come back once
// (a loaded machine) must not end the soak's store for good. The fault's
// outage then lasts until the start that worked.
func startRetrying(start func() error) (end time.Time, err error) {
	var errs []error
	for range 5 {
		end = time.Now()
		err := start()
		if err == nil {
			return end, nil
		}
		errs = append(errs, err)
		time.Sleep(time.Second)
	}
	return end, errors.Join(errs...)
}

func newServer(t *testing.T, name, bin string, args []string, addr string, ready func(string) error) *server {
	t.Helper()
	logf, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	s := &server{name: name, bin: bin, args: args, addr: addr, ready: ready, log: logf}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.halt(); logf.Close() })
	return s
}

// probe dials addr, sends hello (if any) and checks that the first line of
// the answer starts with want.
func probe(addr, hello, want string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if hello != "" {
		if _, err := c.Write([]byte(hello)); err != nil {
			return err
		}
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, want) {
		return fmt.Errorf("answered %q", strings.TrimSpace(line))
	}
	return nil
}

// redisStore starts a redis-server of its own (the binary that
// scripts/services/redis.sh installs) with an append-only file fsynced on
// every write, so that a restart keeps every claim, as a production Redis
// holding anarchon's claims must be configured.
func redisStore(t *testing.T) store {
	need(t, "ANARCHON_TEST_REDIS_ADDR", "redis")
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found in PATH (scripts/services/redis.sh installs it): %v", err)
	}
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, port, _ := net.SplitHostPort(addr)
	srv := newServer(t, "redis-server", bin, []string{
		"--bind", "127.0.0.1", "--port", port, "--dir", dir, "--save", "",
		"--appendonly", "yes", "--appendfsync", "always", "--protected-mode", "yes",
	}, addr, func(a string) error { return probe(a, "PING\r\n", "+PONG") })
	return store{
		name: "redis", addr: addr,
		url:     func(a string) string { return "redis://" + a },
		restart: srv.restart,
	}
}

// natsStore starts a nats-server of its own with JetStream on disk. The
// binary is ANARCHON_TEST_NATS_SERVER_BIN (printed by
// scripts/services/nats.sh), or nats-server in PATH.
func natsStore(t *testing.T) store {
	need(t, "ANARCHON_TEST_NATS_URL", "nats")
	bin := os.Getenv("ANARCHON_TEST_NATS_SERVER_BIN")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("nats-server"); err != nil {
			t.Fatal("no nats-server: set ANARCHON_TEST_NATS_SERVER_BIN as scripts/services/nats.sh prints it")
		}
	}
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, port, _ := net.SplitHostPort(addr)
	srv := newServer(t, "nats-server", bin, []string{
		"-js", "-sd", dir, "-a", "127.0.0.1", "-p", port,
	}, addr, func(a string) error {
		if err := probe(a, "", "INFO"); err != nil {
			return err
		}
		// JetStream answers once the server has recovered its streams.
		return probeNATSJetStream(a)
	})
	return store{
		name: "nats", addr: addr,
		url:     func(a string) string { return "nats://" + a },
		restart: srv.restart,
	}
}

// probeNATSJetStream sends a JetStream account info request over the NATS
// text protocol and waits for its reply.
func probeNATSJetStream(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	r := bufio.NewReader(c)
	if _, err := r.ReadString('\n'); err != nil { // INFO
		return err
	}
	msg := "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB _probe.reply 1\r\nPUB $JS.API.INFO _probe.reply 0\r\n\r\nPING\r\n"
	if _, err := c.Write([]byte(msg)); err != nil {
		return err
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.HasPrefix(line, "MSG ") {
			body, err := r.ReadString('\n')
			if err != nil {
				return err
			}
			if strings.Contains(body, "\"error\"") {
				return fmt.Errorf("jetstream not ready: %s", strings.TrimSpace(body))
			}
			return nil
		}
		if strings.HasPrefix(line, "-ERR") {
			return fmt.Errorf("nats: %s", strings.TrimSpace(line))
		}
	}
}

// sqliteStore is a SQLite file. Its outage is another process holding the
// database's write lock.
func sqliteStore(t *testing.T) store {
	path := filepath.Join(t.TempDir(), "anarchon.db")
	return store{
		name: "sqlite",
		url:  func(string) string { return "sqlite:" + path },
		lock: func(d time.Duration) (start, end time.Time, err error) {
			db, err := sql.Open(sqlitefile.DriverName, sqlitefile.DSN(path, 30000))
			if err != nil {
				return start, end, err
			}
			defer db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: takes the write lock
			if err != nil {
				return start, end, err
			}
			// A write makes sure the lock is held, whatever the driver's
			// BEGIN did.
			if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS faults_lock (x INTEGER)"); err != nil {
				_ = tx.Rollback()
				return start, end, err
			}
			start = time.Now()
			time.Sleep(d) // the outage itself
			end = time.Now()
			return start, end, tx.Rollback()
		},
	}
}

// runService runs scripts/services/<name>.sh in a new temporary
// directory, which it returns with the value the script printed for
// variable. The test fails if the script fails or prints no such value.
func runService(t *testing.T, name, variable string) (work, value string) {
	t.Helper()
	work = t.TempDir()
	script, err := filepath.Abs("../scripts/services/" + name + ".sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script, work)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s.sh: %v", name, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, variable+"="); ok {
			value = strings.TrimSpace(v)
		}
	}
	if value == "" {
		t.Fatalf("%s.sh printed no %s", name, variable)
	}
	return work, value
}

// pgStore starts a PostgreSQL server of its own with
// scripts/services/postgres.sh (a data directory under a temporary
// directory, run by the script's unprivileged user when the tests run as
// root), so that it can stop and start it with pg_ctl on the same port.
func pgStore(t *testing.T) store {
	need(t, "ANARCHON_TEST_POSTGRES_URL", "postgres")
	work, rawURL := runService(t, "postgres", "ANARCHON_TEST_POSTGRES_URL")
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("postgres.sh printed an unparsable URL: %v", err)
	}
	datadir, err := filepath.EvalSymlinks(filepath.Join(work, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	pgdata := filepath.Join(datadir, "data")
	bindir, err := pgBinDir()
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	pgctl := func(args ...string) error {
		argv := append([]string{filepath.Join(bindir, "pg_ctl"), "-D", pgdata}, args...)
		if os.Getuid() == 0 {
			argv = append([]string{"runuser", "-u", "anarchon-pg", "--"}, argv...)
		}
		c := exec.Command(argv[0], argv[1:]...)
		if b, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("pg_ctl %s: %v: %s", args[len(args)-1], err, b)
		}
		return nil
	}
	// The options postgres.sh starts the server with.
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %s -c unix_socket_directories=%s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=500", port, datadir)
	t.Cleanup(func() {
		if err := pgctl("-m", "immediate", "-w", "stop"); err != nil {
			t.Log(err)
		}
		if datadir != filepath.Join(work, "postgres") {
			os.RemoveAll(datadir)
		}
	})
	addr := u.Host
	return store{
		name: "postgres", addr: addr,
		url: func(a string) string {
			v := *u
			v.Host = a
			q := v.Query()
			q.Set("connect_timeout", "3")
			v.RawQuery = q.Encode()
			return v.String()
		},
		restart: func(down time.Duration) (start, end time.Time, err error) {
			// A fast shutdown: sessions are ended, the data is checkpointed.
			// With -w pg_ctl returns once the server has exited.
			if err := pgctl("-m", "fast", "-w", "stop"); err != nil {
				return time.Now(), time.Now(), err
			}
			start = time.Now()
			time.Sleep(down) // the outage itself
			logfile := filepath.Join(datadir, "postgres.log")
			end, err = startRetrying(func() error {
				err := pgctl("-l", logfile, "-w", "-t", "60", "-o", opts, "start")
				if err != nil {
					err = fmt.Errorf("%w; the end of %s:\n%s", err, logfile, tail(logfile, 10))
				}
				return err
			})
			return start, end, err
		},
	}
}

// pgBinDir finds PostgreSQL's server binaries as postgres.sh does.
func pgBinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(r), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("pg_ctl not found (scripts/services/postgres.sh installs PostgreSQL)")
}

// tail returns the last n lines of a file, or why it could not be read.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
