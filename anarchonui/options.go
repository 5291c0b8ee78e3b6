package anarchonui

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/anarchon/anarchon"
)

// Options configure the dashboard. A nil *Options, and each zero field,
// means the default stated on the field.
type Options struct {
	// BasePath is the path the handler is mounted at, with a trailing
	// slash, e.g. "/ui/"; the pages link to each other under it. Mount the
	// handler with http.StripPrefix(strings.TrimSuffix(BasePath, "/"), h).
	// Defaults to "/".
	BasePath string
	// ReadOnly hides every action and refuses every POST with 403 (each
	// refusal logged, see Logger).
	// Defaults to false.
	ReadOnly bool
	// Auth says who may see the dashboard and act on it. See [Auth].
	Auth Auth
	// Actions are what the action buttons do. nil means run now through
	// the scheduler ([DefaultActions]) and nothing else.
	Actions *Actions
	// Store describes the store on the pages, e.g. the daemon's store URL.
	// A password in it (a URL's user information, or a password=… or
	// pass=… setting) is replaced by "xxxxx", and the password is removed
	// from every page, wherever else it appears (an error message, a job's
	// output). Defaults to the backend's Name.
	Store string
	// Secrets are more strings that never appear on a page; each is
	// replaced by "xxxxx". Defaults to none.
	Secrets []string
	// Refresh is how often the pages refresh their tables (htmx polling;
	// without JavaScript, a meta refresh at five times this period). A
	// negative Refresh turns refreshing off. Defaults to 2 s.
	Refresh time.Duration
	// PageSize is how many slots the job page shows at a time; older
	// slots are a link away. Defaults to 100.
	PageSize int
	// CSRFKey signs the CSRF tokens. Replicas behind one load balancer
	// that should accept each other's forms share a key. Defaults to 32
	// random bytes drawn when the handler is created.
	CSRFKey []byte
	// Now is the local clock. Defaults to time.Now.
	Now func() time.Time
	// Logger gets one record per action asked for from the dashboard, so
	// that a pause or a trigger made there is in the logs, and so is one
	// that was not made: INFO "dashboard action" for an action taken; WARN
	// "dashboard action refused" with its reason for one the dashboard
	// did not try (read-only, a CSRF or cross-origin check, an unknown job
	// or action, a pause reason too long or with a control character);
	// WARN "dashboard action failed" with the error for one whose func
	// returned one (a validation, the store's refusal). Each names the
	// action, the job, who asked as the dashboard records it ("by":
	// dashboard@INSTANCE) and the client's address. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// Auth configures authentication. The dashboard needs none for a request
// that came in on a loopback connection (local and remote address both
// loopback) unless Required is set; any other request must carry the
// configured credentials, and is refused with 403 when none are
// configured. Both reading and acting need them: run output and errors may
// be sensitive.
//
// Behind a reverse proxy on the same host every request arrives on
// loopback: set Required there.
type Auth struct {
	// Token, if set, is accepted as "Authorization: Bearer <token>", and as
	// the password of HTTP basic authentication with any user name.
	Token string
	// User and Password, if Password is set, are accepted as HTTP basic
	// authentication.
	User, Password string
	// Required makes loopback requests authenticate too.
	Required bool
}

// configured reports whether any credentials are set.
func (a Auth) configured() bool { return a.Token != "" || a.Password != "" }

// AuthFromEnv reads credentials from the environment:
// ANARCHON_UI_TOKEN (Auth.Token), ANARCHON_UI_USER and
// ANARCHON_UI_PASSWORD (Auth.User and Auth.Password).
func AuthFromEnv() Auth {
	return Auth{
		Token:    os.Getenv("ANARCHON_UI_TOKEN"),
		User:     os.Getenv("ANARCHON_UI_USER"),
		Password: os.Getenv("ANARCHON_UI_PASSWORD"),
	}
}

// Actions are what the dashboard's buttons do. A nil func hides its button
// and refuses its POST with 404, so a store without pause or trigger shows
// neither. Each func returns when the action is accepted (a run started, a
// pause stored); its error is shown on the page.
type Actions struct {
	// RunNow runs job once, now, on this instance.
	RunNow func(ctx context.Context, job string) error
	// Trigger asks the cluster to run job once; requests with the same key
	// run it once however often they are sent (the dashboard draws a key
	// per rendered button, so a double click runs once).
	Trigger func(ctx context.Context, job, key string) error
	// TriggerRequest, when set beside Trigger, is what the Trigger button
	// calls in its place: it requests as Trigger does and returns the
	// request's record, with earlier true when the store had a request
	// under key already (the same form sent again: a reload that posts it
	// anew, the back button), rec then being that earlier request's
	// record, whatever its state. The page then says that the key was
	// requested before, by whom and when, and where that request stands
	// (pending, running on a replica, done with its status, canceled),
	// instead of presenting the repeat as a new request (SPEC §12: one run
	// per key). It is a field of its own so that an Actions written before
	// it still compiles; without it the page says "triggered" every time.
	// [DefaultActions] sets it beside Trigger: code that wraps the
	// defaults' Trigger (to audit or authorize it) must wrap
	// TriggerRequest too, or set it to nil.
	TriggerRequest func(ctx context.Context, job, key string) (rec anarchon.TriggerRecord, earlier bool, err error)
	// Pause pauses job cluster-wide. reason is what the operator typed
	// into the field beside the button (the POST's reason field), trimmed,
	// and empty when nothing was typed; the handler refuses, without
	// calling Pause, one longer than 200 characters or with a control
	// character. Recording who asked is Pause's ([DefaultActions] records
	// dashboard@INSTANCE).
	Pause func(ctx context.Context, job, reason string) error
	// Resume resumes a paused job, without a catch-up: the slots it missed
	// while paused stay paused.
	Resume func(ctx context.Context, job string) error
	// ResumeCatchUp resumes a paused job and requests one run in place of
	// the slots it missed while paused (as [anarchon.ResumeOptions]
	// CatchUp); it is what Resume does when the operator ticks the "catch
	// up" box beside the Resume button. resumed says whether the job was
	// paused and is now resumed; key is the trigger key of the catch-up
	// run requested, shown to the operator so that it can be followed
	// ([anarchon.Scheduler.WaitTrigger], the daemon's trigger JOB --key
	// KEY), or "" when none was (the job was not paused, or no slot of it
	// came due while it was paused: [anarchon.ResumeOptions]). When the
	// resume was stored and only the catch-up's request failed, it returns
	// the key with the error ([DefaultActions] does), since the job is no
	// longer paused and a second try would request nothing. It is a
	// field of its own rather than a parameter of Resume so that an Actions
	// written before it still compiles: nil hides the box, and the handler
	// refuses a resume that asks for a catch-up rather than resume without
	// one. The box is shown only beside Resume. [DefaultActions] sets it
	// beside Resume, calling the scheduler itself: code that wraps the
	// defaults' Resume (to audit or authorize it) must wrap ResumeCatchUp
	// too, or set it to nil.
	ResumeCatchUp func(ctx context.Context, job string) (key string, resumed bool, err error)
	// Paused reports whether job is paused, with a note to show (who, when,
	// why). nil: the jobs page has no paused column.
	Paused func(ctx context.Context, job string) (paused bool, note string, err error)
}
