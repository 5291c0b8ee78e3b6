package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// --store-file gives the store URL without the command line; it excludes
// --store and ANARCHON_STORE.
func TestStoreFile(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: hello\n@daily echo hi\n")
	store := "sqlite:" + filepath.Join(dir, "a.db")
	sf := writeFile(t, dir, "store", store+"\n")
	if code, out, errOut := cli(t, "run-now", "hello", "--crontab", ct, "--store-file", sf, "--json"); code != 0 {
		t.Fatalf("run-now with --store-file: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.db")); err != nil {
		t.Fatalf("the store of --store-file was not used: %v", err)
	}
	if code, _, errOut := cli(t, "history", "hello", "--store", store, "--store-file", sf); code != 2 || !strings.Contains(errOut, "both given") {
		t.Errorf("--store and --store-file: exit %d, %s; want a usage error", code, errOut)
	}
}

// An empty --store or ANARCHON_STORE (an unset variable in a script) is a
// usage error, not the default SQLite file, which would give each replica
// a store of its own; nothing is created.
func TestEmptyStore(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ct := writeFile(t, dir, "crontab", "# name: hello\n@daily echo hi\n")
	if code, _, errOut := cli(t, "run-now", "hello", "--crontab", ct, "--store", " "); code != 2 || !strings.Contains(errOut, "--store (or ANARCHON_STORE) is empty") {
		t.Errorf("--store ' ': exit %d, %s; want a usage error", code, errOut)
	}
	t.Setenv("ANARCHON_STORE", "")
	if code, _, errOut := cli(t, "run-now", "hello", "--crontab", ct); code != 2 || !strings.Contains(errOut, "is empty") {
		t.Errorf("ANARCHON_STORE='': exit %d, %s; want a usage error", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "anarchon.db")); err == nil {
		t.Error("an empty --store created the default database")
	}
}

// validate refuses a bad --six-fields or --format as every command does:
// a usage error, exit 2.
func TestValidateBadFlagValue(t *testing.T) {
	ct := writeFile(t, t.TempDir(), "crontab", "# name: x\n* * * * * echo x\n")
	for _, args := range [][]string{{"--six-fields", "minutes"}, {"--format", "cron"}} {
		if code, _, errOut := cli(t, append([]string{"validate", "--crontab", ct}, args...)...); code != 2 || !strings.Contains(errOut, args[0]) {
			t.Errorf("validate %v: exit %d, %q; want 2 naming the flag", args, code, errOut)
		}
	}
}

// run lists every mistake of its job files at once, as validate does: a
// line that does not parse and one that parses but is refused.
func TestRunListsEveryMistake(t *testing.T) {
	ct := writeFile(t, t.TempDir(), "crontab", "# name: a\n* * echo short\n# name: b\n*/0 * * * * echo zero\n")
	code, _, errOut := cli(t, "run", "--crontab", ct, "--store", "memory:")
	if code != 1 || !strings.Contains(errOut, "crontab:2:") || !strings.Contains(errOut, "crontab:4:") {
		t.Errorf("run: exit %d, %q; want both line 2 and line 4", code, errOut)
	}
}

// Jobs do not get the store's credential variables unless --pass-secrets;
// a job's own env may still set one.
func TestJobEnvironSecrets(t *testing.T) {
	env := []string{"PATH=/bin", "PGPASSWORD=s3cr3t", "ANARCHON_STORE=postgres://u:s3cr3t@h/db", "REDISCLI_AUTH=x", "HOME=/root"}
	got := strings.Join(jobEnviron(env, false), " ")
	if strings.Contains(got, "s3cr3t") || strings.Contains(got, "REDISCLI_AUTH") || !strings.Contains(got, "PATH=/bin") || !strings.Contains(got, "HOME=/root") {
		t.Errorf("jobEnviron = %q", got)
	}
	if got := jobEnviron(env, true); len(got) != len(env) {
		t.Errorf("with --pass-secrets: %q", got)
	}

	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: env\n@daily echo \"pg=[$PGPASSWORD] store=[$ANARCHON_STORE]\"\n")
	store := "sqlite:" + filepath.Join(dir, "a.db")
	t.Setenv("PGPASSWORD", "s3cr3t-pg")
	t.Setenv("ANARCHON_STORE", store)
	code, out, errOut := cli(t, "run-now", "env", "--crontab", ct, "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var rec recordJSON
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rec.Output, "pg=[] store=[]") {
		t.Errorf("the job saw the store's credentials: %q", rec.Output)
	}
	code, out, _ = cli(t, "run-now", "env", "--crontab", ct, "--json", "--pass-secrets")
	if err := json.Unmarshal([]byte(out), &rec); code != 0 || err != nil || !strings.Contains(rec.Output, "pg=[s3cr3t-pg]") {
		t.Errorf("--pass-secrets: exit %d, %q", code, rec.Output)
	}
}

// --http beyond loopback without a token starts, with /healthz and
// /readyz open and /status, /metrics and the dashboard answering 403 with
// how to set a token; with one, /status and /metrics want it and /healthz
// does not. A token that is given but too short is an error.
func TestHTTPGuard(t *testing.T) {
	t.Setenv("ANARCHON_UI_TOKEN", "")
	t.Setenv("ANARCHON_UI_USER", "")
	t.Setenv("ANARCHON_UI_PASSWORD", "")
	for addr, open := range map[string]bool{"127.0.0.1:0": true, "localhost:9": true, "[::1]:9": true, ":9090": false, "0.0.0.0:9": false, "10.1.2.3:9": false} {
		hc, err := httpConfigFrom(&runFlags{}, addr)
		if err != nil || hc.locked == open {
			t.Errorf("httpConfigFrom(%s) without a token: %+v, %v; want locked=%v", addr, hc, err, !open)
		}
	}
	tf := writeFile(t, t.TempDir(), "token", "0123456789abcdef-token\n")
	hc, err := httpConfigFrom(&runFlags{httpTokenFile: tf}, ":9090")
	if err != nil || hc.token != "0123456789abcdef-token" || hc.locked {
		t.Fatalf("with a token file: %+v, %v", hc, err)
	}
	t.Setenv("ANARCHON_UI_TOKEN", "0123456789abcdef-ui")
	if hc, err := httpConfigFrom(&runFlags{}, ":9090"); err != nil || hc.token != "0123456789abcdef-ui" || hc.locked {
		t.Errorf("with ANARCHON_UI_TOKEN: %+v, %v", hc, err)
	}
	t.Setenv("ANARCHON_UI_TOKEN", "short")
	if _, err := httpConfigFrom(&runFlags{}, ":9090"); err == nil {
		t.Error("a 5-character ANARCHON_UI_TOKEN was accepted")
	}
	t.Setenv("ANARCHON_UI_TOKEN", "")
	short := writeFile(t, t.TempDir(), "token", "short\n")
	if _, err := httpConfigFrom(&runFlags{httpTokenFile: short}, ":9090"); err == nil {
		t.Error("a 5-character token was accepted")
	}

	s := &server{cfg: hc}
	for hdr, want := range map[string]bool{"": false, "Bearer wrong": false, "Bearer 0123456789abcdef-token": true, "0123456789abcdef-token": false} {
		r := httptest.NewRequest(http.MethodGet, "/status", nil)
		if hdr != "" {
			r.Header.Set("Authorization", hdr)
		}
		w := httptest.NewRecorder()
		if got := s.authorized(w, r); got != want || (!got && w.Code != http.StatusUnauthorized) {
			t.Errorf("Authorization %q: %v (%d), want %v", hdr, got, w.Code, want)
		}
	}
}

// A daemon bound beyond loopback without a token serves the probes and
// refuses the rest with 403 and a body saying how to set a token.
func TestHTTPLockedEndpoints(t *testing.T) {
	t.Setenv("ANARCHON_UI_TOKEN", "")
	t.Setenv("ANARCHON_UI_USER", "")
	t.Setenv("ANARCHON_UI_PASSWORD", "")
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: hello\n@daily echo hi\n")
	g := &globalFlags{store: "sqlite:" + filepath.Join(dir, "a.db"), crontabs: []string{ct}, format: formatAuto}
	d, err := openForRead(g, os.Stderr, true, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	hc, err := httpConfigFrom(&runFlags{}, "0.0.0.0:0")
	if err != nil || !hc.locked {
		t.Fatalf("httpConfigFrom: %+v, %v", hc, err)
	}
	srv, err := startHTTP(d, "0.0.0.0:0", hc)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close(context.Background())
	_, port, _ := net.SplitHostPort(srv.ln.Addr().String())
	base := "http://127.0.0.1:" + port
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/status": 403, "/metrics": 403, "/ui/": 403, "/ui/api/status": 403, "/": 403} {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer 0123456789abcdef-guess")
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d: %s", path, resp.StatusCode, want, body)
		}
		if want == 403 && (!strings.Contains(string(body), "--http-token-file") || !strings.Contains(string(body), "ANARCHON_UI_TOKEN")) {
			t.Errorf("GET %s: the 403 does not say how to set a token: %s", path, body)
		}
	}
}

// One token opens every guarded endpoint: the --http-token-file token
// wins over ANARCHON_UI_TOKEN on the dashboard as on /status and /metrics,
// and ANARCHON_UI_TOKEN is trimmed alike for all of them.
func TestHTTPOneToken(t *testing.T) {
	t.Setenv("ANARCHON_UI_USER", "")
	t.Setenv("ANARCHON_UI_PASSWORD", "")
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: hello\n@daily echo hi\n")
	g := &globalFlags{store: "sqlite:" + filepath.Join(dir, "a.db"), crontabs: []string{ct}, format: formatAuto}
	d, err := openForRead(g, os.Stderr, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	tf := writeFile(t, dir, "token", "0123456789abcdef-file\n")
	for _, c := range []struct {
		name, envToken string
		rf             runFlags
		good, bad      string
	}{
		{"file and env", "0123456789abcdef-env", runFlags{httpTokenFile: tf}, "0123456789abcdef-file", "0123456789abcdef-env"},
		{"env with a newline", "0123456789abcdef-env\n", runFlags{}, "0123456789abcdef-env", "0123456789abcdef-file"},
	} {
		t.Setenv("ANARCHON_UI_TOKEN", c.envToken)
		hc, err := httpConfigFrom(&c.rf, "0.0.0.0:0")
		if err != nil || hc.locked {
			t.Fatalf("%s: httpConfigFrom: %+v, %v", c.name, hc, err)
		}
		srv, err := startHTTP(d, "0.0.0.0:0", hc)
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(srv.ln.Addr().String())
		for _, path := range []string{"/status", "/metrics", "/ui/"} {
			for tok, want := range map[string]int{c.good: 200, c.bad: 401} {
				req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+port+path, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("%s: GET %s with %q: %d, want %d", c.name, path, tok, resp.StatusCode, want)
				}
			}
		}
		srv.close(context.Background())
	}
}

// The dashboard keeps the store's password off its pages, though it is
// given the store URL redacted: a run whose error repeats the password
// shows it masked.
func TestDashboardHidesStorePassword(t *testing.T) {
	const pw = "Dash0rdLeak"
	raw := "postgres://app:" + pw + "@db.example/anarchon"
	s := anarchon.New(membackend.New(nil), &anarchon.Options{InstanceID: "t", Logger: slog.New(slog.DiscardHandler)})
	fail := func(context.Context, *anarchon.Run) error { return errors.New("connect " + raw + ": refused") }
	if err := s.Cron("leaky", "0 0 1 1 *", fail, nil); err != nil {
		t.Fatal(err)
	}
	if rec, err := s.RunNow(t.Context(), "leaky"); err != nil || rec.Status != anarchon.StatusError {
		t.Fatalf("run: %+v, %v; want a failed run", rec, err)
	}
	d := &daemon{sched: s, store: redact(raw), rawStore: raw}
	mux := http.NewServeMux()
	mountUI(mux, d, "127.0.0.1:0", httpConfig{token: "0123456789abcdef-token"})
	for _, path := range []string{"/ui/", "/ui/job/leaky"} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer 0123456789abcdef-token")
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		if w.Code != 200 || strings.Contains(w.Body.String(), pw) {
			t.Errorf("GET %s: %d, shows the password: %v", path, w.Code, strings.Contains(w.Body.String(), pw))
		}
		if path == "/ui/job/leaky" && !strings.Contains(w.Body.String(), "refused") {
			t.Errorf("GET %s does not show the run's error", path)
		}
	}
}

// A --http port already in use fails the start (listen_failed) before
// the store is opened: no @reboot job ran and no SQLite file was made.
func TestHTTPPortInUseFailsEarly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "boot")
	ct := writeFile(t, dir, "crontab", "# name: boot\n@reboot echo booted >> "+out+"\n")
	store := "sqlite:" + filepath.Join(dir, "a.db")
	code, _, errOut := cli(t, "run", "--crontab", ct, "--store", store, "--http", ln.Addr().String())
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("--http %q", ln.Addr().String())) || !strings.Contains(errOut, "(listen_failed)") {
		t.Fatalf("exit %d with the port in use: %s", code, errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the @reboot job ran: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.db")); !os.IsNotExist(err) {
		t.Errorf("the store's file was made: %v", err)
	}
}

// /status of a daemon whose last run printed a secret does not show it
// unless --status-output.
func TestStatusWithoutOutput(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: leaky\n@daily echo key=TOPSECRET\n")
	store := "sqlite:" + filepath.Join(dir, "a.db")
	if code, out, errOut := cli(t, "run-now", "leaky", "--crontab", ct, "--store", store); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	g := &globalFlags{store: store, crontabs: []string{ct}, format: formatAuto}
	d, err := openForRead(g, os.Stderr, true, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, withOutput := range []bool{false, true} {
		s := &server{d: d, cfg: httpConfig{statusOutput: withOutput}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r := httptest.NewRequest(http.MethodGet, "/status", nil).WithContext(ctx)
		w := httptest.NewRecorder()
		s.status(w, r)
		cancel()
		if got := strings.Contains(w.Body.String(), "TOPSECRET"); got != withOutput {
			t.Errorf("--status-output=%v: output in /status = %v:\n%s", withOutput, got, w.Body.String())
		}
	}
}

// Past --max-log-bytes a run's lines are counted, not logged, with one
// warning; the history keeps the tail.
func TestLogBudget(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: loud\n@daily for i in $(seq 1 2000); do echo line-$i; done\n")
	store := "sqlite:" + filepath.Join(dir, "a.db")
	code, out, errOut := cli(t, "run-now", "loud", "--crontab", ct, "--store", store, "--max-log-bytes", "1000", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	logged := strings.Count(errOut, "line-")
	if logged == 0 || logged > 1000/len("line-1\n") {
		t.Errorf("%d lines logged with --max-log-bytes 1000", logged)
	}
	if !strings.Contains(errOut, "not logged") {
		t.Errorf("no warning about the lines not logged:\n%s", errOut)
	}
	if !strings.Contains(out, "line-2000") {
		t.Errorf("the history lost the tail: %s", out)
	}
}

// The HTTP server bounds how long a client may take to send its request
// and how long an idle keep-alive connection stays open: without these a
// slow or idle client holds a connection and its goroutine for good.
func TestHTTPServerTimeouts(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: hello\n@daily echo hi\n")
	g := &globalFlags{store: "sqlite:" + filepath.Join(dir, "a.db"), crontabs: []string{ct}, format: formatAuto}
	d, err := openForRead(g, os.Stderr, true, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	hc, err := httpConfigFrom(&runFlags{}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startHTTP(d, "127.0.0.1:0", hc)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close(context.Background())
	s := srv.srv
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Errorf("http.Server limits: ReadHeaderTimeout %v, ReadTimeout %v, WriteTimeout %v, IdleTimeout %v, MaxHeaderBytes %d; want all set",
			s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
}
