// Package anarchonui is a dashboard for an anarchon scheduler, as an
// http.Handler to mount in any HTTP server; the anarchon daemon serves it
// at /ui/ on its --http address.
//
// # Pages
//
//   - Jobs (the base path): each job's schedule and zone, options after
//     defaults, next slots, last outcome and last success, and its paused
//     state when [Actions.Paused] is set; a paused job's next slots are
//     marked paused, since each will be recorded paused when due unless
//     the job is resumed first (SPEC §12). The job's page marks them too.
//   - A job (job/NAME): one row per slot, newest first, PageSize slots a
//     page, with the slot's attempts inside newest first, as the history
//     lists them — instance, status, start, duration, error and output
//     tail — so a takeover reads attempt 2 success above attempt 1
//     lease_lost.
//   - Leases (leases): the unfinished runs of leased jobs, with holder,
//     attempt, state and time left by the store's clock.
//   - Replicas (replicas): the store's instance registry (live, dead or
//     stopped by the store's clock, version, host, clock offset, tzdata
//     release, job-set fingerprint), with the live instances whose job set
//     differs from the majority's highlighted.
//
// Every time the pages show is in one format, UTC to the millisecond
// ("2026-03-01 10:05:00.000Z"); the next slots of a job with a zone
// carry its wall time as a tooltip, and a replica's last renewal is
// followed by how long ago it was, as additions only.
//
// The pages are rendered on the server from embedded templates and read
// the scheduler and its store on every request; without JavaScript they
// are complete, and refresh with a meta refresh. With JavaScript the tables
// refresh in place every Options.Refresh by htmx 2.0.11, from the npm
// registry, embedded unchanged (static/htmx.VERSION names its checksum,
// static/htmx.LICENSE its license, Zero-Clause BSD).
//
// # Actions
//
// [DefaultActions] offers run now ([anarchon.Scheduler.RunNow] in the
// background) always, pause and resume (cluster-wide, through
// [anarchon.Scheduler.Pause] and Resume) when the store keeps job control,
// and trigger ([anarchon.Scheduler.RequestTrigger]: one run per key on a
// live replica) when it keeps triggers; an [Actions] given in Options
// replaces them, and an action whose func is nil is hidden.
//
// Pause has an optional reason field beside it (up to 200 characters, no
// control characters: the handler refuses, and logs, any other), stored
// with the pause and shown as "paused by dashboard@INSTANCE at T: REASON".
// Resume has a "catch up" box beside it when the store keeps triggers too
// ([Actions.ResumeCatchUp]): ticked, the resume requests one run in place
// of the slots the job missed while paused ([anarchon.ResumeOptions]
// CatchUp), and the page's message names the trigger key of that run,
// resume-<pause time in Unix ms> ([anarchon.CatchUpKey]), so that it can be
// followed; a pause that covered no slot of the job requests no run, and a
// job that was not paused is left as it is, which the message says. A
// ticked box that the Actions cannot honour is refused, not read as a
// plain resume.
//
// Each rendered Trigger form carries a key of its own, so the same form
// sent again (a double click, a reload that posts it anew, the back
// button) is the same request and runs nothing more; the page then says
// that the key was requested already, by whom and when, and where that
// request stands: pending, running on a replica, done with its status,
// or canceled ([Actions.TriggerRequest]).
//
// Actions are POST forms guarded against cross-site requests twice:
// net/http's CrossOriginProtection refuses requests a browser marks
// cross-origin, and each form carries a token that must equal its cookie
// and bear the handler's signature. Options.ReadOnly removes them all.
//
// # Authentication
//
// A request that comes in on loopback (local and remote address both
// loopback) needs no credentials unless Auth.Required is set; every other
// request needs the configured token (bearer, or as a basic-auth password)
// or user and password, and is refused with 403 when none are configured.
// [AuthFromEnv] reads them from ANARCHON_UI_TOKEN, ANARCHON_UI_USER and
// ANARCHON_UI_PASSWORD.
//
// # Secrets
//
// The password of Options.Store (a URL's user information or a password=
// setting) is shown as "xxxxx", and removed from the whole page wherever
// else it appears, as are Options.Secrets.
//
// # Performance
//
// The page of a job whose store keeps 10,000 history records takes about
// 20 to 30 ms of CPU on the memory store (BenchmarkJobPage10k/first): the read
// and the grouping into slots cost more than the 100 rows it renders.
// Rendering all 7,500 slots of those records on one page takes 220 to 260
// ms (BenchmarkJobPage10k/all), which is why the page shows PageSize slots.
package anarchonui
