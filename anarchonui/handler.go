package anarchonui

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/anarchon/anarchon"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// DefaultActions returns the actions a scheduler offers by itself: RunNow
// through [anarchon.Scheduler.RunNow], started in the background (the page
// does not wait for the handler; the run shows as running in the job's
// history until it ends). A run outlives the request that asked for it.
// When the store keeps job control ([anarchon.JobControl]) it adds Pause
// (with the operator's reason), Resume and Paused (cluster-wide, SPEC
// §12); when it keeps triggers ([anarchon.TriggerStore]) Trigger, which
// stores the request and returns: a live replica runs it once per key,
// and TriggerRequest, which does the same and says whether the key was
// requested before; and when it keeps both, ResumeCatchUp: Resume with
// [anarchon.ResumeOptions] CatchUp, whose catch-up run is a trigger.
func DefaultActions(s *anarchon.Scheduler) *Actions {
	a := runNowAction(s)
	_, control := anarchon.As[anarchon.JobControl](s.Backend())
	_, triggers := anarchon.As[anarchon.TriggerStore](s.Backend())
	if control {
		a.Pause = func(ctx context.Context, job, reason string) error {
			_, err := s.Pause(ctx, job, anarchon.PauseOptions{Reason: reason, By: dashboardBy(s)})
			return err
		}
		a.Resume = func(ctx context.Context, job string) error {
			_, err := s.Resume(ctx, job, anarchon.ResumeOptions{By: dashboardBy(s)})
			return err
		}
		a.Paused = func(ctx context.Context, job string) (bool, string, error) {
			st, err := s.JobState(ctx, job)
			if err != nil || !st.Paused {
				return false, "", err
			}
			// At in the pages' format: the note is shown beside other times.
			note := "paused by " + st.By + " at " + formatTS(st.At)
			if st.Reason != "" {
				note += ": " + st.Reason
			}
			return true, note, nil
		}
	}
	// A catch-up is a trigger: without a store that keeps them, Resume
	// would store the resume and then fail to request it.
	if control && triggers {
		a.ResumeCatchUp = func(ctx context.Context, job string) (string, bool, error) {
			// Resume says whether it resumed the job and names the key
			// of the catch-up it requested, of the pause it read and
			// resumed; "" for a job not paused, which it left as it is,
			// and for a pause that covered no slot.
			st, err := s.Resume(ctx, job, anarchon.ResumeOptions{By: dashboardBy(s), CatchUp: true})
			if err != nil && st.CatchUpKey != "" {
				// The resume is stored and only the catch-up's request
				// failed: a second click finds the job not paused and
				// asks for nothing, so the key to request it under is
				// said with the error.
				return st.CatchUpKey, true, fmt.Errorf("resumed, but the catch-up run was not requested (request it as a trigger under key %s): %w", st.CatchUpKey, err)
			}
			if err != nil {
				return "", false, err
			}
			return st.CatchUpKey, st.Resumed, nil
		}
	}
	if triggers {
		a.Trigger = func(ctx context.Context, job, key string) error {
			_, err := s.RequestTrigger(ctx, job, key)
			return err
		}
		ts, _ := anarchon.As[anarchon.TriggerStore](s.Backend())
		a.TriggerRequest = func(ctx context.Context, job, key string) (anarchon.TriggerRecord, bool, error) {
			// The store answers a request under a key it has with the
			// earlier record, which, while pending, reads as a new one
			// would (the same form: the same requester), but for its
			// time by the store's clock. So the key is looked up first;
			// a look that fails (a store not initialised yet) leaves it
			// to the request.
			if rec, err := ts.LookupTrigger(ctx, job, key); err == nil {
				return rec, true, nil
			}
			rec, err := s.RequestTrigger(ctx, job, key)
			// A new request is pending: in another state it is one sent
			// between the look and this request, and taken since.
			return rec, err == nil && rec.State != anarchon.TriggerPending, err
		}
	}
	return a
}

// runNowAction is the action every scheduler has: a local manual run.
func runNowAction(s *anarchon.Scheduler) *Actions {
	return &Actions{
		RunNow: func(ctx context.Context, job string) error {
			if !hasJob(s, job) {
				return anarchon.ErrNotFound
			}
			go func() {
				if _, err := s.RunNow(context.WithoutCancel(ctx), job); err != nil {
					slog.Default().Warn("dashboard run now failed", slog.String("job", job), slog.Any("error", err))
				}
			}()
			return nil
		},
	}
}

func hasJob(s *anarchon.Scheduler, name string) bool {
	for _, j := range s.Jobs() {
		if j.Name == name {
			return true
		}
	}
	return false
}

type handler struct {
	s       *anarchon.Scheduler
	o       Options
	act     Actions
	tmpl    *template.Template
	mux     *http.ServeMux
	cop     *http.CrossOriginProtection
	redact  *strings.Replacer
	store   string
	csrfKey []byte
}

// Handler returns the dashboard of scheduler s as an http.Handler: the
// jobs page at the base path, a job's slots at job/NAME, live leases at
// leases, the replicas at replicas, and the actions as POSTs. opts may be
// nil. The pages read the scheduler and its store on every request; s need
// not be started (then only the store's records are shown).
func Handler(s *anarchon.Scheduler, opts *Options) http.Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BasePath == "" {
		o.BasePath = "/"
	}
	if !strings.HasSuffix(o.BasePath, "/") {
		o.BasePath += "/"
	}
	if o.Refresh == 0 {
		o.Refresh = 2 * time.Second
	}
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &handler{s: s, o: o}
	if o.Actions != nil {
		h.act = *o.Actions
	} else {
		h.act = *DefaultActions(s)
	}
	h.csrfKey = o.CSRFKey
	if len(h.csrfKey) == 0 {
		h.csrfKey = make([]byte, 32)
		_, _ = rand.Read(h.csrfKey)
	}
	var secrets []string
	h.store, secrets = redactStore(o.Store)
	if h.store == "" {
		h.store = s.Backend().Name()
	}
	secrets = append(secrets, o.Secrets...)
	var pairs []string
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		pairs = append(pairs, sec, "xxxxx")
		if esc := template.HTMLEscapeString(sec); esc != sec {
			pairs = append(pairs, esc, "xxxxx")
		}
		if esc := url.QueryEscape(sec); esc != sec {
			pairs = append(pairs, esc, "xxxxx")
		}
	}
	if len(pairs) > 0 {
		h.redact = strings.NewReplacer(pairs...)
	}
	h.cop = http.NewCrossOriginProtection()
	h.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))

	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", cacheStatic(http.FileServerFS(static))))
	mux.HandleFunc("GET /{$}", h.jobsPage)
	mux.HandleFunc("GET /job/{name}", h.jobPage)
	mux.HandleFunc("GET /leases", h.leasesPage)
	mux.HandleFunc("GET /replicas", h.replicasPage)
	mux.HandleFunc("POST /job/{name}/{action}", h.action)
	h.mux = mux
	return h
}

func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	if !h.authenticate(w, r) {
		return
	}
	h.mux.ServeHTTP(w, r)
}

// authenticate lets a loopback request through (unless Auth.Required) and
// checks the credentials of any other; it writes the refusal itself.
func (h *handler) authenticate(w http.ResponseWriter, r *http.Request) bool {
	a := h.o.Auth
	if !a.Required && isLoopbackRequest(r) {
		return true
	}
	if !a.configured() {
		http.Error(w, "anarchon dashboard: requests that do not come in on loopback need credentials, and none are configured (set ANARCHON_UI_TOKEN, or ANARCHON_UI_USER and ANARCHON_UI_PASSWORD)", http.StatusForbidden)
		return false
	}
	if a.Token != "" {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && equal(tok, a.Token) {
			return true
		}
	}
	if user, pass, ok := r.BasicAuth(); ok {
		if a.Token != "" && equal(pass, a.Token) {
			return true
		}
		if a.Password != "" && equal(user, a.User) && equal(pass, a.Password) {
			return true
		}
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="anarchon", charset="UTF-8"`)
	http.Error(w, "anarchon dashboard: authentication required", http.StatusUnauthorized)
	return false
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// isLoopbackRequest reports whether the connection's local and remote
// addresses are both loopback.
func isLoopbackRequest(r *http.Request) bool {
	la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if la == nil || !loopbackAddr(la.String()) {
		return false
	}
	return loopbackAddr(r.RemoteAddr)
}

func loopbackAddr(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopback reports whether a listen address (host:port) names only
// loopback interfaces: "127.0.0.1:8080", "[::1]:0" and "localhost:9000"
// are; ":8080" and "0.0.0.0:8080" are not. The daemon sets Auth.Required
// for any other address.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CSRF: a double-submitted token (a cookie and a form field of the same
// value, the value signed with the handler's key, so that a cookie planted
// by a sibling domain is refused), checked after net/http's
// CrossOriginProtection has refused cross-origin browser requests.
const csrfCookie = "anarchon_csrf"

func (h *handler) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && h.validToken(c.Value) {
		return c.Value
	}
	nonce := make([]byte, 18)
	_, _ = rand.Read(nonce)
	n := base64.RawURLEncoding.EncodeToString(nonce)
	tok := n + "." + h.sign(n)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, Path: h.o.BasePath, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return tok
}

func (h *handler) sign(nonce string) string {
	m := hmac.New(sha256.New, h.csrfKey)
	m.Write([]byte("anarchon-csrf\x00" + nonce))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (h *handler) validToken(tok string) bool {
	n, sig, ok := strings.Cut(tok, ".")
	return ok && n != "" && hmac.Equal([]byte(sig), []byte(h.sign(n)))
}

var errCSRF = errors.New("the form's CSRF token is missing or does not match its cookie: reload the page and try again")

func (h *handler) checkCSRF(r *http.Request) error {
	if err := h.cop.Check(r); err != nil {
		return err
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil {
		return errCSRF
	}
	form := r.PostFormValue("csrf")
	if !h.validToken(c.Value) || !equal(form, c.Value) {
		return errCSRF
	}
	return nil
}

// render executes the named page into a buffer, removes the secrets, and
// writes it.
func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, name string, p *page) {
	p.Base = h.o.BasePath
	p.Store = h.store
	p.Instance = h.s.InstanceID()
	p.ReadOnly = h.o.ReadOnly
	if h.o.Refresh > 0 {
		p.RefreshMS = h.o.Refresh.Milliseconds()
		p.MetaRefresh = int((5 * h.o.Refresh).Seconds())
		if p.MetaRefresh < 1 {
			p.MetaRefresh = 1
		}
	}
	if !h.o.ReadOnly {
		p.CSRF = h.csrfToken(w, r)
	}
	p.Flash, p.FlashErr = h.takeFlash(w, r)
	// The page's own address under BasePath (r.URL is what the mux saw,
	// after any StripPrefix), for polling and for the forms' way back.
	p.Self = h.o.BasePath + strings.TrimPrefix(r.URL.EscapedPath(), "/")
	if r.URL.RawQuery != "" {
		p.Self += "?" + r.URL.RawQuery
	}
	var buf bytes.Buffer
	buf.Grow(64 << 10)
	if err := h.tmpl.ExecuteTemplate(&buf, name, p); err != nil {
		http.Error(w, "anarchon dashboard: "+h.clean(err.Error()), http.StatusInternalServerError)
		return
	}
	out := buf.Bytes()
	if h.redact != nil {
		out = []byte(h.redact.Replace(buf.String()))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

func (h *handler) clean(s string) string {
	if h.redact == nil {
		return s
	}
	return h.redact.Replace(s)
}

// redactStore hides the password of a store URL or DSN and returns it as a
// secret to remove from every page.
func redactStore(store string) (string, []string) {
	if store == "" {
		return "", nil
	}
	var secrets []string
	if u, err := url.Parse(store); err == nil && u.Scheme != "" {
		if p, ok := u.User.Password(); ok && p != "" {
			secrets = append(secrets, p)
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		q := u.Query()
		for k, v := range q {
			if isPasswordKey(k) {
				for _, s := range v {
					if s != "" {
						secrets = append(secrets, s)
					}
				}
				q[k] = []string{"xxxxx"}
			}
		}
		if len(q) > 0 {
			u.RawQuery = q.Encode()
		}
		return u.String(), secrets
	}
	// A key=value DSN: "host=db user=x password=secret".
	fields := strings.Fields(store)
	for i, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok && isPasswordKey(k) {
			v = strings.Trim(v, `'"`)
			if v != "" {
				secrets = append(secrets, v)
			}
			fields[i] = k + "=xxxxx"
		}
	}
	return strings.Join(fields, " "), secrets
}

func isPasswordKey(k string) bool {
	switch strings.ToLower(k) {
	case "password", "pass", "passwd", "pwd", "secret", "token":
		return true
	}
	return false
}

// dashboardBy is who the dashboard of s records as having asked for a
// pause or a resume, and names in its logs as having asked for any action.
func dashboardBy(s *anarchon.Scheduler) string { return "dashboard@" + s.InstanceID() }

// logAction logs one action asked for from the dashboard, so that an
// operator who clicked and saw nothing happen finds why in the logs: at
// INFO ("dashboard action") when it was taken; at WARN "dashboard action
// refused" with the reason when the dashboard did not try it (refuse);
// at WARN "dashboard action failed" with the error when it was tried and
// the action returned one (the store's, or its own validation).
func (h *handler) logAction(ctx context.Context, r *http.Request, act, job string, how slog.Level, msg string, extra ...slog.Attr) {
	attrs := []slog.Attr{slog.String("action", act), slog.String("job", job), slog.String("by", dashboardBy(h.s)), slog.String("client", r.RemoteAddr)}
	h.o.Logger.LogAttrs(ctx, how, msg, append(attrs, extra...)...)
}

// refuse answers an action refused before it was tried, and logs why.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, status int, act, job, reason string) {
	h.logAction(r.Context(), r, act, job, slog.LevelWarn, "dashboard action refused", slog.String("reason", h.clean(reason)))
	http.Error(w, "anarchon dashboard: "+h.clean(reason), status)
}

// ticked reads a checkbox's form value: a browser sends the box's value
// (the pages' boxes say 1; "on" when a box has none) when it is ticked, and
// nothing when not. ok is false for any other value, which the handler
// refuses rather than read as either.
func ticked(v string) (on, ok bool) {
	switch v {
	case "":
		return false, true
	case "1", "on", "true":
		return true, true
	}
	return false, false
}

// maxPauseReason is the longest pause reason the dashboard takes, in
// characters: its field's maxlength, and the handler's bound for a client
// other than the page. The reason is repeated in the record of every slot
// the pause settles and beside the job on every page, so it is a line, not
// a report.
const maxPauseReason = 200

// pauseReasonError says why the dashboard refuses reason (trimmed), or
// returns "" when it takes it. Like the daemon's pause --reason it refuses
// control characters: the pages, the daemon's status and history tables and
// the logs print the reason, and a newline breaks their lines while an
// escape sequence drives an operator's terminal.
func pauseReasonError(reason string) string {
	if n := utf8.RuneCountInString(reason); n > maxPauseReason {
		return fmt.Sprintf("the pause reason is %d characters long, more than the %d the dashboard takes: shorten it; nothing was paused", n, maxPauseReason)
	}
	if !utf8.ValidString(reason) {
		return "the pause reason is not valid UTF-8; nothing was paused"
	}
	if i := strings.IndexFunc(reason, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(reason[i:])
		return fmt.Sprintf("the pause reason has the control character %U at byte %d: give one line of printable text; nothing was paused", r, i)
	}
	return ""
}

// action runs a job action: POST job/NAME/{run,trigger,pause,resume}.
func (h *handler) action(w http.ResponseWriter, r *http.Request) {
	name, act := r.PathValue("name"), r.PathValue("action")
	if h.o.ReadOnly {
		h.refuse(w, r, http.StatusForbidden, act, name, "read-only")
		return
	}
	if err := h.checkCSRF(r); err != nil {
		h.refuse(w, r, http.StatusForbidden, act, name, err.Error())
		return
	}
	if !hasJob(h.s, name) {
		h.refuse(w, r, http.StatusNotFound, act, name, "no job "+name)
		return
	}
	// notOffered refuses an action this dashboard has no func for (or
	// does not know) as a 404, as if it had no such page.
	notOffered := func() {
		h.refuse(w, r, http.StatusNotFound, act, name, "no action "+act+" on this dashboard")
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	var err error
	var msg string
	var extra []slog.Attr // more to log about the action
	switch act {
	case "run":
		if h.act.RunNow == nil {
			notOffered()
			return
		}
		err, msg = h.act.RunNow(ctx, name), "started a run of "+name+" on "+h.s.InstanceID()
	case "trigger":
		if h.act.Trigger == nil {
			notOffered()
			return
		}
		key := r.PostFormValue("key")
		if key == "" {
			key = rand.Text()
		}
		// The form's key is the page's: the same form sent again (a
		// double click, the back button) is the same request, which
		// runs once.
		msg = "triggered " + name + ": a live replica runs it once (key " + key + "; this form sent again runs nothing more)"
		if h.act.TriggerRequest == nil {
			err = h.act.Trigger(ctx, name, key)
			break
		}
		var rec anarchon.TriggerRecord
		var earlier bool
		if rec, earlier, err = h.act.TriggerRequest(ctx, name, key); err == nil && earlier {
			msg = h.clean(earlierTrigger(name, rec))
			extra = []slog.Attr{slog.String("key", key), slog.Bool("earlier", true), slog.String("state", string(rec.State))}
		}
	case "pause":
		if h.act.Pause == nil {
			notOffered()
			return
		}
		// No reason is made up when none was typed: who paused (By,
		// dashboard@INSTANCE) is stored beside it and shown with it, and a
		// made-up reason naming the dashboard again made every record of
		// the pause say who asked twice.
		reason := strings.TrimSpace(r.PostFormValue("reason"))
		if why := pauseReasonError(reason); why != "" {
			h.refuse(w, r, http.StatusBadRequest, act, name, why)
			return
		}
		err, msg = h.act.Pause(ctx, name, reason), "paused "+name
	case "resume":
		if h.act.Resume == nil {
			notOffered()
			return
		}
		catchUp, ok := ticked(r.PostFormValue("catchup"))
		if !ok {
			h.refuse(w, r, http.StatusBadRequest, act, name, "the catchup field is "+strconv.Quote(r.PostFormValue("catchup"))+": a ticked box sends 1, an unticked one nothing; nothing was resumed")
			return
		}
		if !catchUp {
			err, msg = h.act.Resume(ctx, name), "resumed "+name
			break
		}
		if h.act.ResumeCatchUp == nil {
			// Resuming without the catch-up asked for would leave the
			// missed slots unrun while the operator believes one run
			// replaces them.
			h.refuse(w, r, http.StatusBadRequest, act, name, "this dashboard offers no catch-up on resume (its Actions has no ResumeCatchUp): nothing was resumed; untick the box to resume without one")
			return
		}
		var key string
		var resumed bool
		key, resumed, err = h.act.ResumeCatchUp(ctx, name)
		extra = []slog.Attr{slog.Bool("catch_up", true), slog.String("catch_up_key", key)}
		switch {
		case !resumed:
			// Resume with a catch-up leaves a job not paused as it is.
			msg = name + " was not paused: nothing to resume, and no catch-up run was requested"
		case key == "":
			msg = "resumed " + name + "; no catch-up run requested: no slot of it came due while it was paused"
		default:
			// The key as the daemon's resume --catch-up prints it: the
			// catch-up run is a trigger under it, shown as a manual run
			// in the job's slots.
			msg = "resumed " + name + "; catch-up run requested from the replicas under trigger key " + key
		}
	default:
		notOffered()
		return
	}
	// Only a path of this dashboard is followed back: no scheme or host,
	// and no "//" or backslash that a browser would read as a host.
	back := r.PostFormValue("back")
	u, perr := url.Parse(back)
	if back == "" || perr != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(back, h.o.BasePath) ||
		strings.HasPrefix(back, "//") || strings.Contains(back, `\`) {
		u = &url.URL{Path: h.o.BasePath}
	}
	if err != nil {
		h.logAction(ctx, r, act, name, slog.LevelWarn, "dashboard action failed", append(extra, slog.String("error", h.clean(err.Error())))...)
		h.setFlash(w, r, "err", act+" "+name+": "+h.clean(err.Error()))
	} else {
		h.logAction(ctx, r, act, name, slog.LevelInfo, "dashboard action", extra...)
		h.setFlash(w, r, "ok", msg)
	}
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// maxFlashError bounds, in characters, the run's error that the message
// of a trigger sent again quotes: the message travels in a cookie, and
// the job's page shows the whole error.
const maxFlashError = 200

// earlierTrigger is the message of a trigger form whose key the store had
// already (rec, that request's record): that nothing more was requested,
// and where the earlier request stands, so that an operator who sent the
// form again does not take it for a second run.
func earlierTrigger(job string, rec anarchon.TriggerRecord) string {
	msg := "trigger key " + rec.Key + " of " + job + " was requested already"
	if rec.By != "" {
		msg += " by " + rec.By
	}
	msg += " at " + formatTS(rec.RequestedAt) + ", so nothing more was requested: "
	switch rec.State {
	case anarchon.TriggerPending:
		return msg + "it is pending, no replica has taken it yet"
	case anarchon.TriggerRunning:
		return msg + "it is running on " + rec.InstanceID + " since " + formatTS(rec.ClaimedAt)
	case anarchon.TriggerDone:
		if rec.Status == anarchon.StatusCanceled {
			return msg + "it was " + rec.Error
		}
		msg += "it ran on " + rec.InstanceID + " (slot " + formatTS(time.UnixMilli(rec.Slot)) + "): " + string(rec.Status)
		if e, _, _ := strings.Cut(rec.Error, "\n"); e != "" {
			if r := []rune(e); len(r) > maxFlashError {
				e = string(r[:maxFlashError]) + "…"
			}
			msg += ": " + e
		}
		return msg
	}
	return msg + "its state is " + string(rec.State)
}

// The outcome of an action is shown once, on the page the action returns
// to, from a short-lived cookie (not from the address, which anyone could
// write a message into).
const flashCookie = "anarchon_flash"

func (h *handler) setFlash(w http.ResponseWriter, r *http.Request, kind, msg string) {
	http.SetCookie(w, &http.Cookie{
		Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + msg)),
		Path: h.o.BasePath, MaxAge: 60, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil,
	})
}

// takeFlash reads the flash cookie and clears it.
func (h *handler) takeFlash(w http.ResponseWriter, r *http.Request) (ok, bad string) {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return "", ""
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Path: h.o.BasePath, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil})
	raw, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return "", ""
	}
	kind, msg, _ := strings.Cut(string(raw), ":")
	if kind == "err" {
		return "", msg
	}
	return msg, ""
}
