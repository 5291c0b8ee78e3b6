package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenStoreErrors(t *testing.T) {
	for _, tc := range []struct {
		url  string
		code StoreErrorCode
		want string
	}{
		{"no-scheme", StoreBadURL, "no scheme"},
		{"ftp://host/x", StoreUnknownScheme, `unknown scheme "ftp"`},
		{"sqlite:", StoreBadURL, "no file path"},
		{"sqlite:/nonexistent-dir/sub/x.db", StoreOpenFailed, "nonexistent-dir"},
		{"memory:/x", StoreBadURL, "takes no path"},
		{"redis://user:s3cr3t@127.0.0.1:1/0?bogus=1", StoreUnknownParam, "xxxxx"},
		{"rediss+sentinel://user:s3cr3t@s1,s2?master=m&bogus=1", StoreUnknownParam, "bogus"},
		{"redis+sentinel://user:s3cr3t@s1,s2,s3/", StoreBadURL, "needs master=NAME"},
		{"redis+sentinel://user:s3cr3t@s1?master=m&cluster=true", StoreBadURL, "does not go with Sentinel"},
		{"redis://user:s3cr3t@a,b,c", StoreBadURL, "needs cluster=true"},
		{"redis://user:s3cr3t@a,,c?cluster=true", StoreBadURL, "empty host"},
		{"redis://user:s3cr3t@a:99999,b?cluster=true", StoreBadURL, "bad port"},
		{"redis://user:s3cr3t@h?wait=x", StoreBadURL, `wait="x"`},
		{"redis://user:s3cr3t@h?wait_timeout=5", StoreBadURL, `wait_timeout="5"`},
		{"redis://user:s3cr3t@h?master=m", StoreBadURL, "are for redis+sentinel"},
		{"redis://user:s3cr3t@h?wait=1&wait_timeout=10s", StoreBadURL, "read_timeout"},
		{"redis://user:s3cr3t@h?wait_timeout=1s", StoreBadURL, "without wait=N"},
		{"redis+sentinel://user:s3cr3t@s1?master=m&sentinel_password=s3cr3t&x=%zz", StoreBadURL, "bad query"},
		{"postgres://user:s3cr3t@host:5432/db%zz", StoreBadURL, "does not parse"},
		{"postgres://user:s3cr3t@x@127.0.0.1:1/db", StoreBadURL, `contains "@": write it as %40`},
		{"redis://user:s3cr3t@x@127.0.0.1:1/0", StoreBadURL, `contains "@": write it as %40`},
		{"nats://user:s3cr3t@127.0.0.1:1", StoreOpenFailed, "127.0.0.1:1"},
		{"sqlite:/tmp/t.db?prefx=y_", StoreUnknownParam, `unknown query parameter "prefx" (sqlite: takes prefix)`},
		{"sqlite:/tmp/t.db?prefix=y_&journal=wal&Prefix=z", StoreUnknownParam, `"Prefix", "journal"`},
		{"memory:?prefix=x", StoreUnknownParam, `"prefix" (memory: takes none)`},
		{"nats://user:s3cr3t@127.0.0.1:1?bucket=b&password=s3cr3t", StoreUnknownParam, `"bucket", "password"`},
	} {
		t.Run(tc.url, func(t *testing.T) {
			b, err := openStore(tc.url)
			if err == nil {
				b.Close(context.Background())
				t.Fatal("no error")
			}
			var se *StoreURLError
			if !errors.As(err, &se) {
				t.Fatalf("%T %v is not a *StoreURLError", err, err)
			}
			if se.Code != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: code %s, want %s and %q", err, se.Code, tc.code, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("password in %q", err)
			}
		})
	}
}

func TestOpenStorePostgresWithoutBackend(t *testing.T) {
	if _, ok := openers["postgres"]; ok {
		t.Skip("this build has a PostgreSQL backend")
	}
	_, err := openStore("postgres://u:s3cr3t@localhost/db")
	var se *StoreURLError
	if !errors.As(err, &se) || se.Code != StoreUnavailable || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("err = %v", err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"redis://u:pw@h:1/0":         "redis://u:xxxxx@h:1/0",
		"postgres://u:p%zz@h/db":     "postgres://u:xxxxx@h/db",
		"nats://h:4222":              "nats://h:4222",
		"sqlite:./anarchon.db":       "sqlite:./anarchon.db",
		"postgres://u:a@b@h:5432/db": "postgres://u:xxxxx@h:5432/db",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// The HA forms of a Redis URL open without a server (the clients dial on
// first use), and the summary shows them redacted.
func TestOpenStoreRedisForms(t *testing.T) {
	for _, u := range []string{
		"redis+sentinel://app:s3cr3t@127.0.0.1:1,127.0.0.1:2,127.0.0.1:3/0?master=mymaster&wait=1&wait_timeout=500ms&sentinel_password=s3cr3t",
		"rediss+sentinel://127.0.0.1:1?master=m",
		"redis://:s3cr3t@127.0.0.1:1,127.0.0.1:2,127.0.0.1:3?cluster=true&wait=1&prefix=app",
		"redis://app:s3cr3t@127.0.0.1:1/0?wait=1&wait_timeout=1s",
	} {
		b, err := openStore(u)
		if err != nil {
			t.Errorf("%s: %v", redact(u), err)
			continue
		}
		if b.Name() != "redis" {
			t.Errorf("%s: name %q", redact(u), b.Name())
		}
		_ = b.Close(context.Background())
		if strings.Contains(redact(u), "s3cr3t") {
			t.Errorf("redact(%q) = %q", u, redact(u))
		}
	}
}

func TestOpenStoreSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	for _, u := range []string{"sqlite:" + path + "?prefix=t1_", "sqlite://" + path} {
		b, err := openStore(u)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if err := b.Init(context.Background()); err != nil {
			t.Fatalf("%s: init: %v", u, err)
		}
		if b.Name() != "sqlite" {
			t.Errorf("name %q", b.Name())
		}
		b.Close(context.Background())
	}
	b, err := openStore("memory:")
	if err != nil || b.Name() != "memory" {
		t.Fatalf("memory: %v", err)
	}
}

func TestHTTPAddr(t *testing.T) {
	for in, want := range map[string]string{
		"9090":           "127.0.0.1:9090",
		":9090":          ":9090",
		"0.0.0.0:80":     "0.0.0.0:80",
		"127.0.0.1:0":    "127.0.0.1:0",
		"[::1]:9090":     "[::1]:9090",
		"localhost:9090": "localhost:9090",
	} {
		if got, err := httpAddr(in); err != nil || got != want {
			t.Errorf("httpAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "host", "http://x:1", "99999", "-1", ":65536", "h:-1", ":", "127.0.0.1:", "[::1]:"} {
		if _, err := httpAddr(bad); err == nil {
			t.Errorf("httpAddr(%q): no error", bad)
		}
	}
	// Each bad value is told what is wrong with it.
	for bad, want := range map[string]string{
		"foo:bar": `the port "bar" is not a number`,
		":http":   `the port "http" is not a number`,
		":65536":  "a port is 0 to 65535",
		"host":    `--http "host": want PORT, :PORT or HOST:PORT`,
		// The value is quoted: a blank one is seen for what it is.
		" ": `--http " ": want PORT, :PORT or HOST:PORT`,
		// An empty port (an unset variable after the colon) is refused
		// as --http '' is, not taken as net.Listen's any free port.
		"127.0.0.1:": "the port is empty",
	} {
		if _, err := httpAddr(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("httpAddr(%q) = %v; want an error saying %q", bad, err, want)
		}
	}
}

// A --store URL that is malformed, names no store or has a parameter the
// store does not take is a bad flag value: exit 2, as an empty --store
// is. A well-formed URL whose store cannot be opened or reached is a
// failure of the run: exit 1.
func TestStoreURLExitStatus(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: a\n@daily echo hi\n")
	for _, tc := range []struct {
		url  string
		exit int
		code StoreErrorCode
	}{
		{"no-scheme", 2, StoreBadURL},
		{"postgres://user:s3cr3t@host:5432/db%zz", 2, StoreBadURL},
		{"postgres://user:s3cr3t@host:5432/db?sslmode=bogus", 2, StoreBadURL},
		{"redis://user:s3cr3t@h:notaport/0", 2, StoreBadURL},
		{"ftp://host/x", 2, StoreUnknownScheme},
		{"sqlite:" + filepath.Join(dir, "s.db") + "?prefx=y_", 2, StoreUnknownParam},
		{"sqlite:" + filepath.Join(dir, "no", "such", "dir", "s.db"), 1, StoreOpenFailed},
		{"redis://user:s3cr3t@127.0.0.1:1/0", 1, StoreOpenFailed},
	} {
		code, _, errOut := cli(t, "run", "--store", tc.url, "--crontab", ct, "--start-timeout", "0")
		if code != tc.exit || !strings.Contains(errOut, "("+string(tc.code)+")") || strings.Contains(errOut, "s3cr3t") {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and code %s", tc.url, code, errOut, tc.exit, tc.code)
		}
	}
	// A server's address given bare says which URL to write.
	for _, addr := range []string{"127.0.0.1:6379", "localhost:6379", "db.internal:5432"} {
		code, _, errOut := cli(t, "run", "--store", addr, "--crontab", ct, "--start-timeout", "0")
		if want := "a host and port, not a store URL: give its scheme, e.g. redis://" + addr; code != 2 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "(bad_url)") {
			t.Errorf("--store %s: exit %d, stderr %q; want 2, bad_url and %q", addr, code, errOut, want)
		}
	}
	// The read-only commands and a URL from ANARCHON_STORE alike.
	t.Setenv("ANARCHON_STORE", "memory:/x")
	if code, _, errOut := cli(t, "history", "a"); code != 2 || !strings.Contains(errOut, "(bad_url)") {
		t.Errorf("ANARCHON_STORE=memory:/x history: exit %d, stderr %q", code, errOut)
	}
	// memory: is a process's own store: the commands that act through the
	// replicas' shared store refuse it rather than act on an empty one.
	t.Setenv("ANARCHON_STORE", "memory:")
	for _, args := range [][]string{{"history", "a"}, {"status"}, {"pause", "a", "--crontab", ct}, {"resume", "a", "--crontab", ct}, {"trigger", "a", "--crontab", ct}} {
		code, _, errOut := cli(t, args...)
		if want := " the store the replicas share: give its URL (bad_flag)"; code != 2 || !strings.Contains(errOut, args[0]+" reads"+want) && !strings.Contains(errOut, args[0]+" acts through"+want) {
			t.Errorf("%v on memory: exit %d, stderr %q; want 2 and %q", args, code, errOut, want)
		}
	}
}

// A store URL error shows the URL once, redacted and quoted: the
// backends' own errors repeat it, and the daemon leaves their copy out.
func TestStoreURLShownOnce(t *testing.T) {
	for _, tc := range []struct{ url, scheme, want string }{
		{"redis://user:s3cr3t@h:notaport/0", "redis", `bad port in host "h:notaport" (bad_url)`},
		{"redis://user:s3cr3t@h/0?bogus=1", "redis", "redis: unexpected option: bogus (unknown_parameter)"},
		{"rediss+sentinel://user:s3cr3t@s1,s2/0", "rediss+sentinel", "redis+sentinel needs master=NAME"},
		{"redis://user:s3cr3t@h?wait=1&wait_timeout=10s", "redis", "read_timeout"},
		{"redis+sentinel://user:s3cr3t@s1?master=m&sentinel_password=s3cr3t&x=%zz", "redis+sentinel", "bad query"},
		{"postgres://user:s3cr3t@h/db?sslmode=bogus", "postgres", "sslmode is invalid"},
		{"nats://user:s3cr3t@127.0.0.1:1", "nats", "connect: nats: no servers available for connection (open_failed)"},
	} {
		b, err := openStore(tc.url)
		if err == nil {
			b.Close(context.Background())
			t.Errorf("%s: no error", tc.url)
			continue
		}
		msg := err.Error()
		if n := strings.Count(msg, tc.scheme+"://"); n != 1 || !strings.Contains(msg, tc.want) || strings.Contains(msg, "s3cr3t") {
			t.Errorf("%s: the URL %d times in %q; want it once, and %q", tc.url, n, msg, tc.want)
		}
		// Quoted, as flag values are in errors: the URL's own colons
		// and spaces do not run into the reason.
		if want := fmt.Sprintf("store URL %q: ", redact(tc.url)); !strings.HasPrefix(msg, want) {
			t.Errorf("%s: error %q, want it to start %q", tc.url, msg, want)
		}
	}
}

// A parameter the store does not take is a usage error (unknown_parameter,
// exit 2) on every command, whether or not the store is there: the URL is
// checked as written before an SQLite file's existence (the read-only
// commands need it) or a server is looked for. No SQLite file is created.
func TestURLCheckedBeforeStore(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "jobs.cron", "# name: j\n@daily echo hi\n")
	missing := filepath.Join(dir, "nonexist.db")
	for _, url := range []string{
		"sqlite:" + missing + "?bogus=1",
		"sqlite:" + filepath.Join(dir, "no", "dir", "x.db") + "?bogus=1",
		"nats://127.0.0.1:1?bogus=1",
		"redis://127.0.0.1:1/0?bogus=1",
		"memory:?bogus=1",
	} {
		for _, args := range [][]string{
			{"status"},
			{"status", "--crontab", ct},
			{"history", "j"},
			{"history", "j", "--crontab", ct},
			{"run", "--crontab", ct, "--start-timeout", "0"},
			{"run-now", "j", "--crontab", ct},
			{"pause", "j", "--crontab", ct},
			{"resume", "j", "--crontab", ct},
			{"trigger", "j", "--crontab", ct, "--timeout", "1s"},
			{"backfill", "j", "--crontab", ct, "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-02T00:00:00Z"},
		} {
			args := append(args, "--store", url)
			code, _, errOut := cli(t, args...)
			if code != 2 || !strings.Contains(errOut, `unknown query parameter "bogus"`) && !strings.Contains(errOut, "unexpected option: bogus") ||
				!strings.HasSuffix(strings.TrimSpace(errOut), "(unknown_parameter)") {
				t.Errorf("%q: exit %d, want 2 and unknown_parameter:\n%s", args, code, errOut)
			}
		}
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: %v, want it not created", missing, err)
	}
}

// A query parameter given twice is refused (bad_url, exit 2) in every
// store URL form: the clients would take the first (or the last) and
// drop the other without a word.
func TestRepeatedParameterRefused(t *testing.T) {
	dir := t.TempDir()
	for _, url := range []string{
		"sqlite:" + filepath.Join(dir, "x.db") + "?prefix=a&prefix=b",
		"sqlite:" + filepath.Join(dir, "x.db") + "?pre%66ix=a&prefix=b",
		"sqlite:" + filepath.Join(dir, "x.db") + "?prefix=a&bogus=1&prefix=b",
		"postgres://user:s3cr3t@127.0.0.1:1/db?sslmode=disable&sslmode=require",
		"mysql://user:s3cr3t@127.0.0.1:1/db?tls=false&tls=true",
		"redis://user:s3cr3t@127.0.0.1:1/0?prefix=a&prefix=b",
		"redis://user:s3cr3t@a:1,b:2?cluster=true&wait=1&wait=2",
		"redis+sentinel://user:s3cr3t@s1,s2/0?master=m&master=n",
		"nats://user:s3cr3t@127.0.0.1:1?replicas=1&replicas=3",
		"memory:?prefix=a&prefix=b",
	} {
		b, err := openStore(url)
		if err == nil {
			b.Close(context.Background())
			t.Errorf("%s: no error", url)
			continue
		}
		var se *StoreURLError
		if !errors.As(err, &se) || se.Code != StoreBadURL || !strings.Contains(err.Error(), "given 2 times") || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v, want bad_url naming the repeated parameter", url, err)
		}
		if code, _, errOut := cli(t, "status", "--store", url); code != 2 || !strings.Contains(errOut, "(bad_url)") {
			t.Errorf("status --store %s: exit %d, want 2 and bad_url:\n%s", url, code, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("x.db: %v, want it not created", err)
	}
}

// An "sqlite:" URL's path is a URL path: %XX escapes are decoded (the
// README's store table says so; the file is made under the decoded name)
// and a "?" starts the parameters, while a "%" without two hex digits
// after it makes the whole URL bad_url, as any URL that does not parse.
func TestSQLitePathDecoding(t *testing.T) {
	for raw, want := range map[string]string{
		"sqlite:/var/lib/p%41.db":      "/var/lib/pA.db",
		"sqlite:./a%3Fb.db?prefix=x_":  "./a?b.db",
		"sqlite:./100%25.db":           "./100%.db",
		"sqlite:///abs/x%20y.db":       "/abs/x y.db",
		"sqlite:./a#b.db":              "./a#b.db",
		"sqlite:./plain.db?prefix=t1_": "./plain.db",
	} {
		if got, err := sqlitePath(raw); got != want || err != nil {
			t.Errorf("sqlitePath(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	dir := t.TempDir()
	b, err := openStore("sqlite:" + dir + "/p%41.db")
	if err != nil {
		t.Fatal(err)
	}
	b.Close(context.Background())
	if _, err := os.Stat(filepath.Join(dir, "pA.db")); err != nil {
		t.Errorf("sqlite:DIR/p%%41.db did not make DIR/pA.db: %v", err)
	}
	_, err = openStore("sqlite:" + dir + "/p100%.db")
	var se *StoreURLError
	if !errors.As(err, &se) || se.Code != StoreBadURL {
		t.Errorf("sqlite:DIR/p100%%.db: %v, want bad_url", err)
	}
	// A "%" inside the path without two hex digits after it: bad_url
	// too, for the short form as for sqlite:///, and no file is made.
	for _, raw := range []string{"sqlite:" + dir + "/x%zz.db", "sqlite:./y%2.db"} {
		_, err = openStore(raw)
		if !errors.As(err, &se) || se.Code != StoreBadURL {
			t.Errorf("%s: %v, want bad_url", raw, err)
		}
		if _, err := openStoreMode(raw, true); !errors.As(err, &se) || se.Code != StoreBadURL {
			t.Errorf("%s, read-only: %v, want bad_url", raw, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x%zz.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("x%%zz.db: %v, want it not created", err)
	}
}
