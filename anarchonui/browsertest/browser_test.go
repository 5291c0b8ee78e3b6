// Package browsertest drives the dashboard of real anarchon daemons in a
// headless Chromium (chromedp). It is its own module so that chromedp is a
// dependency of no other module.
package browsertest

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/anarchon/anarchon/sqlitefile"
)

// chromePath returns $ANARCHON_TEST_CHROME, skipping the test without it
// (failing under CI=true).
func chromePath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("ANARCHON_TEST_CHROME")
	if p == "" {
		msg := "ANARCHON_TEST_CHROME is not set: run `bash scripts/services/chromium.sh DIR` and export the line it prints"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// screenshots is the folder the tests write their screenshots to:
// $ANARCHON_TEST_SCREENSHOTS, or a new temporary folder (named in the log).
func screenshots(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ANARCHON_TEST_SCREENSHOTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "anarchon-screenshots-"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// buildDaemon builds cmd/anarchon into dir.
func buildDaemon(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "anarchon")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/anarchon")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
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

// replica is one daemon process.
type replica struct {
	id     string
	cmd    *exec.Cmd
	url    string // http://127.0.0.1:PORT
	ready  chan struct{}
	exited chan struct{} // closed when the process was reaped
	log    string
}

func startReplica(t *testing.T, bin, dir, id, listen string, port int, env ...string) *replica {
	t.Helper()
	r := &replica{id: id, url: fmt.Sprintf("http://127.0.0.1:%d", port), ready: make(chan struct{}), exited: make(chan struct{}), log: filepath.Join(dir, id+".log")}
	logf, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(bin, "run", "--instance", id, "--config", filepath.Join(dir, "jobs.yaml"),
		"--store", "sqlite:"+filepath.Join(dir, "anarchon.db"), "--http", fmt.Sprintf("%s:%d", listen, port),
		"--poll", "200ms", "--stop-timeout", "5s", "--log-level", "warn", "--registry-ttl", registryTTL.String())
	r.cmd.Dir = dir
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stderr = logf
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		once := false
		for sc.Scan() {
			fmt.Fprintln(logf, "stdout:", sc.Text())
			if !once && strings.HasPrefix(sc.Text(), "jobs:") {
				close(r.ready)
				once = true
			}
		}
		_ = r.cmd.Wait()
		logf.Close()
		close(r.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = r.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-r.exited:
			case <-time.After(10 * time.Second):
				_ = r.cmd.Process.Kill()
				<-r.exited
			}
		}
		if t.Failed() {
			data, _ := os.ReadFile(r.log)
			if len(data) > 4000 {
				data = data[len(data)-4000:]
			}
			t.Logf("log of %s (tail):\n%s", id, data)
		}
	})
	return r
}

// registryTTL is the replicas' --registry-ttl: a SIGKILLed replica is
// listed dead at most this long after its last renewal.
const registryTTL = 4 * time.Second

const jobsYAML = `jobs:
  - name: every2s
    schedule: "*/2 * * * * *"
    shell: echo "$ANARCHON_SLOT $ANARCHON_ATTEMPT $ANARCHON_INSTANCE" >> DIR/every2s.out
  - name: manual
    schedule: "0 0 1 1 *"
    shell: echo "$ANARCHON_INSTANCE $ANARCHON_MANUAL" >> DIR/manual.out
  # The first attempt 1 of takeover writes its holder and hangs, so that
  # the test can SIGKILL that replica; every later run ends at once.
  - name: takeover
    schedule: "*/5 * * * * *"
    lease: 3s
    shell: if [ "$ANARCHON_ATTEMPT" = 1 ] && mkdir DIR/first 2>/dev/null; then echo "$ANARCHON_INSTANCE $ANARCHON_SLOT" > DIR/holder.tmp; mv DIR/holder.tmp DIR/holder; sleep 30; fi; echo ran
`

// backdatePause moves the time of job's pause, at, back by d in the
// SQLite store at path, which the replicas share, as if the pause had
// begun d earlier, and returns the time it now has.
func backdatePause(t *testing.T, path, job string, at time.Time, d time.Duration) time.Time {
	t.Helper()
	db, err := sql.Open(sqlitefile.DriverName, sqlitefile.DSN(path, 10000))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec("UPDATE anarchon_control SET set_at = set_at - ? WHERE job = ? AND set_at = ?", d.Milliseconds(), job, at.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("backdating the pause of %s at %v: %d rows, %v", job, at, n, err)
	}
	return at.Add(-d)
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSpace(string(data))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// waitFor polls cond every 100 ms until it holds or within passes: the
// daemons are other processes, which the test can only observe.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		<-time.After(100 * time.Millisecond)
	}
}

// page waits until the tab's location and text satisfy cond (a form's
// answer arrives by a navigation the test does not wait for), and returns
// the text.
func page(t *testing.T, bctx context.Context, what string, cond func(loc, body string) bool) string {
	t.Helper()
	var loc, body string
	waitFor(t, 30*time.Second, what, func() bool {
		ctx, cancel := context.WithTimeout(bctx, 5*time.Second)
		defer cancel()
		err := chromedp.Run(ctx, chromedp.Location(&loc), chromedp.Text("body", &body, chromedp.ByQuery))
		return err == nil && body != "" && cond(loc, body)
	})
	return body
}

// waitSwap waits until the page counted an htmx swap since countSwaps.
func waitSwap(t *testing.T, bctx context.Context, what string) {
	t.Helper()
	waitFor(t, 30*time.Second, what, func() bool {
		ctx, cancel := context.WithTimeout(bctx, 5*time.Second)
		defer cancel()
		var n int
		return chromedp.Run(ctx, chromedp.Evaluate(`window.swaps || 0`, &n)) == nil && n > 0
	})
}

// TestDashboard runs three daemons on one SQLite file and drives their
// dashboards in Chromium: every page renders, with and without JavaScript,
// run now runs the job once, a pause with a reason and a resume with
// catch-up show as such on another replica and the catch-up runs once,
// a forged or cross-origin form is refused, the replica listening on a
// non-loopback address asks for credentials, a SIGKILLed replica turns
// dead on the replicas page within its registry TTL, and the slot it held
// reads attempt 2 success above attempt 1 lease_lost.
func TestDashboard(t *testing.T) {
	chrome := chromePath(t)
	shots := screenshots(t)
	dir := t.TempDir()
	bin := buildDaemon(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "jobs.yaml"), []byte(strings.ReplaceAll(jobsYAML, "DIR", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	const token = "browser-test-token"
	reps := []*replica{
		startReplica(t, bin, dir, "replica-0", "127.0.0.1", freePort(t)),
		startReplica(t, bin, dir, "replica-1", "127.0.0.1", freePort(t)),
		// Listening on every interface: the dashboard asks for credentials.
		startReplica(t, bin, dir, "replica-2", "0.0.0.0", freePort(t), "ANARCHON_UI_TOKEN="+token),
	}
	for _, r := range reps {
		select {
		case <-r.ready:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s not ready within 60 s", r.id)
		}
	}

	actx, cancelA := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1400, 900))...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	// The first Run starts the browser, which lives as long as its
	// context: it must be one without a timeout.
	if err := chromedp.Run(bctx); err != nil {
		t.Fatalf("starting %s: %v", chrome, err)
	}
	run := func(within time.Duration, what string, acts ...chromedp.Action) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, within)
		defer cancel()
		if err := chromedp.Run(ctx, acts...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var buf []byte
			if err := chromedp.FullScreenshot(&buf, 100).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name+".png"), buf, 0o644)
		})
	}
	var body string
	text := func(sel string, s *string) chromedp.Action { return chromedp.Text(sel, s, chromedp.ByQuery) }
	// countSwaps counts the tables' htmx refreshes of the page loaded;
	// waitSwap waits for the next one.
	countSwaps := chromedp.Evaluate(`window.swaps = 0; document.body.addEventListener('htmx:afterSwap', () => window.swaps++); true`, nil)

	// Pages render on a loopback replica, without credentials.
	base := reps[0].url + "/ui/"
	run(30*time.Second, "jobs page",
		chromedp.Navigate(base),
		chromedp.WaitVisible(`tr[data-job="every2s"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-job="takeover"]`, chromedp.ByQuery),
		text("body", &body))
	for _, want := range []string{"*/2 * * * * *", "lease 3s", "Run now", "sqlite:"} {
		if !strings.Contains(body, want) {
			t.Errorf("jobs page lacks %q", want)
		}
	}
	if !strings.Contains(body, "Pause") || !strings.Contains(body, "Trigger") {
		t.Errorf("jobs page lacks pause or trigger, which the SQLite store has")
	}
	run(30*time.Second, "job page",
		chromedp.Navigate(base+"job/every2s"),
		// htmx refreshes the table until the first runs are in.
		chromedp.WaitVisible(`tbody.slot tr[data-status="success"]`, chromedp.ByQuery),
		shot("job"))
	run(30*time.Second, "leases page", chromedp.Navigate(base+"leases"), chromedp.WaitVisible(`#leases`, chromedp.ByQuery), shot("leases"))
	run(30*time.Second, "replicas page",
		chromedp.Navigate(base+"replicas"),
		chromedp.WaitVisible(`tr[data-instance="replica-0"][data-state="live"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-instance="replica-1"][data-state="live"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-instance="replica-2"][data-state="live"]`, chromedp.ByQuery),
		shot("replicas"))
	run(30*time.Second, "jobs page with results",
		chromedp.Navigate(base),
		chromedp.WaitVisible(`tr[data-job="every2s"] .st-success`, chromedp.ByQuery),
		shot("jobs"))
	// In the jobs table each next slot's time stays on one line, with its
	// paused tag when the job is paused: a time has a space
	// ("2026-03-01 10:10:00.000Z") where a narrow column broke it in two.
	// An inline element has a box per line it is laid out on.
	nextSlots := func(what string, widths ...int64) {
		t.Helper()
		const js = `(() => {
			const times = Array.from(document.querySelectorAll('#jobs tr.job td.next-slots span.next'));
			const broken = times.flatMap(s => {
				const job = s.closest('tr').dataset.job, r = s.getClientRects(), tag = s.nextElementSibling;
				if (r.length !== 1) return [job + ' ' + s.textContent + ' on ' + r.length + ' lines'];
				if (tag && tag.classList.contains('tag')) {
					const b = tag.getBoundingClientRect();
					if (b.top >= r[0].bottom || b.bottom <= r[0].top) return [job + ' ' + s.textContent + ': its tag on another line'];
				}
				return [];
			});
			return {n: times.length, broken: broken};
		})()`
		for _, width := range widths {
			var got struct {
				N      int
				Broken []string
			}
			run(30*time.Second, fmt.Sprintf("%s: next slots at %d px", what, width),
				emulation.SetDeviceMetricsOverride(width, 900, 1, false),
				chromedp.Evaluate(js, &got),
				emulation.ClearDeviceMetricsOverride())
			if got.N == 0 || len(got.Broken) > 0 {
				t.Errorf("%s, %d px wide: %d next slots, broken over lines: %s", what, width, got.N, strings.Join(got.Broken, "; "))
			}
		}
	}
	nextSlots("jobs page", 1400, 900)

	// Without JavaScript every page still shows its data.
	nojs, cancelNoJS := chromedp.NewContext(bctx)
	if err := chromedp.Run(nojs, emulation.SetScriptExecutionDisabled(true)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, sel string }{
		{"", `tr[data-job="every2s"] .st-success`},
		{"job/every2s", `tbody.slot tr[data-status="success"]`},
		{"leases", `#leases`},
		{"replicas", `tr[data-instance="replica-2"][data-state="live"]`},
	} {
		ctx, cancel := context.WithTimeout(nojs, 30*time.Second)
		var js bool
		err := chromedp.Run(ctx, chromedp.Navigate(base+c.path), chromedp.WaitVisible(c.sel, chromedp.ByQuery),
			chromedp.Evaluate(`typeof htmx !== 'undefined'`, &js))
		cancel()
		if err != nil {
			t.Errorf("/ui/%s without JavaScript: %v", c.path, err)
		} else if js {
			t.Errorf("/ui/%s: htmx ran, so scripts were not disabled", c.path)
		}
	}
	cancelNoJS()

	// Run now runs the job once, on the replica whose page was used.
	manualOut := filepath.Join(dir, "manual.out")
	run(30*time.Second, "run now",
		chromedp.Click(`tr[data-job="manual"] button.run-now`, chromedp.ByQuery),
		chromedp.WaitVisible(`#flash`, chromedp.ByQuery),
		text("#flash", &body))
	if !strings.Contains(body, "started a run of manual on replica-0") {
		t.Errorf("flash after run now: %q", body)
	}
	waitFor(t, 30*time.Second, "the run-now run", func() bool { return len(lines(t, manualOut)) > 0 })
	run(30*time.Second, "manual run in history",
		chromedp.Navigate(base+"job/manual"),
		chromedp.WaitVisible(`tbody.slot tr[data-status="success"]`, chromedp.ByQuery),
		shot("job-manual"))

	// Pause on one replica's page, with a reason typed beside the button,
	// is seen on another replica's page (the state is in the store), and
	// Resume from that page with "catch up" ticked undoes it and requests
	// the catch-up run under the pause's key. What is typed or ticked
	// survives the tables' refresh (htmx swaps #main every 2 s).
	const reason = "disk full on db-2, see OPS-118"
	var typed string
	var checked bool
	run(30*time.Second, "type a pause reason",
		chromedp.Navigate(base),
		chromedp.WaitVisible(`tr[data-job="manual"] input[name=reason]`, chromedp.ByQuery),
		countSwaps,
		chromedp.SendKeys(`tr[data-job="manual"] input[name=reason]`, reason, chromedp.ByQuery))
	waitSwap(t, bctx, "a refresh after typing the reason")
	run(30*time.Second, "pause with the reason",
		chromedp.Value(`tr[data-job="manual"] input[name=reason]`, &typed, chromedp.ByQuery),
		shot("jobs-pause-reason"),
		chromedp.Click(`tr[data-job="manual"] button.pause`, chromedp.ByQuery),
		chromedp.WaitVisible(`#flash`, chromedp.ByQuery),
		text("#flash", &body))
	if typed != reason {
		t.Errorf("reason field after a refresh holds %q, want %q as typed", typed, reason)
	}
	if !strings.Contains(body, "paused manual") {
		t.Errorf("flash after pause: %q", body)
	}
	other := reps[1].url + "/ui/"
	run(30*time.Second, "paused on another replica",
		chromedp.Navigate(other),
		chromedp.WaitVisible(`tr[data-job="manual"] span.paused`, chromedp.ByQuery),
		text(`tr[data-job="manual"]`, &body),
		shot("jobs-paused"))
	nextSlots("jobs page with a job paused", 900)
	m := regexp.MustCompile(`paused by dashboard@replica-0 at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z): (.*)`).FindStringSubmatch(body)
	if m == nil || !strings.HasPrefix(m[2], reason) {
		t.Fatalf("paused row on replica-1: %q, want \"paused by dashboard@replica-0 at T: %s\"", body, reason)
	}
	pausedAt, err := time.Parse("2006-01-02 15:04:05.000Z", m[1])
	if err != nil {
		t.Fatal(err)
	}
	// A catch-up is requested only for a pause that covered a slot; this
	// yearly job's pause is moved back in the store past its last one.
	pausedAt = backdatePause(t, filepath.Join(dir, "anarchon.db"), "manual", pausedAt, 400*24*time.Hour)
	key := fmt.Sprintf("resume-%d", pausedAt.UnixMilli())
	run(30*time.Second, "tick catch up",
		countSwaps,
		chromedp.Click(`tr[data-job="manual"] input[name=catchup]`, chromedp.ByQuery))
	waitSwap(t, bctx, "a refresh after ticking catch up")
	run(30*time.Second, "resume with catch-up on another replica",
		chromedp.Evaluate(`document.querySelector('tr[data-job="manual"] input[name=catchup]').checked`, &checked),
		shot("jobs-resume-catch-up"),
		chromedp.Click(`tr[data-job="manual"] button.resume`, chromedp.ByQuery),
		chromedp.WaitVisible(`#flash`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-job="manual"] button.pause`, chromedp.ByQuery),
		text("#flash", &body))
	if !checked {
		t.Errorf("catch-up box unticked by a refresh")
	}
	if want := "resumed manual; catch-up run requested from the replicas under trigger key " + key; !strings.Contains(body, want) {
		t.Errorf("flash after resume with catch-up: %q, want %q", body, want)
	}
	// The catch-up run is a trigger: one replica runs it once, as a
	// manual run.
	waitFor(t, 30*time.Second, "the catch-up run", func() bool { return len(lines(t, manualOut)) == 2 })
	run(30*time.Second, "catch-up run in history",
		chromedp.Navigate(base+"job/manual"),
		chromedp.WaitVisible(`tbody.slot:nth-of-type(2) tr[data-status="success"]`, chromedp.ByQuery))

	// Trigger runs the job once on a live replica.
	before := len(lines(t, manualOut))
	run(30*time.Second, "trigger",
		chromedp.Navigate(base),
		chromedp.Click(`tr[data-job="manual"] button.trigger`, chromedp.ByQuery),
		chromedp.WaitVisible(`#flash`, chromedp.ByQuery),
		text("#flash", &body))
	if !strings.Contains(body, "triggered manual: a live replica runs it once (key ") {
		t.Errorf("flash after trigger: %q", body)
	}
	waitFor(t, 30*time.Second, "the triggered run", func() bool { return len(lines(t, manualOut)) > before })

	// A form whose CSRF token was tampered with is refused.
	run(30*time.Second, "forged CSRF token",
		chromedp.Navigate(base),
		chromedp.WaitVisible(`tr[data-job="manual"] button.run-now`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('input[name=csrf]').forEach(i => i.value = 'forged.token')`, nil),
		chromedp.Click(`tr[data-job="manual"] button.run-now`, chromedp.ByQuery))
	body = page(t, bctx, "the forged form's answer", func(loc, body string) bool { return strings.HasSuffix(loc, "/job/manual/run") })
	run(10*time.Second, "forged CSRF screenshot", shot("csrf-refused"))
	if !strings.Contains(body, "CSRF token is missing or does not match") {
		t.Errorf("forged token: page says %q", body)
	}
	// A form on another origin that posts to the dashboard is refused.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><body onload="document.forms[0].submit()"><form method="post" action="%sjob/manual/run"><input name="csrf" value="x.y"></form>`, base)
	}))
	defer evil.Close()
	run(30*time.Second, "cross-origin page", chromedp.Navigate(evil.URL))
	// The page submits itself once loaded; wait for the dashboard's answer.
	body = page(t, bctx, "the cross-origin form's answer", func(loc, body string) bool { return strings.HasSuffix(loc, "/job/manual/run") })
	run(10*time.Second, "cross-origin screenshot", shot("cross-origin-refused"))
	if !strings.Contains(strings.ToLower(body), "cross-origin") {
		t.Errorf("cross-origin form: page says %q", body)
	}

	// The replica on a non-loopback address wants credentials, even over
	// loopback.
	resp, err := http.Get(reps[2].url + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("replica-2 without credentials: %d, want 401", resp.StatusCode)
	}
	run(30*time.Second, "replica-2 without credentials", chromedp.Navigate(reps[2].url+"/ui/"), text("body", &body), shot("auth-required"))
	if !strings.Contains(body, "authentication required") {
		t.Errorf("replica-2 without credentials says %q", body)
	}
	actx2, cancel2 := chromedp.NewContext(bctx) // a new tab with the token on every request
	defer cancel2()
	if err := chromedp.Run(actx2); err != nil {
		t.Fatal(err)
	}
	ctx2, cancelT := context.WithTimeout(actx2, 30*time.Second)
	err = chromedp.Run(ctx2,
		network.Enable(),
		network.SetExtraHTTPHeaders(network.Headers{"Authorization": "Bearer " + token}),
		chromedp.Navigate(reps[2].url+"/ui/"),
		chromedp.WaitVisible(`tr[data-job="every2s"]`, chromedp.ByQuery))
	cancelT()
	if err != nil {
		t.Errorf("replica-2 with the token: %v", err)
	}

	// SIGKILL the replica that holds the first run of takeover: it turns
	// dead on the replicas page within its TTL, and a backup runs the
	// slot as attempt 2.
	holderFile := filepath.Join(dir, "holder")
	waitFor(t, 30*time.Second, "the first run of takeover", func() bool { return len(lines(t, holderFile)) == 1 })
	f := strings.Fields(lines(t, holderFile)[0])
	holder, slot := f[0], f[1]
	var victim, survivor *replica
	for _, r := range reps {
		if r.id == holder {
			victim = r
		} else if survivor == nil || (survivor == reps[2] && r != reps[2]) {
			survivor = r
		}
	}
	if victim == nil {
		t.Fatalf("holder %q is no replica", holder)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	sbase := survivor.url + "/ui/"
	if survivor == reps[2] {
		t.Fatal("no loopback survivor") // cannot happen: two replicas are on loopback
	}
	const ttl = registryTTL
	run(ttl+10*time.Second, "killed replica dead",
		chromedp.Navigate(sbase+"replicas"),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-instance=%q][data-state="dead"]`, holder), chromedp.ByQuery),
		shot("replicas-dead"))
	t.Logf("%s listed dead %v after SIGKILL (registry TTL %v)", holder, time.Since(killed).Round(100*time.Millisecond), ttl)

	slotT, err := time.Parse(time.RFC3339Nano, slot)
	if err != nil {
		t.Fatal(err)
	}
	sel := fmt.Sprintf(`tbody.slot[data-slot="%d"]`, slotT.UnixMilli())
	var atts []string
	run(30*time.Second, "takeover slot",
		chromedp.Navigate(sbase+"job/takeover"),
		chromedp.WaitVisible(sel+` tr[data-attempt="2"][data-status="success"]`, chromedp.ByQuery),
		chromedp.Evaluate(fmt.Sprintf(`Array.from(document.querySelectorAll('%s tr.attempt')).map(r => r.dataset.attempt + ' ' + r.dataset.status)`, sel), &atts),
		shot("slot-takeover"))
	if got := strings.Join(atts, ", "); got != "2 success, 1 lease_lost" {
		t.Errorf("takeover slot reads %q, want \"2 success, 1 lease_lost\" (newest first, as the history)", got)
	}

	// Run now ran the job once, on replica-0, the catch-up and the trigger
	// once each, on whichever live replica won them, however the pages
	// were used since.
	if got := lines(t, manualOut); len(got) != 3 || got[0] != "replica-0 1" || !strings.HasSuffix(got[1], " 1") {
		t.Errorf("manual.out = %q, want the run-now run on replica-0, then the catch-up run, then one triggered run", got)
	}
}
