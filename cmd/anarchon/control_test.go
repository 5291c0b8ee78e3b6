package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlitefile"
)

// TestTriggerTimeoutNamesItsKey: a trigger no replica ran within
// --timeout stays pending, and the error says how to wait for that one
// request instead of asking for another run.
func TestTriggerTimeoutNamesItsKey(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "t.cron", "# name: t\n@daily echo t\n")
	writeFile(t, dir, "s.db", "") // trigger never creates the file
	code, _, errOut := cli(t, "trigger", "t", "--crontab", ct, "--store", "sqlite:"+filepath.Join(dir, "s.db"), "--timeout", "200ms", "--key", "k1")
	if want := "wait for it by running this command again with --key k1 (timeout)"; code != 1 || !strings.Contains(errOut, want) ||
		!strings.Contains(errOut, "the store's registry lists no live instance") {
		t.Errorf("exit %d, stderr:\n%s\nwant 1 and %q, saying no instance is live", code, errOut, want)
	}
	// --timeout bounds the wait, not the request: one that ends before
	// the request is stored still stores it and names its key; --json
	// prints the request as it stands.
	code, out, errOut := cli(t, "trigger", "t", "--crontab", ct, "--store", "sqlite:"+filepath.Join(dir, "s.db"), "--timeout", "1ns", "--key", "k2", "--json")
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || !strings.Contains(errOut, "--key k2 (timeout)") ||
		got["key"] != "k2" || got["state"] != "pending" || got["job"] != "t" || got["exit_code"] != nil {
		t.Errorf("--timeout 1ns --json: exit %d, stdout %q (%v), stderr:\n%s\nwant 1, the pending request k2 without an exit code, and its key named", code, out, err, errOut)
	}
	// status lists both requests, still pending.
	code, out, errOut = cli(t, "status", "--store", "sqlite:"+filepath.Join(dir, "s.db"), "--json")
	var rep struct {
		Pending []map[string]string `json:"pending_triggers"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || len(rep.Pending) != 2 ||
		rep.Pending[0]["key"] != "k1" || rep.Pending[1]["key"] != "k2" || rep.Pending[0]["job"] != "t" || rep.Pending[0]["requested_at"] == "" {
		t.Errorf("status --json: exit %d, %v, pending %v, stderr:\n%s\nwant k1 and k2 pending", code, err, rep.Pending, errOut)
	}
	if code, out, _ = cli(t, "status", "--store", "sqlite:"+filepath.Join(dir, "s.db")); code != 0 || !strings.Contains(out, "pending triggers (") || !strings.Contains(out, "  t  key k2  by ") {
		t.Errorf("status: exit %d, stdout:\n%s\nwant the pending requests listed", code, out)
	}
}

// TestReadCommandsKeepFileWarningsAtDebug: the commands that read the job
// files only to know the jobs do not repeat the files' warnings at every
// call; --log-level debug shows them.
func TestReadCommandsKeepFileWarningsAtDebug(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "t.cron", "# name: t\n@daily echo t\n# name: pct\n@hourly echo 50%\n")
	store := "sqlite:" + filepath.Join(dir, "s.db")
	for _, args := range [][]string{{"run-now", "t"}, {"history", "t"}, {"status"}} {
		code, _, errOut := cli(t, append(args, "--crontab", ct, "--store", store)...)
		if code != 0 || strings.Contains(errOut, "warning:") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant 0 and no file warning", args[0], code, errOut)
		}
	}
	code, _, errOut := cli(t, "history", "t", "--crontab", ct, "--store", store, "--log-level", "debug")
	if code != 0 || !strings.Contains(errOut, "level=DEBUG") || !strings.Contains(errOut, "warning:") {
		t.Errorf("history --log-level debug: exit %d, stderr:\n%s\nwant 0 and the file's warning at DEBUG", code, errOut)
	}
}

// TestWhoWithoutUser: pause and trigger record who asked; without $USER
// (a container, a service) that is $LOGNAME, else the uid's own name.
func TestWhoWithoutUser(t *testing.T) {
	t.Setenv("USER", "")
	t.Setenv("LOGNAME", "lg")
	if got := who(); !strings.HasPrefix(got, "lg@") {
		t.Errorf("who() with LOGNAME=lg = %q", got)
	}
	t.Setenv("LOGNAME", "")
	u, err := user.Current()
	if err != nil {
		t.Skipf("no user for uid %d: %v", os.Getuid(), err)
	}
	if got := who(); !strings.HasPrefix(got, u.Username+"@") {
		t.Errorf("who() without USER and LOGNAME = %q, want %s@…", got, u.Username)
	}
}

// takenTrigger makes, in a new SQLite store, what the trigger commands
// find after a replica took a request: a request of job t under key by by,
// claimed by instance with token "tok". then adds to the store what the
// test needs (a registry record, the run's end) before the store is closed
// for the commands to open. It returns the crontab that defines t and the
// store's URL.
func takenTrigger(t *testing.T, key, by, instance string, then func(context.Context, anarchon.Backend, anarchon.TriggerStore)) (ct, store string) {
	t.Helper()
	dir := t.TempDir()
	ct = writeFile(t, dir, "t.cron", "# name: t\n@daily echo t\n")
	store = "sqlite:" + filepath.Join(dir, "s.db")
	b, err := openStore(store)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer func() { _ = b.Close(ctx) }()
	ts, _ := anarchon.As[anarchon.TriggerStore](b)
	if ts == nil {
		t.Fatal("the sqlite store has no TriggerStore")
	}
	if _, err := ts.RequestTrigger(ctx, anarchon.TriggerInput{Job: "t", Key: key, By: by}); err != nil {
		t.Fatal(err)
	}
	if ok, err := ts.ClaimTrigger(ctx, anarchon.ClaimTriggerInput{Job: "t", Key: key, Token: "tok", InstanceID: instance}); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	then(ctx, b, ts)
	return ct, store
}

// TestTriggerRunnerGone: a trigger whose request a replica took and whose
// registry record is dead ends at once with runner_gone, not at
// --timeout; --json prints the request, still running there. --cancel of
// it answers runner_gone too, not taken.
func TestTriggerRunnerGone(t *testing.T) {
	// A replica "ghost" took the request, then died: its record, renewed
	// for the last time with a TTL of a millisecond, is dead.
	ct, store := takenTrigger(t, "k", "test", "ghost", func(ctx context.Context, b anarchon.Backend, _ anarchon.TriggerStore) {
		reg, _ := anarchon.As[anarchon.InstanceRegistry](b)
		if reg == nil {
			t.Fatal("the sqlite store has no InstanceRegistry")
		}
		if err := reg.RegisterInstance(ctx, anarchon.InstanceInfo{ID: "ghost", StartedAt: time.Now().Add(-time.Minute)}, time.Millisecond); err != nil {
			t.Fatal(err)
		}
	})
	code, out, errOut := cli(t, "trigger", "t", "--crontab", ct, "--store", store, "--key", "k", "--timeout", "1h", "--json")
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || got["state"] != "running" || got["instance"] != "ghost" || got["claimed_at"] == nil ||
		!strings.Contains(errOut, "registry record is dead") || !strings.Contains(errOut, "(runner_gone)") {
		t.Errorf("exit %d, stdout %q (%v), stderr:\n%s\nwant 1, the request running on ghost since its claim, and runner_gone", code, out, err, errOut)
	}
	// --cancel says the same, not taken, after the request's record.
	code, out, errOut = cli(t, "trigger", "t", "--store", store, "--cancel", "--key", "k", "--json")
	got = nil
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || got["state"] != "running" || got["instance"] != "ghost" ||
		!strings.Contains(errOut, "not canceled") || !strings.Contains(errOut, "registry record is dead") || !strings.Contains(errOut, "(runner_gone)") {
		t.Errorf("--cancel: exit %d, stdout %q (%v), stderr:\n%s\nwant 1, the request running on ghost, and runner_gone", code, out, err, errOut)
	}
}

// A trigger on a key whose run ended before (a catch-up's key, waited for
// after the catch-up ran) answers that earlier run's result and says it
// was that run, not a new one, and that the job did not run again: not
// "nothing ran", which reads as if the catch-up itself never ran.
func TestTriggerKeyRanEarlier(t *testing.T) {
	key := anarchon.CatchUpKey(anarchon.JobState{At: time.Now().Add(-time.Hour)})
	// r1 took the request and ran it.
	ct, store := takenTrigger(t, key, "ops@h (cli)", "r1", func(ctx context.Context, _ anarchon.Backend, ts anarchon.TriggerStore) {
		if err := ts.FinishTrigger(ctx, anarchon.FinishTriggerInput{Job: "t", Key: key, Token: "tok", Slot: time.Now().UnixMilli(), Status: anarchon.StatusSuccess}); err != nil {
			t.Fatal(err)
		}
	})
	code, out, errOut := cli(t, "trigger", "t", "--crontab", ct, "--store", store, "--key", key, "--timeout", "1s")
	if code != 0 || !strings.Contains(out, "t ran on r1") || !strings.Contains(out, "key "+key+" had run already") ||
		!strings.Contains(out, "the result above is of that earlier run") || !strings.Contains(out, "this trigger did not run the job again") ||
		strings.Contains(out, "nothing ran") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant the earlier run's result, said to be that run's, and that the job did not run again", code, out, errOut)
	}
}

// TestTriggerCancel: trigger --cancel withdraws a pending request, which
// then never runs; a wait for it says it was canceled; a second cancel
// says so again; a request a replica took is not canceled (taken); an
// unknown key is unknown_key; --cancel without --key is a usage error.
func TestTriggerCancel(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "t.cron", "# name: t\n@daily echo t\n")
	store := "sqlite:" + writeFile(t, dir, "s.db", "") // trigger never creates the file
	if code, _, errOut := cli(t, "trigger", "t", "--crontab", ct, "--store", store, "--timeout", "1ms", "--key", "k"); code != 1 {
		t.Fatalf("trigger: exit %d, %s", code, errOut)
	}
	code, out, errOut := cli(t, "trigger", "t", "--store", store, "--cancel", "--key", "k")
	if code != 0 || !strings.Contains(out, "t: trigger k canceled (canceled by ") {
		t.Errorf("cancel: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	code, out, errOut = cli(t, "trigger", "t", "--crontab", ct, "--store", store, "--key", "k", "--json")
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || got["state"] != "done" || got["status"] != "canceled" ||
		!strings.Contains(errOut, "did not run: canceled by ") || !strings.Contains(errOut, "(canceled)") {
		t.Errorf("wait for a canceled request: exit %d, stdout %q (%v), stderr %s", code, out, err, errOut)
	}
	if code, out, _ = cli(t, "trigger", "t", "--store", store, "--cancel", "--key", "k", "--json"); code != 0 || !strings.Contains(out, `"status": "canceled"`) {
		t.Errorf("second cancel: exit %d, stdout %q", code, out)
	}
	if code, _, errOut = cli(t, "trigger", "t", "--store", store, "--cancel", "--key", "nope"); code != 1 || !strings.Contains(errOut, `--key "nope" (unknown_key)`) {
		t.Errorf("unknown key: exit %d, stderr %s", code, errOut)
	}
	for _, args := range [][]string{{"--cancel"}, {"--cancel", "--key", ""}, {"--key", ""}, {"--cancel", "--key", "k", "--timeout", "5s"}} {
		if code, _, errOut = cli(t, append([]string{"trigger", "t", "--store", store}, args...)...); code != 2 || !strings.Contains(errOut, "(bad_flag)") {
			t.Errorf("%v: exit %d, stderr %s; want bad_flag", args, code, errOut)
		}
	}
	// A request a replica took goes on.
	b, err := openStore(store)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ts, _ := anarchon.As[anarchon.TriggerStore](b)
	if _, err := ts.RequestTrigger(ctx, anarchon.TriggerInput{Job: "t", Key: "r"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := ts.ClaimTrigger(ctx, anarchon.ClaimTriggerInput{Job: "t", Key: "r", Token: "tok", InstanceID: "web-1"}); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	_ = b.Close(ctx)
	if code, _, errOut = cli(t, "trigger", "t", "--store", store, "--cancel", "--key", "r"); code != 1 || !strings.Contains(errOut, "running on web-1") || !strings.Contains(errOut, "(taken)") {
		t.Errorf("cancel of a taken request: exit %d, stderr %s", code, errOut)
	}
}

// TestWriteCommandsUnreachableStore: a command that writes to a store it
// cannot reach ends with open_failed, naming the store, and the client's
// retry warnings are not printed before it (they were, and the error had
// no code).
func TestWriteCommandsUnreachableStore(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "t.cron", "# name: t\n@daily echo t\n")
	for _, args := range [][]string{
		{"trigger", "t", "--timeout", "5s"}, {"trigger", "t", "--cancel", "--key", "k"},
		{"pause", "t"}, {"resume", "t"}, {"run-now", "t"},
	} {
		code, _, errOut := cli(t, append(args, "--crontab", ct, "--store", "redis://127.0.0.1:1/0")...)
		if code != 1 || !strings.HasPrefix(errOut, "anarchon: store URL \"redis://127.0.0.1:1/0\": ") || !strings.Contains(errOut, "(open_failed)") || strings.Contains(errOut, "WARN") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant 1, open_failed, no client warnings", strings.Join(args, " "), code, errOut)
		}
	}
}

// TestHistoryRunOfGoneInstance: history and status say, of a run still
// recorded running, that its instance is gone by the registry (dead, or
// started again after the claim), and say nothing of a run whose
// instance is live and the same process.
func TestHistoryRunOfGoneInstance(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "t.cron", "# name: dead\n@daily echo\n# name: again\n@daily echo\n# name: alive\n@daily echo\n")
	store, b := newSQLiteStore(t, dir)
	ctx := context.Background()
	reg, _ := anarchon.As[anarchon.InstanceRegistry](b)
	claimed := time.Now().Add(-time.Minute)
	for _, in := range []struct {
		id      string
		started time.Time
		ttl     time.Duration
	}{
		{"ghost", claimed.Add(-time.Minute), time.Millisecond}, // dead
		{"reborn", time.Now().Add(5 * time.Second), time.Hour}, // started after the claim (the store's time of it: now)
		{"worker", claimed.Add(-time.Minute), time.Hour},       // live, the same process
	} {
		if err := reg.RegisterInstance(ctx, anarchon.InstanceInfo{ID: in.id, StartedAt: in.started}, in.ttl); err != nil {
			t.Fatal(err)
		}
	}
	for job, inst := range map[string]string{"dead": "ghost", "again": "reborn", "alive": "worker"} {
		if ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: job, Slot: claimed.UnixMilli(), Token: "tok-" + job, InstanceID: inst, HistorySize: 10}); !ok || err != nil {
			t.Fatalf("claim %s: %v %v", job, ok, err)
		}
	}
	_ = b.Close(ctx)
	for job, want := range map[string]string{"dead": "ghost's registry record is dead since", "again": "reborn started again at", "alive": ""} {
		code, out, errOut := cli(t, "history", job, "--store", store)
		if code != 0 || !strings.Contains(out, "running") || (want == "") == strings.Contains(out, "no result yet") || !strings.Contains(out, want) {
			t.Errorf("history %s: exit %d, stdout:\n%s%s\nwant the running run and %q", job, code, out, errOut, want)
		}
		code, out, _ = cli(t, "history", job, "--store", store, "--json")
		var recs []map[string]any
		if err := json.Unmarshal([]byte(out), &recs); err != nil || code != 0 || len(recs) != 1 {
			t.Fatalf("history %s --json: exit %d, %v:\n%s", job, code, err, out)
		}
		if got, _ := recs[0]["instance_gone"].(string); !strings.Contains(got, want) || (want == "") != (got == "") {
			t.Errorf("history %s --json: instance_gone %q, want %q", job, got, want)
		}
	}
	code, out, errOut := cli(t, "status", "--crontab", ct, "--store", store)
	if code != 0 || !strings.Contains(out, "running on ghost: no result yet, and ghost's registry record is dead") ||
		!strings.Contains(out, "running on reborn: no result yet, and reborn started again") || strings.Contains(out, "running on worker:") {
		t.Errorf("status: exit %d, stdout:\n%s%s\nwant the runs of ghost and reborn noted, worker's not", code, out, errOut)
	}
}

// pause --json of a job paused already, and resume --json of one that is
// not paused, say "unchanged" (the text form says "nothing changed"); the
// first pause's reason stays. A resume that changed nothing prints no
// by and at: those of the stored state are an earlier command's.
func TestPauseJSONUnchanged(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "t.cron", "# name: t\n@daily echo\n")
	store := "sqlite:" + writeFile(t, dir, "s.db", "")
	for i, tc := range []struct {
		args      []string
		unchanged bool
		reason    string
	}{
		{[]string{"pause", "t", "--reason", "first"}, false, "first"},
		{[]string{"pause", "t", "--reason", "second"}, true, "first"},
		{[]string{"resume", "t"}, false, ""},
		{[]string{"resume", "t"}, true, ""},
	} {
		code, out, errOut := cli(t, append(tc.args, "--crontab", ct, "--store", store, "--json")...)
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
			t.Fatalf("%d %q: exit %d, %v:\n%s%s", i, tc.args, code, err, out, errOut)
		}
		if u, _ := got["unchanged"].(bool); u != tc.unchanged || (got["reason"] != nil) != (tc.reason != "") || (tc.reason != "" && got["reason"] != tc.reason) {
			t.Errorf("%d %q: %v; want unchanged %v, reason %q", i, tc.args, got, tc.unchanged, tc.reason)
		}
		if stale := tc.unchanged && tc.args[0] == "resume"; stale != (got["by"] == nil) || stale != (got["at"] == nil) || got["job"] != "t" || got["paused"] != false && tc.args[0] == "resume" {
			t.Errorf("%d %q: %v; want job t, and by and at only when the command changed the state or the job is paused", i, tc.args, got)
		}
	}
}

// pause --reason is one line of at most 200 characters (maxReason, as on
// the dashboard): a longer one, or one that is not UTF-8, is refused
// before the store is touched, as a bad flag; 200 characters of several
// bytes each are taken.
func TestPauseReasonBounds(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "t.cron", "# name: t\n@daily echo\n")
	store := "sqlite:" + writeFile(t, dir, "s.db", "")
	for _, tc := range []struct {
		reason string
		exit   int
		want   string
	}{
		{strings.Repeat("x", 201), 2, "--reason is 201 characters long, more than the 200 a pause reason may have: shorten it; nothing was paused (bad_flag)"},
		{"bad \xff byte", 2, "--reason is not valid UTF-8: give one line of printable text; nothing was paused (bad_flag)"},
		{strings.Repeat("é", 200), 0, "t paused by "},
	} {
		code, out, errOut := cli(t, "pause", "t", "--reason", tc.reason, "--crontab", ct, "--store", store)
		if code != tc.exit || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("reason of %d bytes: exit %d, want %d and %q in:\n%s%s", len(tc.reason), code, tc.exit, tc.want, out, errOut)
		}
	}
	code, out, errOut := cli(t, "status", "--crontab", ct, "--store", store, "--json")
	if code != 0 || strings.Count(out, strings.Repeat("é", 200)) != 1 || strings.Contains(out, "xxx") {
		t.Errorf("status: exit %d, want the 200 characters' pause alone:\n%s%s", code, out, errOut)
	}
}

// resume --catch-up names the trigger key of the catch-up run it
// requested (anarchon.CatchUpKey of the pause), in text and JSON, and
// that key's request is pending.
//
// A pause that covered no slot of the job is resumed with no catch-up
// requested, and the command says why.
func TestResumeCatchUpNamesKey(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "t.cron", "# name: t\n@daily echo\n")
	file := writeFile(t, dir, "s.db", "")
	store := "sqlite:" + file
	if code, out, errOut := cli(t, "pause", "t", "--crontab", ct, "--store", store); code != 0 {
		t.Fatalf("pause: exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut := cli(t, "resume", "t", "--catch-up", "--crontab", ct, "--store", store)
	if want := "no catch-up run requested: no slot of the job came due while it was paused"; code != 0 || !strings.Contains(out, "t resumed by ") || !strings.Contains(out, want) {
		t.Errorf("resume --catch-up of a pause of no slot: exit %d, want it resumed and %q:\n%s%s", code, want, out, errOut)
	}
	key := pauseAcrossSlots(t, ct, store, file)
	code, out, errOut = cli(t, "resume", "t", "--catch-up", "--crontab", ct, "--store", store)
	if code != 0 || !strings.Contains(out, "catch-up run requested from the replicas under trigger key "+key+`; "anarchon trigger t --key `+key+`"`) {
		t.Errorf("resume --catch-up: exit %d, want the key %s named:\n%s%s", code, key, out, errOut)
	}
	if code, out, _ = cli(t, "status", "--store", store); code != 0 || !strings.Contains(out, "key "+key) {
		t.Errorf("status: exit %d, want the request %s pending:\n%s", code, key, out)
	}
}

// pauseAcrossSlots pauses job t of the crontab ct on the SQLite store at
// file and moves the pause's time two days back in the store, so that it
// covers slots of a daily job, as a pause of two days would. It returns
// the key of the catch-up run a resume requests (anarchon.CatchUpKey).
func pauseAcrossSlots(t *testing.T, ct, store, file string) string {
	t.Helper()
	code, out, errOut := cli(t, "pause", "t", "--crontab", ct, "--store", store, "--json")
	var paused map[string]any
	if err := json.Unmarshal([]byte(out), &paused); err != nil || code != 0 {
		t.Fatalf("pause: exit %d, %v:\n%s%s", code, err, out, errOut)
	}
	at, err := time.Parse(time.RFC3339, paused["at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	const back = 48 * time.Hour
	db, err := sql.Open(sqlitefile.DriverName, "file:"+file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("UPDATE anarchon_control SET set_at = set_at - ? WHERE job = 't'", back.Milliseconds()); err != nil {
		t.Fatal(err)
	}
	return anarchon.CatchUpKey(anarchon.JobState{At: at.Add(-back)})
}

// resume --catch-up whose resume was stored but whose catch-up request
// the store refused names the key to request it under in its error: run
// again, it would find the job not paused and request nothing.
func TestResumeCatchUpHalfDone(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "t.cron", "# name: t\n@daily echo\n")
	file := writeFile(t, dir, "s.db", "")
	store := "sqlite:" + file
	key := pauseAcrossSlots(t, ct, store, file)
	// The store refuses every trigger request from here on.
	db, err := sql.Open(sqlitefile.DriverName, "file:"+file)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec("CREATE TRIGGER refuse_requests BEFORE INSERT ON anarchon_triggers BEGIN SELECT RAISE(ABORT, 'requests refused'); END")
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, "resume", "t", "--catch-up", "--crontab", ct, "--store", store)
	if want := `t resumed, but the catch-up run was not requested: request it with "anarchon trigger t --key ` + key + `"`; code == 0 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "requests refused") {
		t.Errorf("resume --catch-up whose request failed: exit %d, want an error with %q:\n%s%s", code, want, out, errOut)
	}
	if code, out, errOut = cli(t, "resume", "t", "--catch-up", "--crontab", ct, "--store", store); code != 0 || !strings.Contains(out, "t is not paused: nothing to resume") {
		t.Errorf("second resume --catch-up: exit %d, want the job not paused:\n%s%s", code, out, errOut)
	}
}

// status shows, beside a job's last record, its last run when the last
// record is a slot not run (skipped here): whether the job's runs succeed
// is not hidden behind skipped slots.
func TestStatusLastRun(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "t.cron", "# name: j\n@daily echo\n# name: k\n@daily echo\n")
	store, b := newSQLiteStore(t, dir)
	ctx := context.Background()
	slot := time.Now().Add(-time.Hour).Truncate(time.Minute)
	save := func(job string, at time.Time, tok string, st anarchon.Status, why string) {
		r := anarchon.StoredResult{Slot: at.UnixMilli(), Token: tok, InstanceID: "w", Attempt: 1, Status: st, Error: why}
		if st == anarchon.StatusSuccess {
			r.StartedAt, r.FinishedAt = at, at.Add(time.Second)
		}
		if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: r, HistorySize: 10}); err != nil {
			t.Fatal(err)
		}
	}
	save("j", slot, "t1", anarchon.StatusSuccess, "")
	save("j", slot.Add(time.Minute), "t2", anarchon.StatusSkipped, "another run held it")
	save("k", slot, "t3", anarchon.StatusSuccess, "")
	_ = b.Close(ctx)
	code, out, errOut := cli(t, "status", "--store", store, "--crontab", ct)
	if code != 0 || !strings.Contains(out, "last:     slot "+formatTime(slot.Add(time.Minute))+" skipped on w: another run held it") ||
		!strings.Contains(out, "last run: slot "+formatTime(slot)+" success on w") || strings.Count(out, "last run:") != 1 {
		t.Errorf("status: exit %d\n%s%s\nwant j's skipped slot and its last run, and k's last record alone", code, out, errOut)
	}
	// The lines under a job, "last run:" among them, start their text in
	// one column.
	label := regexp.MustCompile(`(?m)^  ([a-z][a-z ]*:) +`)
	cols := map[int][]string{}
	for _, m := range label.FindAllString(out, -1) {
		cols[len(m)] = append(cols[len(m)], m)
	}
	if len(cols) != 1 {
		t.Errorf("status: the job lines' text starts in %d columns (%v):\n%s", len(cols), cols, out)
	}
}

// newSQLiteStore opens and initialises an SQLite store s.db in dir, for a
// test to write records into before the commands read them; it returns
// the store's URL and the open backend, which the test closes.
func newSQLiteStore(t *testing.T, dir string) (string, anarchon.Backend) {
	t.Helper()
	store := "sqlite:" + filepath.Join(dir, "s.db")
	b, err := openStore(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return store, b
}

// status's paused and pending-trigger lists align their columns whatever
// the jobs' names' lengths: each list's "by" (and "key") starts in one
// column.
func TestStatusListsAligned(t *testing.T) {
	rep := statusReport{
		Paused: []stateJSON{
			{Job: "hourly-report", Paused: true, By: "root@vm (cli)", At: "2026-12-07T12:29:51.610Z", Reason: "a b"},
			{Job: "tick", Paused: true, By: "root@vm (cli)", At: "2026-12-07T12:30:09.141Z", Reason: "short"},
		},
		PendingTriggers: []pendingTriggerJSON{
			{Job: "hourly-report", Key: "k", By: "x", RequestedAt: "2026-12-07T12:29:51.610Z"},
			{Job: "tick", Key: "a-longer-key", By: "y", RequestedAt: "2026-12-07T12:30:09.141Z"},
		},
	}
	var b strings.Builder
	printPaused(&b, rep)
	printPendingTriggers(&b, rep)
	column := func(line, word string) int { return strings.Index(line, word) }
	lines := strings.Split(b.String(), "\n")
	var paused, pending []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "  ") && strings.Contains(l, " key "):
			pending = append(pending, l)
		case strings.HasPrefix(l, "  "):
			paused = append(paused, l)
		}
	}
	if len(paused) != 2 || len(pending) != 2 {
		t.Fatalf("lists:\n%s", b.String())
	}
	if column(paused[0], " by ") != column(paused[1], " by ") {
		t.Errorf("paused lines not aligned:\n%s", b.String())
	}
	if column(pending[0], " key ") != column(pending[1], " key ") || column(pending[0], " by ") != column(pending[1], " by ") {
		t.Errorf("pending trigger lines not aligned:\n%s", b.String())
	}
	if want := "  tick           by root@vm (cli) at 2026-12-07T12:30:09.141Z: short"; !strings.Contains(b.String(), want) {
		t.Errorf("want %q in:\n%s", want, b.String())
	}
}
