package anarchonui

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

func nop(context.Context, *anarchon.Run) error { return nil }

// storeClocks holds the clock of each store newScheduler made, for
// shiftStore.
var storeClocks sync.Map // *membackend.Backend -> *atomic.Int64 (ns ahead of time.Now)

// shiftStore moves the clock of b, a store newScheduler made, d ahead:
// a pause then covers the jobs' slots in that span, as a real one of that
// length would.
func shiftStore(t testing.TB, b *membackend.Backend, d time.Duration) {
	t.Helper()
	c, ok := storeClocks.Load(b)
	if !ok {
		t.Fatal("shiftStore: not a store of newScheduler")
	}
	c.(*atomic.Int64).Add(int64(d))
}

// newScheduler returns a scheduler on a fresh memory store with two jobs,
// not started (the pages read the store all the same). The store's clock
// is the wall clock until shiftStore moves it.
func newScheduler(t testing.TB, historySize int) (*anarchon.Scheduler, *membackend.Backend) {
	t.Helper()
	ahead := new(atomic.Int64)
	b := membackend.New(&membackend.Options{Now: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }})
	storeClocks.Store(b, ahead)
	s := anarchon.New(b, &anarchon.Options{InstanceID: "replica-a"})
	if err := s.Cron("report", "*/5 * * * *", nop, &anarchon.JobOptions{Zone: "Europe/Athens", HistorySize: historySize}); err != nil {
		t.Fatal(err)
	}
	if err := s.Every("tick", time.Minute, nop, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, j := range []string{"report", "tick"} {
		if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: j, HistorySize: historySize}); err != nil {
			t.Fatal(err)
		}
	}
	return s, b
}

// save stores a finished attempt of report's slot.
func save(t testing.TB, b *membackend.Backend, slot time.Time, inst, token string, attempt int, st anarchon.Status, errText string, size int) {
	t.Helper()
	err := b.SaveResult(context.Background(), anarchon.SaveResultInput{Job: "report", HistorySize: size, Result: anarchon.StoredResult{
		Slot: slot.UnixMilli(), Token: token, InstanceID: inst, Attempt: attempt, Status: st,
		StartedAt: slot.Add(time.Duration(attempt) * time.Second), FinishedAt: slot.Add(time.Duration(attempt)*time.Second + 250*time.Millisecond),
		Error: errText, Output: "line one\nline two\n",
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// loopback makes r look as if it came in on a loopback connection.
func loopback(r *http.Request) *http.Request {
	r.RemoteAddr = "127.0.0.1:40000"
	ctx := context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080})
	return r.WithContext(ctx)
}

func get(t testing.TB, h http.Handler, path string) (int, string) {
	t.Helper()
	return getWith(t, h, path, nil)
}

func getWith(t testing.TB, h http.Handler, path string, cookies []*http.Cookie) (int, string) {
	t.Helper()
	r := loopback(httptest.NewRequest("GET", path, nil))
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

func TestJobsPage(t *testing.T) {
	s, b := newScheduler(t, 0)
	slot := time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)
	save(t, b, slot, "replica-b", "t1", 1, anarchon.StatusSuccess, "", 0)
	save(t, b, slot.Add(5*time.Minute), "replica-c", "t2", 1, anarchon.StatusError, "exit status 3", 0)
	// Run now only: membackend also keeps job control and triggers, whose
	// buttons must then stay hidden (TestDefaultPauseResume shows them).
	h := Handler(s, &Options{Actions: &Actions{RunNow: DefaultActions(s).RunNow}})
	code, body := get(t, h, "/")
	if code != 200 {
		t.Fatalf("GET / = %d\n%s", code, body)
	}
	for _, want := range []string{
		`data-job="report"`, `data-job="tick"`, "*/5 * * * *", "Europe/Athens", "every 1m0s",
		`st-error`, "2026-03-01 10:10:00.000Z on replica-c", // last outcome
		"2026-03-01 10:05:00.000Z", // last success
		`class="run-now"`, "lease 30s",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("jobs page lacks %q", want)
		}
	}
	// Absent abilities are hidden.
	for _, absent := range []string{`class="trigger"`, `class="pause"`, "<th>Paused</th>"} {
		if strings.Contains(body, absent) {
			t.Errorf("jobs page shows %q without the ability", absent)
		}
	}
	if n := strings.Count(body, "EET"); n == 0 {
		t.Errorf("next slots of report are not shown in its zone")
	}
}

func TestJobPageTakeover(t *testing.T) {
	s, b := newScheduler(t, 0)
	slot := time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)
	save(t, b, slot, "replica-a", "t1", 1, anarchon.StatusLeaseLost, "lease lost", 0)
	save(t, b, slot, "replica-b", "t2", 2, anarchon.StatusSuccess, "", 0)
	save(t, b, slot.Add(5*time.Minute), "replica-b", "t3", 1, anarchon.StatusSuccess, "", 0)
	code, body := get(t, Handler(s, nil), "/job/report")
	if code != 200 {
		t.Fatalf("GET /job/report = %d\n%s", code, body)
	}
	// One tbody per slot; the takeover slot lists attempt 2 above
	// attempt 1, newest first as the history does.
	slots := regexp.MustCompile(`(?s)<tbody class="slot" data-slot="(\d+)">(.*?)</tbody>`).FindAllStringSubmatch(body, -1)
	if len(slots) != 2 {
		t.Fatalf("%d slot rows, want 2", len(slots))
	}
	if slots[0][1] != fmt.Sprint(slot.Add(5*time.Minute).UnixMilli()) {
		t.Errorf("first slot row is %s, want the newest slot", slots[0][1])
	}
	atts := regexp.MustCompile(`data-attempt="(\d)" data-status="(\w+)"`).FindAllStringSubmatch(slots[1][2], -1)
	got := fmt.Sprint(atts)
	if len(atts) != 2 || atts[0][1] != "2" || atts[0][2] != "success" || atts[1][1] != "1" || atts[1][2] != "lease_lost" {
		t.Errorf("takeover slot attempts = %s, want 2 success then 1 lease_lost", got)
	}
	for _, want := range []string{"replica-a", "replica-b", "250ms", "line two", "3 records", "2026-03-01 10:10:00.000Z on replica-b</small>"} {
		if !strings.Contains(body, want) {
			t.Errorf("job page lacks %q", want)
		}
	}
	if code, _ := get(t, Handler(s, nil), "/job/nope"); code != 404 {
		t.Errorf("GET /job/nope = %d, want 404", code)
	}
}

// A slot not run shows why in the reason's colour; a failed run's error
// stays an error.
func TestJobPageReasons(t *testing.T) {
	s, b := newScheduler(t, 0)
	slot := time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)
	save(t, b, slot, "replica-a", "t1", 1, anarchon.StatusError, "exit status 3", 0)
	// A slot not run: claimed (settled) now, never started.
	skipped := slot.Add(5 * time.Minute)
	ctx := context.Background()
	if _, err := b.Claim(ctx, anarchon.ClaimInput{Job: "report", Slot: skipped.UnixMilli(), Token: "t2", InstanceID: "replica-b"}); err != nil {
		t.Fatal(err)
	}
	if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: "report", Result: anarchon.StoredResult{Slot: skipped.UnixMilli(), Token: "t2",
		InstanceID: "replica-b", Attempt: 1, Status: anarchon.StatusSkipped, Error: "another run of the job still held a live lease"}}); err != nil {
		t.Fatal(err)
	}
	recs, err := s.History(ctx, "report", 0)
	if err != nil || len(recs) != 2 || recs[0].ClaimedAt.IsZero() {
		t.Fatalf("history %+v, %v; want the skipped slot claimed", recs, err)
	}
	// The last outcome says why the slot was not run, on both pages.
	_, jobs := get(t, Handler(s, nil), "/")
	if want := `<small class="why">another run of the job still held a live lease</small>`; !strings.Contains(jobs, want) {
		t.Errorf("jobs page lacks the last outcome's reason %q", want)
	}
	_, body := get(t, Handler(s, nil), "/job/report")
	for _, want := range []string{`<td class="err">exit status 3</td>`, `Last outcome: <span`, `· <small class="why">another run of the job still held a live lease</small>`, `<td class="why">another run of the job still held a live lease</td>`, "Error or reason",
		"<th>Claimed</th>", "<td><small>" + formatTS(recs[0].ClaimedAt) + "</small></td><td><small>–</small></td>"} {
		if !strings.Contains(body, want) {
			t.Errorf("job page lacks %q", want)
		}
	}
}

func TestJobPagePages(t *testing.T) {
	s, b := newScheduler(t, 1000)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 25 {
		save(t, b, base.Add(time.Duration(i)*5*time.Minute), "replica-a", fmt.Sprint("t", i), 1, anarchon.StatusSuccess, "", 1000)
	}
	h := Handler(s, &Options{PageSize: 10})
	seen := map[string]bool{}
	path := "/job/report"
	for pages := 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatal("more than 3 pages of 10 for 25 slots")
		}
		_, body := get(t, h, path)
		for _, m := range regexp.MustCompile(`data-slot="(\d+)"`).FindAllStringSubmatch(body, -1) {
			if seen[m[1]] {
				t.Errorf("slot %s on two pages", m[1])
			}
			seen[m[1]] = true
		}
		path = ""
		if m := regexp.MustCompile(`id="older" href="([^"]+)"`).FindStringSubmatch(body); m != nil {
			path = strings.TrimPrefix(strings.ReplaceAll(m[1], "&amp;", "&"), "")
		}
	}
	if len(seen) != 25 {
		t.Errorf("pages showed %d slots, want 25", len(seen))
	}
}

func TestLeasesPage(t *testing.T) {
	s, b := newScheduler(t, 0)
	now := time.Now()
	out, err := b.Runs().Claim(context.Background(), anarchon.RunClaim{
		ClaimInput: anarchon.ClaimInput{Job: "report", Slot: now.UnixMilli(), Token: "tok", InstanceID: "replica-c"},
		Lease:      time.Minute, MaxAttempts: 3,
	})
	if err != nil || out.Kind != anarchon.OutcomeWon {
		t.Fatalf("claim: %v %v", out, err)
	}
	// The page reads the lease 20 s later by its clock.
	_, body := get(t, Handler(s, &Options{Now: func() time.Time { return now.Add(20 * time.Second) }}), "/leases")
	if !strings.Contains(body, `class="lease" data-job="report"`) || !strings.Contains(body, "<td>replica-c</td>") {
		t.Fatalf("leases page lacks the live lease:\n%s", body)
	}
	left := regexp.MustCompile(`<td>(\d+(\.\d+)?)s</td>\s*</tr>`).FindStringSubmatch(body)
	if left == nil {
		t.Fatalf("no time left in seconds on the leases page")
	}
	if v, _ := strconv.ParseFloat(left[1], 64); v <= 30 || v > 40 {
		t.Errorf("time left %ss, want about 40s of the 1m lease", left[1])
	}
}

func TestAuth(t *testing.T) {
	s, _ := newScheduler(t, 0)
	remote := func(h http.Handler, mod func(*http.Request)) int {
		r := httptest.NewRequest("GET", "/", nil) // RemoteAddr 192.0.2.1, no local address
		if mod != nil {
			mod(r)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if c := remote(Handler(s, nil), nil); c != http.StatusForbidden {
		t.Errorf("remote request without configured credentials = %d, want 403", c)
	}
	h := Handler(s, &Options{Auth: Auth{Token: "tok-1", User: "ops", Password: "pw-1"}})
	cases := []struct {
		name string
		mod  func(*http.Request)
		want int
	}{
		{"none", nil, 401},
		{"bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-1") }, 200},
		{"bad bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-2") }, 401},
		{"basic user", func(r *http.Request) { r.SetBasicAuth("ops", "pw-1") }, 200},
		{"basic token", func(r *http.Request) { r.SetBasicAuth("anyone", "tok-1") }, 200},
		{"basic wrong user", func(r *http.Request) { r.SetBasicAuth("root", "pw-1") }, 401},
	}
	for _, c := range cases {
		if got := remote(h, c.mod); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// Loopback needs nothing, unless Required.
	if c, _ := get(t, h, "/"); c != 200 {
		t.Errorf("loopback = %d, want 200", c)
	}
	req := Handler(s, &Options{Auth: Auth{Token: "tok-1", Required: true}})
	if c, _ := get(t, req, "/"); c != 401 {
		t.Errorf("loopback with Required = %d, want 401", c)
	}
	// A loopback remote on a non-loopback listener (a proxy would look so
	// only on loopback) still authenticates.
	if c := remote(h, func(r *http.Request) { r.RemoteAddr = "127.0.0.1:1" }); c != 401 {
		t.Errorf("loopback remote without a loopback local address = %d, want 401", c)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:0": true, "localhost:9000": true, "127.3.4.5:1": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:80": false, "10.0.0.1:80": false, "example.com:80": false, "bad": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// form fetches path, and returns the cookies and the CSRF field of the
// page.
func form(t *testing.T, h http.Handler, path string) ([]*http.Cookie, string, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, loopback(httptest.NewRequest("GET", path, nil)))
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(w.Body.String())
	if m == nil {
		t.Fatalf("no CSRF field on %s", path)
	}
	return w.Result().Cookies(), m[1], w.Body.String()
}

func post(h http.Handler, path string, cookies []*http.Cookie, vals url.Values, mod func(*http.Request)) *httptest.ResponseRecorder {
	r := loopback(httptest.NewRequest("POST", path, strings.NewReader(vals.Encode())))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range cookies {
		r.AddCookie(c)
	}
	if mod != nil {
		mod(r)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

type calls struct {
	mu  sync.Mutex
	got []string
}

func (c *calls) add(s string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, s)
	return nil
}

func (c *calls) list() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.got, ",")
}

func TestActionsCSRF(t *testing.T) {
	s, _ := newScheduler(t, 0)
	var c calls
	paused := map[string]bool{"tick": true}
	acts := &Actions{
		RunNow:  func(_ context.Context, job string) error { return c.add("run " + job) },
		Trigger: func(_ context.Context, job, key string) error { return c.add("trigger " + job) },
		Pause:   func(_ context.Context, job, reason string) error { return c.add("pause " + job) },
		Resume:  func(_ context.Context, job string) error { return c.add("resume " + job) },
		Paused: func(_ context.Context, job string) (bool, string, error) {
			return paused[job], "by ops", nil
		},
	}
	h := Handler(s, &Options{Actions: acts})
	cookies, tok, body := form(t, h, "/")
	for _, want := range []string{`class="trigger"`, `class="pause"`, `class="resume"`, "<th>Paused</th>", `paused</span> <small>by ops`} {
		if !strings.Contains(body, want) {
			t.Errorf("jobs page with every action lacks %q", want)
		}
	}
	ok := url.Values{"csrf": {tok}, "back": {"/job/report"}}
	w := post(h, "/job/report/run", cookies, ok, nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/job/report" {
		t.Fatalf("run now = %d %q, want 303 back to the job", w.Code, w.Header().Get("Location"))
	}
	// The page it leads to says so, once.
	flash := w.Result().Cookies()
	if _, body := getWith(t, h, "/job/report", flash); !strings.Contains(body, `id="flash">started a run of report on replica-a<`) {
		t.Errorf("the page after run now shows no flash")
	}
	if _, body := get(t, h, "/job/report?msg=forged&err=forged"); strings.Contains(body, `id="flash`) {
		t.Errorf("a message in the address is shown")
	}
	for _, a := range []string{"trigger", "pause", "resume"} {
		if w := post(h, "/job/tick/"+a, cookies, ok, nil); w.Code != http.StatusSeeOther {
			t.Errorf("%s = %d, want 303", a, w.Code)
		}
	}
	if got := c.list(); got != "run report,trigger tick,pause tick,resume tick" {
		t.Errorf("actions called: %s", got)
	}

	refused := []struct {
		name    string
		cookies []*http.Cookie
		vals    url.Values
		mod     func(*http.Request)
	}{
		{"no token", cookies, url.Values{}, nil},
		{"no cookie", nil, ok, nil},
		{"token of another cookie", []*http.Cookie{{Name: csrfCookie, Value: "x.y"}}, url.Values{"csrf": {"x.y"}}, nil},
		{"cross-site", cookies, ok, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }},
		{"other origin", cookies, ok, func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }},
	}
	for _, rc := range refused {
		if w := post(h, "/job/report/run", rc.cookies, rc.vals, rc.mod); w.Code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", rc.name, w.Code)
		}
	}
	if got := c.list(); strings.Count(got, "run report") != 1 {
		t.Errorf("a refused POST ran the job: %s", got)
	}
	if w := post(h, "/job/nope/run", cookies, ok, nil); w.Code != http.StatusNotFound {
		t.Errorf("run of an unknown job = %d, want 404", w.Code)
	}
	// An offsite back link is not followed.
	for _, back := range []string{"//evil.example/", `/\evil.example/`, "https://evil.example/"} {
		w = post(h, "/job/report/run", cookies, url.Values{"csrf": {tok}, "back": {back}}, nil)
		if loc := w.Header().Get("Location"); loc != "/" {
			t.Errorf("back link %q redirected to %q", back, loc)
		}
	}
}

func TestActionsHiddenAndRefused(t *testing.T) {
	s, _ := newScheduler(t, 0)
	h := Handler(s, &Options{Actions: &Actions{}})
	cookies, tok, body := form(t, Handler(s, nil), "/")
	_ = body
	_, plain := get(t, h, "/")
	if strings.Contains(plain, "<button") {
		t.Errorf("buttons shown without actions")
	}
	if w := post(h, "/job/report/run", cookies, url.Values{"csrf": {tok}}, nil); w.Code != http.StatusForbidden && w.Code != http.StatusNotFound {
		t.Errorf("run without the action = %d, want 403 (other handler's key) or 404", w.Code)
	}
	ro := Handler(s, &Options{ReadOnly: true})
	_, robody := get(t, ro, "/")
	if strings.Contains(robody, "<form") || !strings.Contains(robody, "read-only") {
		t.Errorf("read-only page has forms or lacks its tag")
	}
	if w := post(ro, "/job/report/run", cookies, url.Values{"csrf": {tok}}, nil); w.Code != http.StatusForbidden {
		t.Errorf("POST in read-only mode = %d, want 403", w.Code)
	}
}

// savedStore signals each SaveResult once it is stored.
type savedStore struct {
	*membackend.Backend
	saved chan string
}

func (b savedStore) SaveResult(ctx context.Context, in anarchon.SaveResultInput) error {
	err := b.Backend.SaveResult(ctx, in)
	b.saved <- in.Job
	return err
}

func TestDefaultRunNow(t *testing.T) {
	b := savedStore{membackend.New(nil), make(chan string, 1)}
	s := anarchon.New(b, &anarchon.Options{InstanceID: "replica-a"})
	ran := make(chan struct{}, 1)
	if err := s.Every("tick", time.Hour, func(context.Context, *anarchon.Run) error { ran <- struct{}{}; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	h := Handler(s, nil)
	cookies, tok, _ := form(t, h, "/")
	if w := post(h, "/job/tick/run", cookies, url.Values{"csrf": {tok}}, nil); w.Code != http.StatusSeeOther {
		t.Fatalf("run now = %d", w.Code)
	}
	<-ran
	<-b.saved
	recs, err := s.History(context.Background(), "tick", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Status != anarchon.StatusSuccess || !recs[0].Manual || recs[0].InstanceID != "replica-a" {
		t.Errorf("history after run now: %+v", recs)
	}
}

func TestNoPassword(t *testing.T) {
	const pw = "s3cr@t<&>"
	s, b := newScheduler(t, 0)
	slot := time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)
	save(t, b, slot, "replica-a", "t1", 1, anarchon.StatusError, "dial postgres://app:"+pw+"@db:5432/x failed", 0)
	store := "postgres://app:" + url.QueryEscape(pw) + "@db:5432/anarchon?sslmode=disable"
	h := Handler(s, &Options{Store: store, Actions: &Actions{RunNow: func(context.Context, string) error {
		return errors.New("refused: password " + pw)
	}}})
	for _, path := range []string{"/", "/job/report", "/leases", "/replicas"} {
		_, body := get(t, h, path)
		for _, leak := range []string{pw, url.QueryEscape(pw), "s3cr@t&lt;&amp;&gt;", "s3cr"} {
			if strings.Contains(body, leak) {
				t.Errorf("%s shows the password (%q)", path, leak)
			}
		}
		if !strings.Contains(body, "postgres://app:xxxxx@db:5432/anarchon") {
			t.Errorf("%s does not show the redacted store URL", path)
		}
	}
	cookies, tok, _ := form(t, h, "/")
	w := post(h, "/job/report/run", cookies, url.Values{"csrf": {tok}}, nil)
	// The error's flash, and the page it leads to, hide the password.
	for _, c := range w.Result().Cookies() {
		if v, _ := base64.RawURLEncoding.DecodeString(c.Value); strings.Contains(string(v), "s3cr") || strings.Contains(c.Value, "s3cr") {
			t.Errorf("cookie %s holds the password", c.Name)
		}
	}
	_, body := getWith(t, h, w.Header().Get("Location"), w.Result().Cookies())
	if strings.Contains(body, "s3cr") || !strings.Contains(body, "refused: password xxxxx") {
		t.Errorf("the error's flash shows the password, or is missing")
	}
	for in, want := range map[string]string{
		"host=db user=app password=" + pw + " dbname=x": "host=db user=app password=xxxxx dbname=x",
		"redis://:hunter2@cache:6379/0":                 "redis://:xxxxx@cache:6379/0",
		"/var/lib/anarchon.db":                          "/var/lib/anarchon.db",
	} {
		if got, _ := redactStore(in); got != want {
			t.Errorf("redactStore(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStatic(t *testing.T) {
	s, _ := newScheduler(t, 0)
	code, body := get(t, Handler(s, nil), "/static/htmx.min.js")
	if code != 200 || !strings.Contains(body, "htmx") {
		t.Errorf("htmx.min.js = %d (%d bytes)", code, len(body))
	}
	w := httptest.NewRecorder()
	Handler(s, nil).ServeHTTP(w, loopback(httptest.NewRequest("GET", "/static/style.css", nil)))
	if b, _ := io.ReadAll(w.Result().Body); w.Code != 200 || len(b) == 0 {
		t.Errorf("style.css = %d", w.Code)
	}
}

// Mounted under a prefix, the pages link, poll and return under it.
func TestBasePath(t *testing.T) {
	s, _ := newScheduler(t, 0)
	h := http.StripPrefix("/ui", Handler(s, &Options{BasePath: "/ui/"}))
	cookies, tok, body := form(t, h, "/ui/job/report")
	for _, want := range []string{`href="/ui/leases"`, `src="/ui/static/htmx.min.js"`, `hx-get="/ui/job/report"`, `action="/ui/job/report/run"`, `name="back" value="/ui/job/report"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page under /ui/ lacks %q", want)
		}
	}
	w := post(h, "/ui/job/report/run", cookies, url.Values{"csrf": {tok}, "back": {"/ui/job/report"}}, nil)
	if loc := w.Header().Get("Location"); loc != "/ui/job/report" {
		t.Errorf("run now under /ui/ redirected to %q", loc)
	}
}

// On a store with job control, the default actions pause and resume the
// job cluster-wide (the store's state, read back through the scheduler)
// and the jobs page shows who paused it and why.
func TestDefaultPauseResume(t *testing.T) {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{InstanceID: "replica-a"})
	if err := s.Every("tick", time.Hour, func(context.Context, *anarchon.Run) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	a := DefaultActions(s)
	if a.Pause == nil || a.Resume == nil || a.Paused == nil || a.Trigger == nil {
		t.Fatalf("membackend has job control and triggers, actions: %+v", a)
	}
	var logs strings.Builder
	h := Handler(s, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if code, body := get(t, h, "/"); code != http.StatusOK || !strings.Contains(body, `class="pause"`) || !strings.Contains(body, `class="trigger"`) {
		t.Errorf("jobs page (%d) lacks the pause or trigger button of a store that has them", code)
	}
	cookies, tok, _ := form(t, h, "/")
	if w := post(h, "/job/tick/pause", cookies, url.Values{"csrf": {tok}, "reason": {"maintenance window"}}, nil); w.Code != http.StatusSeeOther {
		t.Fatalf("pause = %d", w.Code)
	}
	st, err := s.JobState(context.Background(), "tick")
	if err != nil || !st.Paused || st.Reason != "maintenance window" || st.By != "dashboard@replica-a" {
		t.Fatalf("state after pause: %+v, %v", st, err)
	}
	if code, body := get(t, h, "/"); code != http.StatusOK || !strings.Contains(body, "maintenance window") {
		t.Errorf("jobs page after pause (%d) does not show the reason", code)
	}
	if w := post(h, "/job/tick/resume", cookies, url.Values{"csrf": {tok}}, nil); w.Code != http.StatusSeeOther {
		t.Fatalf("resume = %d", w.Code)
	}
	if st, err := s.JobState(context.Background(), "tick"); err != nil || st.Paused {
		t.Fatalf("state after resume: %+v, %v", st, err)
	}
	// Each action is in the log.
	for _, act := range []string{"pause", "resume"} {
		if !strings.Contains(logs.String(), `level=INFO msg="dashboard action" action=`+act+` job=tick by=dashboard@replica-a client=127.0.0.1:40000`) {
			t.Errorf("log lacks the %s:\n%s", act, logs.String())
		}
	}
}

// Every time a page shows is in one format (formatTS: UTC to the
// millisecond), whatever it is the time of: next slots of a job in a zone,
// last outcomes, the attempts, a pause, a replica's last renewal. A
// relative time ("3s ago") is only an addition to an absolute one.
func TestOneTimeFormat(t *testing.T) {
	s, b := newScheduler(t, 0)
	slot := time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)
	save(t, b, slot, "replica-a", "t1", 1, anarchon.StatusLeaseLost, "lease lost", 0)
	save(t, b, slot, "replica-b", "t2", 2, anarchon.StatusSuccess, "", 0)
	ctx := context.Background()
	if _, err := s.Pause(ctx, "report", anarchon.PauseOptions{By: "ops", Reason: "maintenance"}); err != nil {
		t.Fatal(err)
	}
	if err := b.RegisterInstance(ctx, anarchon.InstanceInfo{ID: "replica-a", StartedAt: slot}, time.Minute); err != nil {
		t.Fatal(err)
	}
	h := Handler(s, nil)
	// Anything that reads as a date and a time, in any of the forms Go
	// and the browsers print.
	anyTime := regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2}| [A-Z]{3,5}\b)?`)
	oneFormat := regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}Z$`)
	tags := regexp.MustCompile(`(?s)<[^>]*>`)
	for _, path := range []string{"/", "/job/report", "/leases", "/replicas"} {
		code, body := get(t, h, path)
		if code != 200 {
			t.Fatalf("GET %s = %d", path, code)
		}
		// What the page shows: its text, without the tags and their
		// attributes (a tooltip may name the zone's wall time).
		text := tags.ReplaceAllString(body, " ")
		times := anyTime.FindAllString(text, -1)
		if len(times) == 0 && path != "/leases" {
			t.Errorf("%s shows no time", path)
		}
		for _, ts := range times {
			if !oneFormat.MatchString(ts) {
				t.Errorf("%s shows %q, not in the pages' one format (2006-01-02 15:04:05.000Z)", path, ts)
			}
		}
	}
	_, jobs := get(t, h, "/")
	if !strings.Contains(jobs, `title="`) || !strings.Contains(jobs, "EET in Europe/Athens") {
		t.Errorf("next slots of report lack their wall time in Europe/Athens as a tooltip")
	}
	_, reps := get(t, h, "/replicas")
	if !regexp.MustCompile(`\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}Z \([^)]* ago, TTL 1m0s\)`).MatchString(reps) {
		t.Errorf("replicas page shows the last renewal without its time:\n%s", reps)
	}
}

// Each action the dashboard refuses is logged at WARN ("dashboard action
// refused") with the action, the job, who asked and why: refused by the
// read-only setting, by the CSRF check, for an unknown job or action. One
// it tried whose action returned an error (the scheduler's validation, the
// store) is logged at WARN as failed, with the error.
func TestActionRefusalsLogged(t *testing.T) {
	s, _ := newScheduler(t, 0)
	var mu sync.Mutex
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil))
	refusedByStore := errors.New("store refused: job control is read-only")
	acts := &Actions{
		RunNow:  func(context.Context, string) error { return nil },
		Trigger: func(context.Context, string, string) error { return errors.New("invalid trigger key: too long") },
		Pause:   func(context.Context, string, string) error { return refusedByStore },
	}
	h := Handler(s, &Options{Logger: logger, Actions: acts})
	ro := Handler(s, &Options{Logger: logger, ReadOnly: true, Actions: acts})
	cookies, tok, _ := form(t, h, "/")
	ok := url.Values{"csrf": {tok}}
	cases := []struct {
		name           string
		h              http.Handler
		path           string
		cookies        []*http.Cookie
		vals           url.Values
		code           int
		action, job    string
		reasonContains string
		failed         bool // tried, and the action returned an error
	}{
		{"read-only", ro, "/job/report/pause", cookies, ok, 403, "pause", "report", "read-only", false},
		{"no CSRF token", h, "/job/report/resume", cookies, url.Values{}, 403, "resume", "report", "CSRF token", false},
		{"unknown job", h, "/job/nope/trigger", cookies, ok, 404, "trigger", "nope", "no job nope", false},
		{"action not offered", h, "/job/tick/resume", cookies, ok, 404, "resume", "tick", "no action resume", false},
		{"unknown action", h, "/job/tick/explode", cookies, ok, 404, "explode", "tick", "no action explode", false},
		{"validation", h, "/job/tick/trigger", cookies, ok, 303, "trigger", "tick", "invalid trigger key", true},
		{"store", h, "/job/report/pause", cookies, ok, 303, "pause", "report", "store refused", true},
	}
	for _, c := range cases {
		mu.Lock()
		logs.Reset()
		mu.Unlock()
		if w := post(c.h, c.path, c.cookies, c.vals, nil); w.Code != c.code {
			t.Errorf("%s: %d, want %d", c.name, w.Code, c.code)
		}
		mu.Lock()
		got := logs.String()
		mu.Unlock()
		msg, key := "refused", "reason"
		if c.failed {
			msg, key = "failed", "error"
		}
		want := `level=WARN msg="dashboard action ` + msg + `" action=` + c.action + ` job=` + c.job + ` by=dashboard@replica-a client=127.0.0.1:40000 ` + key + `=`
		if !strings.Contains(got, want) || !strings.Contains(got, c.reasonContains) || strings.Count(got, "\n") != 1 {
			t.Errorf("%s: log %q, want one record %q… naming %q", c.name, got, want, c.reasonContains)
		}
	}
}

// wantRefused posts vals to path (POST /job/JOB/ACTION) and checks that
// the handler refused the action before trying it: 400 saying says, and
// one record in logs (its handler's log, emptied first), "dashboard action
// refused" with the action, the job, who asked, the client and the
// reason, which starts with says. name names the case in failures.
func wantRefused(t *testing.T, h http.Handler, mu *sync.Mutex, logs *strings.Builder, name, path string, cookies []*http.Cookie, vals url.Values, says string) {
	t.Helper()
	mu.Lock()
	logs.Reset()
	mu.Unlock()
	w := post(h, path, cookies, vals, nil)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), says) {
		t.Errorf("%s: %d %q, want 400 saying %q", name, w.Code, w.Body.String(), says)
	}
	mu.Lock()
	got := logs.String()
	mu.Unlock()
	job, act, _ := strings.Cut(strings.TrimPrefix(path, "/job/"), "/")
	// The reason as slog's text handler writes it: quoted, its end left
	// open since says is its start.
	reason := strings.TrimSuffix(strconv.Quote(says), `"`)
	if want := `level=WARN msg="dashboard action refused" action=` + act + ` job=` + job + ` by=dashboard@replica-a client=127.0.0.1:40000 reason=` + reason; !strings.Contains(got, want) || strings.Count(got, "\n") != 1 {
		t.Errorf("%s: log %q, want one record %q…", name, got, want)
	}
}

// lockedWriter serialises the writes of a logger read by the test.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A paused job's next slots are marked paused on both pages (each is
// recorded paused when due, SPEC §12); another job's are not, and a
// resume clears the marks.
func TestPausedNextSlots(t *testing.T) {
	s, _ := newScheduler(t, 0)
	ctx := context.Background()
	if _, err := s.Pause(ctx, "report", anarchon.PauseOptions{By: "ops"}); err != nil {
		t.Fatal(err)
	}
	h := Handler(s, nil)
	marked := regexp.MustCompile(`<span class="next next-paused"[^>]*>[^<]+</span> <span class="tag bad"[^>]*>paused</span>`)
	_, jobs := get(t, h, "/")
	row := func(job string) string {
		return regexp.MustCompile(`(?s)<tr class="job" data-job="` + job + `">.*?</tr>`).FindString(jobs)
	}
	if n := len(marked.FindAllString(row("report"), -1)); n != 3 {
		t.Errorf("jobs page marks %d of report's 3 next slots paused:\n%s", n, row("report"))
	}
	if strings.Contains(row("tick"), "next-paused") {
		t.Errorf("jobs page marks the next slots of tick, not paused:\n%s", row("tick"))
	}
	_, job := get(t, h, "/job/report")
	if n := len(marked.FindAllString(job, -1)); n != 3 {
		t.Errorf("job page marks %d of report's 3 next slots paused", n)
	}
	if _, err := s.Resume(ctx, "report", anarchon.ResumeOptions{By: "ops"}); err != nil {
		t.Fatal(err)
	}
	if _, job := get(t, h, "/job/report"); strings.Contains(job, "next-paused") {
		t.Errorf("job page marks next slots paused after the resume")
	}
}

// A pause made from the dashboard without a reason names who asked once:
// in the stored state, in the record of a slot it settles, in the pause
// note of the jobs page and in the slot's row of the job's page. (It used
// to store a reason that named the dashboard's instance again: "job
// paused by dashboard@replica-a: paused from the dashboard of replica-a".)
func TestDashboardPauseSaysWhoOnce(t *testing.T) {
	s, b := newScheduler(t, 0)
	h := Handler(s, nil)
	cookies, tok, _ := form(t, h, "/")
	if w := post(h, "/job/report/pause", cookies, url.Values{"csrf": {tok}}, nil); w.Code != http.StatusSeeOther {
		t.Fatalf("pause = %d", w.Code)
	}
	ctx := context.Background()
	st, err := s.JobState(ctx, "report")
	if err != nil || !st.Paused || st.By != "dashboard@replica-a" || st.Reason != "" {
		t.Fatalf("state after a pause without a reason: %+v, %v; want by dashboard@replica-a, no reason", st, err)
	}
	// A replica's claim of the next slot settles it as paused.
	slot := time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)
	if won, err := b.Claim(ctx, anarchon.ClaimInput{Job: "report", Slot: slot.UnixMilli(), Token: "t1", InstanceID: "replica-b"}); err != nil || won {
		t.Fatalf("claim of a paused job's slot: %v, %v", won, err)
	}
	recs, err := s.History(ctx, "report", 0)
	if err != nil || len(recs) != 1 || recs[0].Status != anarchon.StatusPaused {
		t.Fatalf("history %+v, %v; want one paused record", recs, err)
	}
	if got := recs[0].Error; got != "job paused by dashboard@replica-a" {
		t.Errorf("paused record says %q, want who paused it once", got)
	}
	_, jobs := get(t, h, "/")
	note := regexp.MustCompile(`<small>(paused by [^<]*)</small>`).FindStringSubmatch(jobs)
	if note == nil || strings.Count(note[1], "replica-a") != 1 || strings.Count(note[1], "dashboard") != 1 {
		t.Errorf("pause note %q, want who paused it named once", note)
	}
	if _, job := get(t, h, "/job/report"); !strings.Contains(job, `<td class="why">job paused by dashboard@replica-a</td>`) {
		t.Errorf("job page's paused slot does not read %q", "job paused by dashboard@replica-a")
	}
	// A reason typed into the form is kept as given.
	if w := post(h, "/job/tick/pause", cookies, url.Values{"csrf": {tok}, "reason": {" disk full "}}, nil); w.Code != http.StatusSeeOther {
		t.Fatalf("pause = %d", w.Code)
	}
	if st, err := s.JobState(ctx, "tick"); err != nil || st.Reason != "disk full" || st.By != "dashboard@replica-a" {
		t.Errorf("state after a pause with a reason: %+v, %v", st, err)
	}
}

// The Pause button has a reason field beside it, in its form (bounded by
// maxlength, its text kept across the tables' refresh); a reason typed
// there is stored with the pause and shown as "paused by
// dashboard@INSTANCE at T: REASON". One too long or with a control
// character is refused, logged, and pauses nothing.
func TestDashboardPauseReason(t *testing.T) {
	s, _ := newScheduler(t, 0)
	var mu sync.Mutex
	var logs strings.Builder
	h := Handler(s, &Options{Logger: slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil))})
	cookies, tok, body := form(t, h, "/")
	pauseForm := regexp.MustCompile(`(?s)<tr class="job" data-job="report">.*?(<form[^>]*action="/job/report/pause">.*?</form>)`).FindStringSubmatch(body)
	if pauseForm == nil {
		t.Fatalf("jobs page has no pause form for report")
	}
	field := regexp.MustCompile(`<input type="text" name="reason"[^>]*>`).FindString(pauseForm[1])
	for _, want := range []string{`maxlength="200"`, `placeholder="reason (optional)"`, `hx-preserve="true"`, `id="pause-reason-7265706f7274"`} {
		if !strings.Contains(field, want) {
			t.Errorf("pause form's reason field %q lacks %s", field, want)
		}
	}
	if _, job := get(t, h, "/job/report"); !strings.Contains(job, `name="reason"`) {
		t.Errorf("job page's pause form has no reason field")
	}

	ctx := context.Background()
	refused := []struct{ name, reason, says string }{
		{"too long", strings.Repeat("x", 201), "the pause reason is 201 characters long, more than the 200 the dashboard takes"},
		{"newline", "disk full\nsee ticket", "the pause reason has the control character U+000A at byte 9"},
		{"escape", "\x1b[31mred", "the pause reason has the control character U+001B at byte 0"},
		{"invalid UTF-8", "disk \xff full", "the pause reason is not valid UTF-8"},
	}
	for _, c := range refused {
		wantRefused(t, h, &mu, &logs, c.name, "/job/report/pause", cookies, url.Values{"csrf": {tok}, "reason": {c.reason}}, c.says)
		if st, err := s.JobState(ctx, "report"); err != nil || st.Paused {
			t.Fatalf("%s: state after a refused pause: %+v, %v", c.name, st, err)
		}
	}

	// The bound is in characters, not bytes: 200 of "é" (400 bytes) pass.
	long := strings.Repeat("é", 200)
	if w := post(h, "/job/tick/pause", cookies, url.Values{"csrf": {tok}, "reason": {long}}, nil); w.Code != http.StatusSeeOther {
		t.Errorf("pause with a reason of 200 characters = %d %q, want 303", w.Code, w.Body.String())
	}
	if st, err := s.JobState(ctx, "tick"); err != nil || !st.Paused || st.Reason != long {
		t.Errorf("state after a pause with a reason of 200 characters: %+v, %v", st, err)
	}

	w := post(h, "/job/report/pause", cookies, url.Values{"csrf": {tok}, "back": {"/"}, "reason": {"  database migration, back at 11:00 "}}, nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("pause with a reason = %d %q", w.Code, w.Body.String())
	}
	st, err := s.JobState(ctx, "report")
	if err != nil || !st.Paused || st.By != "dashboard@replica-a" || st.Reason != "database migration, back at 11:00" {
		t.Fatalf("state after a pause with a reason: %+v, %v", st, err)
	}
	_, jobs := getWith(t, h, "/", w.Result().Cookies())
	if !strings.Contains(jobs, `id="flash">paused report<`) {
		t.Errorf("jobs page after the pause lacks its flash")
	}
	note := "paused by dashboard@replica-a at " + formatTS(st.At) + ": database migration, back at 11:00"
	if !strings.Contains(jobs, "<small>"+note+"</small>") {
		t.Errorf("jobs page does not show the pause as %q", note)
	}
	if _, job := get(t, h, "/job/report"); !strings.Contains(job, "<small>"+note+"</small>") {
		t.Errorf("job page does not show the pause as %q", note)
	}
}

// The Resume button has a "catch up" box beside it; ticked, the resume
// requests the catch-up run (a trigger keyed resume-<pause ms>, as
// Scheduler.Resume with CatchUp and the daemon's resume --catch-up), and
// the flash names its key. Unticked, no run is requested.
func TestDashboardResumeCatchUp(t *testing.T) {
	s, b := newScheduler(t, 0)
	ctx := context.Background()
	var mu sync.Mutex
	var logs strings.Builder
	h := Handler(s, &Options{Logger: slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil))})
	paused, err := s.Pause(ctx, "report", anarchon.PauseOptions{By: "ops", Reason: "disk full"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pause(ctx, "tick", anarchon.PauseOptions{By: "ops"}); err != nil {
		t.Fatal(err)
	}
	// Paused across the next slots of both jobs.
	shiftStore(t, b, 10*time.Minute)
	cookies, tok, body := form(t, h, "/")
	resumeForm := regexp.MustCompile(`(?s)<form[^>]*action="/job/report/resume">.*?</form>`).FindString(body)
	box := regexp.MustCompile(`<label class="catchup"[^>]*><input type="checkbox" name="catchup" value="1"[^>]*> catch up</label>`).FindString(resumeForm)
	if box == "" || !strings.Contains(box, `id="resume-catchup-7265706f7274"`) || !strings.Contains(box, `hx-preserve="true"`) {
		t.Errorf("resume form %q has no catch-up box kept across refreshes", resumeForm)
	}

	w := post(h, "/job/report/resume", cookies, url.Values{"csrf": {tok}, "back": {"/job/report"}, "catchup": {"1"}}, nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("resume with catch-up = %d %q", w.Code, w.Body.String())
	}
	key := "resume-" + strconv.FormatInt(paused.At.UnixMilli(), 10)
	if key != anarchon.CatchUpKey(paused) {
		t.Fatalf("catch-up key %s, the library's %s", key, anarchon.CatchUpKey(paused))
	}
	if st, err := s.JobState(ctx, "report"); err != nil || st.Paused || st.By != "dashboard@replica-a" {
		t.Errorf("state after resume with catch-up: %+v, %v", st, err)
	}
	rec, err := b.LookupTrigger(ctx, "report", key)
	if err != nil || rec.By != "dashboard@replica-a" || rec.State != anarchon.TriggerPending {
		t.Errorf("catch-up trigger %s: %+v, %v; want pending, by dashboard@replica-a", key, rec, err)
	}
	_, page := getWith(t, h, "/job/report", w.Result().Cookies())
	if want := `id="flash">resumed report; catch-up run requested from the replicas under trigger key ` + key + `<`; !strings.Contains(page, want) {
		t.Errorf("job page after resume with catch-up lacks %q", want)
	}
	mu.Lock()
	got := logs.String()
	mu.Unlock()
	if want := `level=INFO msg="dashboard action" action=resume job=report by=dashboard@replica-a client=127.0.0.1:40000 catch_up=true catch_up_key=` + key; !strings.Contains(got, want) {
		t.Errorf("log %q lacks %q", got, want)
	}

	// Unticked: a plain resume, no run requested.
	if w := post(h, "/job/tick/resume", cookies, url.Values{"csrf": {tok}}, nil); w.Code != http.StatusSeeOther {
		t.Fatalf("resume = %d", w.Code)
	}
	pending, err := b.PendingTriggers(ctx)
	if err != nil || len(pending) != 1 || pending[0].Key != key {
		t.Errorf("pending triggers after a resume without catch-up: %+v, %v; want only %s", pending, err, key)
	}
	// Ticked on a job not paused: left as it is, and the flash says no run
	// was requested rather than name a key.
	w = post(h, "/job/tick/resume", cookies, url.Values{"csrf": {tok}, "catchup": {"1"}}, nil)
	if _, page := getWith(t, h, "/", w.Result().Cookies()); !strings.Contains(page, `id="flash">tick was not paused: nothing to resume, and no catch-up run was requested<`) {
		t.Errorf("flash after a catch-up resume of a job not paused is not the expected one")
	}
	if pending, _ := b.PendingTriggers(ctx); len(pending) != 1 {
		t.Errorf("a catch-up resume of a job not paused requested a run: %+v", pending)
	}
}

// A resume that asks for a catch-up the dashboard's Actions cannot make
// (no ResumeCatchUp) is refused and logged, not made without the catch-up;
// so is a catchup field no checkbox sends.
func TestDashboardResumeCatchUpRefused(t *testing.T) {
	s, _ := newScheduler(t, 0)
	var c calls
	var mu sync.Mutex
	var logs strings.Builder
	acts := &Actions{
		Resume: func(_ context.Context, job string) error { return c.add("resume " + job) },
		Paused: func(context.Context, string) (bool, string, error) { return true, "by ops", nil },
	}
	h := Handler(s, &Options{Actions: acts, Logger: slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil))})
	cookies, tok, body := form(t, h, "/")
	if !strings.Contains(body, `class="resume"`) || strings.Contains(body, `name="catchup"`) {
		t.Errorf("jobs page without ResumeCatchUp: want the Resume button without the catch-up box")
	}
	cases := []struct{ name, val, says string }{
		{"no catch-up func", "1", "this dashboard offers no catch-up on resume (its Actions has no ResumeCatchUp): nothing was resumed"},
		{"not a checkbox value", "no", `the catchup field is "no": a ticked box sends 1, an unticked one nothing; nothing was resumed`},
	}
	for _, rc := range cases {
		wantRefused(t, h, &mu, &logs, rc.name, "/job/report/resume", cookies, url.Values{"csrf": {tok}, "catchup": {rc.val}}, rc.says)
	}
	if got := c.list(); got != "" {
		t.Errorf("a refused catch-up resumed the job: %s", got)
	}
	// Unticked, the resume is made.
	if w := post(h, "/job/report/resume", cookies, url.Values{"csrf": {tok}}, nil); w.Code != http.StatusSeeOther {
		t.Errorf("resume without catch-up = %d, want 303", w.Code)
	}
	if got := c.list(); got != "resume report" {
		t.Errorf("actions called: %s", got)
	}
}

// noTriggers is a memory store whose trigger requests fail, as a store
// that is down between a resume and its catch-up's request.
// A resume with catch-up of a pause that covered no slot of the job
// resumes it and requests nothing, and the flash says why.
func TestDashboardResumeCatchUpNothingMissed(t *testing.T) {
	s, b := newScheduler(t, 0)
	ctx := context.Background()
	if _, err := s.Pause(ctx, "report", anarchon.PauseOptions{By: "ops"}); err != nil {
		t.Fatal(err)
	}
	h := Handler(s, nil)
	cookies, tok, _ := form(t, h, "/")
	w := post(h, "/job/report/resume", cookies, url.Values{"csrf": {tok}, "catchup": {"1"}}, nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("resume = %d %q", w.Code, w.Body.String())
	}
	if st, err := s.JobState(ctx, "report"); err != nil || st.Paused {
		t.Fatalf("state after the resume: %+v, %v; want resumed", st, err)
	}
	if pending, err := b.PendingTriggers(ctx); err != nil || len(pending) != 0 {
		t.Errorf("pending requests %+v, %v; want none", pending, err)
	}
	_, page := getWith(t, h, "/", w.Result().Cookies())
	if want := "resumed report; no catch-up run requested: no slot of it came due while it was paused"; !strings.Contains(page, want) {
		t.Errorf("the flash does not say %q:\n%s", want, page)
	}
}

type noTriggers struct{ *membackend.Backend }

func (noTriggers) RequestTrigger(context.Context, anarchon.TriggerInput) (anarchon.TriggerRecord, error) {
	return anarchon.TriggerRecord{}, errors.New("store unreachable")
}

// A resume with catch-up whose resume was stored but whose catch-up could
// not be requested says so, with the key to request it under: the job is
// no longer paused, so a second click would request nothing. It is logged
// as failed, not refused.
func TestDashboardResumeCatchUpHalfDone(t *testing.T) {
	_, mem := newScheduler(t, 0)
	b := noTriggers{mem}
	s := anarchon.New(b, &anarchon.Options{InstanceID: "replica-a"})
	if err := s.Every("tick", time.Minute, nop, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	paused, err := s.Pause(ctx, "tick", anarchon.PauseOptions{By: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	shiftStore(t, mem, 2*time.Minute) // paused across a slot
	var mu sync.Mutex
	var logs strings.Builder
	h := Handler(s, &Options{Logger: slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil))})
	cookies, tok, _ := form(t, h, "/")
	w := post(h, "/job/tick/resume", cookies, url.Values{"csrf": {tok}, "catchup": {"1"}}, nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("resume = %d %q", w.Code, w.Body.String())
	}
	if st, err := s.JobState(ctx, "tick"); err != nil || st.Paused {
		t.Fatalf("state after the resume: %+v, %v; want resumed", st, err)
	}
	key := anarchon.CatchUpKey(paused)
	_, page := getWith(t, h, "/", w.Result().Cookies())
	if !strings.Contains(page, "resumed, but the catch-up run was not requested (request it as a trigger under key "+key+"): store unreachable") {
		t.Errorf("the flash does not say the catch-up was not requested, with its key %s:\n%s", key, page)
	}
	mu.Lock()
	got := logs.String()
	mu.Unlock()
	if !strings.Contains(got, `level=WARN msg="dashboard action failed" action=resume job=tick`) || !strings.Contains(got, "catch_up_key="+key) {
		t.Errorf("log %q, want a failed resume naming the key %s", got, key)
	}
}

// lookupFails is a memory store whose trigger lookups fail, as one not
// initialised yet would.
type lookupFails struct{ *membackend.Backend }

func (lookupFails) LookupTrigger(context.Context, string, string) (anarchon.TriggerRecord, error) {
	return anarchon.TriggerRecord{}, errors.New("no such table")
}

// A Trigger form sent again (its key the page's) requests nothing more,
// and the page says so: that the key was requested already, by whom and
// when, and where that request stands (pending, running, done with its
// status and the error's first line, canceled), rather than "triggered"
// as for a new request. It is logged with the key and the state. When
// the key cannot be looked up first, a request the store answers with a
// record no new request has (taken already) is said to be earlier too.
func TestDashboardTriggerSentAgain(t *testing.T) {
	s, b := newScheduler(t, 0)
	ctx := context.Background()
	var mu sync.Mutex
	var logs strings.Builder
	h := Handler(s, &Options{Logger: slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil))})
	cookies, tok, body := form(t, h, "/")
	m := regexp.MustCompile(`action="/job/tick/trigger"><input type="hidden" name="csrf" value="[^"]+"><input type="hidden" name="key" value="([^"]+)">`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("jobs page has no trigger form with a key for tick")
	}
	key := m[1]
	send := func() string {
		t.Helper()
		w := post(h, "/job/tick/trigger", cookies, url.Values{"csrf": {tok}, "key": {key}}, nil)
		if w.Code != http.StatusSeeOther {
			t.Fatalf("trigger = %d %q", w.Code, w.Body.String())
		}
		_, page := getWith(t, h, "/", w.Result().Cookies())
		return regexp.MustCompile(`id="flash">([^<]*)<`).FindStringSubmatch(page)[1]
	}
	if got, want := send(), "triggered tick: a live replica runs it once (key "+key+"; this form sent again runs nothing more)"; got != want {
		t.Errorf("first trigger: flash %q, want %q", got, want)
	}
	rec, err := b.LookupTrigger(ctx, "tick", key)
	if err != nil {
		t.Fatal(err)
	}
	again := "trigger key " + key + " of tick was requested already by replica-a at " + formatTS(rec.RequestedAt) + ", so nothing more was requested: "

	mu.Lock()
	logs.Reset()
	mu.Unlock()
	if got, want := send(), again+"it is pending, no replica has taken it yet"; got != want {
		t.Errorf("sent again while pending: flash %q, want %q", got, want)
	}
	mu.Lock()
	got := logs.String()
	mu.Unlock()
	if want := `level=INFO msg="dashboard action" action=trigger job=tick by=dashboard@replica-a client=127.0.0.1:40000 key=` + key + ` earlier=true state=pending`; !strings.Contains(got, want) {
		t.Errorf("log %q lacks %q", got, want)
	}
	if pending, err := b.PendingTriggers(ctx); err != nil || len(pending) != 1 || pending[0].RequestedAt != rec.RequestedAt {
		t.Errorf("pending requests %+v, %v; want the first one only", pending, err)
	}

	if ok, err := b.ClaimTrigger(ctx, anarchon.ClaimTriggerInput{Job: "tick", Key: key, Token: "tok", InstanceID: "replica-b"}); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	running, _ := b.LookupTrigger(ctx, "tick", key)
	if got, want := send(), again+"it is running on replica-b since "+formatTS(running.ClaimedAt); got != want {
		t.Errorf("sent again while running: flash %q, want %q", got, want)
	}
	slot := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	if err := b.FinishTrigger(ctx, anarchon.FinishTriggerInput{Job: "tick", Key: key, Token: "tok", Slot: slot.UnixMilli(), Status: anarchon.StatusError, Error: "exit status 3\nstack trace"}); err != nil {
		t.Fatal(err)
	}
	if got, want := send(), again+"it ran on replica-b (slot 2026-03-01 10:00:00.000Z): error: exit status 3"; got != want {
		t.Errorf("sent again after the run: flash %q, want %q", got, want)
	}

	// Canceled before any replica took it.
	if _, err := s.RequestTrigger(ctx, "tick", "k2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CancelTrigger(ctx, "tick", "k2", "ops"); err != nil {
		t.Fatal(err)
	}
	key = "k2"
	if got := send(); !strings.HasSuffix(got, ", so nothing more was requested: it was canceled by ops before any instance took it") || !strings.HasPrefix(got, "trigger key k2 of tick was requested already by replica-a at ") {
		t.Errorf("sent again after a cancel: flash %q", got)
	}

	// The key cannot be looked up: the request's answer, taken already,
	// is not a new request's.
	s2 := anarchon.New(lookupFails{b}, &anarchon.Options{InstanceID: "replica-a"})
	if err := s2.Every("tick", time.Minute, nop, nil); err != nil {
		t.Fatal(err)
	}
	h = Handler(s2, &Options{Logger: slog.New(slog.DiscardHandler)})
	cookies, tok, _ = form(t, h, "/")
	key = m[1]
	if got := send(); !strings.HasPrefix(got, again+"it ran on replica-b") {
		t.Errorf("sent again, no lookup: flash %q, want it said to be the earlier request", got)
	}
	key = "k3"
	if got, want := send(), "triggered tick: a live replica runs it once (key k3; this form sent again runs nothing more)"; got != want {
		t.Errorf("new key, no lookup: flash %q, want %q", got, want)
	}
}
