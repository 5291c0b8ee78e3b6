package faults_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// mysqlStore starts a MariaDB (or MySQL) server of its own: it runs
// scripts/services/mysql.sh in a temporary directory to install the
// server, create the data directory, the database and the user, then
// stops that server and runs it again, with the same command line, as a
// process the harness owns, so that it can stop and start it on the same
// port.
func mysqlStore(t *testing.T) store {
	need(t, "ANARCHON_TEST_MYSQL_DSN", "mysql")
	work, dsn := runService(t, "mysql", "ANARCHON_TEST_MYSQL_DSN")
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("mysql.sh printed no usable ANARCHON_TEST_MYSQL_DSN (%q): %v", dsn, err)
	}
	pidText, err := os.ReadFile(filepath.Join(work, "mysql.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err != nil {
		t.Fatalf("mysql.pid: %v", err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatalf("the server's command line: %v", err)
	}
	argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	// Stop the script's server; the harness's own takes over its data.
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(30 * time.Second); alive(pid); {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ready := func(addr string) error {
		c := *cfg
		c.Addr, c.Timeout = addr, time.Second
		db, err := sql.Open("mysql", c.FormatDSN())
		if err != nil {
			return err
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return db.PingContext(ctx)
	}
	srv := newServer(t, "mariadbd", argv[0], argv[1:], cfg.Addr, ready)
	return store{
		name: "mysql", addr: cfg.Addr,
		url: func(a string) string {
			return "mysql://" + cfg.User + ":" + cfg.Passwd + "@" + a + "/" + cfg.DBName +
				"?timeout=3s&readTimeout=5s&writeTimeout=5s"
		},
		restart: srv.restart,
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
