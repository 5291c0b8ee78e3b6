package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

func TestParseRetry(t *testing.T) {
	src := `- name: flaky
  schedule: "@hourly"
  shell: exit 3
  retry:
    max_retries: 4
    initial_backoff: 10s
    max_backoff: 2m
    multiplier: 1.5
    jitter: 1s
    permanent_exit_codes: [2, 64]
`
	jobs, errs := parseConfig("r.yaml", []byte(src))
	if len(errs) > 0 || len(jobs) != 1 {
		t.Fatalf("jobs %v errors %v", jobs, errs)
	}
	want := anarchon.Retry{MaxRetries: 4, InitialBackoff: 10 * time.Second, MaxBackoff: 2 * time.Minute, Multiplier: 1.5, Jitter: time.Second}
	if got := jobs[0].Options.Retry; got != want {
		t.Errorf("retry %+v, want %+v", got, want)
	}
	if !slices.Equal(jobs[0].PermanentExit, []int{2, 64}) {
		t.Errorf("permanent exit codes %v", jobs[0].PermanentExit)
	}
	if errs := checkJobs(jobs); len(errs) > 0 {
		t.Errorf("registration: %v", errs)
	}

	for _, tc := range []struct{ name, retry, want string }{
		{"negative backoff", "{max_retries: 1, initial_backoff: -1s}", `r.yaml:4: job "a": retry.initial_backoff: -1s is negative`},
		{"negative max backoff", "{max_retries: 1, max_backoff: -5s}", `r.yaml:4: job "a": retry.max_backoff: -5s is negative`},
		{"negative retries", "{max_retries: -1}", `r.yaml:4: job "a": retry.max_retries: -1 is negative`},
		{"not a mapping", "3", `r.yaml:4: job "a": retry: want a mapping`},
		{"bad code", "{max_retries: 1, permanent_exit_codes: [0]}", `retry.permanent_exit_codes: "0"`},
		{"unknown key", "{max_retry: 1}", `retry: unknown key "max_retry"`},
		{"multiplier", "{max_retries: 1, multiplier: x}", `retry.multiplier: "x" is not a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs, errs := parseConfig("r.yaml", []byte("- name: a\n  schedule: '@daily'\n  shell: date\n  retry: "+tc.retry+"\n"))
			if len(errs) == 0 {
				errs = checkJobs(jobs)
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Fatalf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}

// A command that exits with a permanent exit code returns an error marked
// anarchon.Permanent (not retried); other exits are retried.
func TestPermanentExitCode(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := &executor{log: log, instance: "test-1", grace: time.Second}
	for _, tc := range []struct {
		code      string
		permanent bool
	}{{"2", true}, {"3", false}} {
		j := &jobSpec{Name: "x", Schedule: "@daily", Argv: []string{"/bin/sh", "-c", "exit " + tc.code}, PermanentExit: []int{2}}
		err := e.handler(j)(context.Background(), &anarchon.Run{Job: "x", Slot: time.Now(), Attempt: 1})
		if err == nil || err.Error() != "exit status "+tc.code || anarchon.IsPermanent(err) != tc.permanent {
			t.Errorf("exit %s: error %v, permanent %v, want %v", tc.code, err, anarchon.IsPermanent(err), tc.permanent)
		}
	}
}

func TestParseAt(t *testing.T) {
	future := time.Now().Add(time.Hour).Truncate(time.Second)
	src := "- name: once\n  at: " + future.In(time.FixedZone("", 2*3600)).Format(time.RFC3339) + "\n  shell: date\n"
	jobs, errs := parseConfig("a.yaml", []byte(src))
	if len(errs) > 0 || len(jobs) != 1 || !jobs[0].At.Equal(future) {
		t.Fatalf("jobs %+v errors %v, want one at %v", jobs, errs, future)
	}
	if errs := checkJobs(jobs); len(errs) > 0 {
		t.Fatalf("registration: %v", errs)
	}

	// A time already past: a warning, the job is not scheduled.
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	jobs, errs = parseConfig("a.yaml", []byte("- name: old\n  at: "+past+"\n  shell: date\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	errs = checkJobs(jobs)
	hard, warns := splitWarnings(errs)
	if len(hard) != 0 || len(warns) != 1 || !strings.Contains(warns[0].Error(), `a.yaml:2: warning: job "old": at:`) {
		t.Fatalf("errors %v warnings %v, want one warning at line 2", hard, warns)
	}

	for _, tc := range []struct{ name, src, want string }{
		{"both", "- name: a\n  schedule: '@daily'\n  at: 2030-01-01T00:00:00Z\n  shell: date\n", `a.yaml:3: job "a": give schedule or at, not both`},
		{"bad time", "- name: a\n  at: tomorrow\n  shell: date\n", `a.yaml:2: job "a": at: "tomorrow" is not an RFC 3339 time`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := parseConfig("a.yaml", []byte(tc.src))
			if len(errs) == 0 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}

// A one-off job whose time has passed does not stop the daemon: run and
// reload log it as a WARN with its file:line and schedule the other jobs.
func TestRunWithPastAt(t *testing.T) {
	dir := t.TempDir()
	past := time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)
	cfg := writeFile(t, dir, "jobs.yaml", "- name: minute\n  schedule: '* * * * *'\n  shell: date\n- name: once\n  at: "+past+"\n  shell: date\n")
	g := &globalFlags{store: "sqlite:" + filepath.Join(dir, "a.db"), configs: []string{cfg}, format: formatAuto, instance: "b3"}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	d, err := openDaemon(g, log, slog.LevelWarn, nil, 0, 5*time.Second, 0)
	if err != nil {
		t.Fatalf("openDaemon: %v", err)
	}
	defer d.close()
	names := func() (spec, sched []string) {
		for _, j := range d.jobList() {
			spec = append(spec, j.Name)
		}
		for _, j := range d.sched.Jobs() {
			sched = append(sched, j.Name)
		}
		return spec, sched
	}
	if spec, sched := names(); !slices.Equal(spec, []string{"minute"}) || !slices.Equal(sched, []string{"minute"}) {
		t.Fatalf("jobs %v, scheduled %v, want only minute", spec, sched)
	}
	warn := `jobs.yaml:5: warning: job \"once\": at:`
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), warn) {
		t.Fatalf("log does not warn about once at line 5:\n%s", logs.String())
	}

	logs.Reset()
	writeFile(t, dir, "jobs.yaml", "- name: minute\n  schedule: '* * * * *'\n  shell: date\n- name: hourly\n  schedule: '@hourly'\n  shell: date\n- name: once\n  at: "+past+"\n  shell: date\n")
	res, err := d.reloadFrom(g.sources())
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if !slices.Equal(res.Added, []string{"hourly"}) || len(res.Removed)+len(res.Changed) != 0 {
		t.Fatalf("reload %+v, want hourly added only", res)
	}
	if spec, sched := names(); !slices.Equal(spec, []string{"minute", "hourly"}) || !slices.Equal(sched, []string{"minute", "hourly"}) {
		t.Fatalf("after reload: jobs %v, scheduled %v, want minute and hourly", spec, sched)
	}
	if !strings.Contains(logs.String(), `jobs.yaml:8: warning: job \"once\": at:`) {
		t.Fatalf("reload log does not warn about once at line 8:\n%s", logs.String())
	}
}

// A failed run's "run failed" line says whether a retry follows, as the
// scheduler's event does: the next attempt and its backoff, or no retry
// and why, naming an exit code the job marked permanent; a job without
// retries (an event with no reason) gets no retry attribute.
func TestRunFailedSaysRetry(t *testing.T) {
	var buf bytes.Buffer
	o := newOutcomes(slog.New(slog.NewJSONHandler(&buf, nil)), "inst-1", &executor{})
	ex := &executor{log: slog.New(slog.DiscardHandler), instance: "inst-1", grace: time.Second}
	exit := func(code string) error {
		j := &jobSpec{Name: "x", Schedule: "@daily", Argv: []string{"/bin/sh", "-c", "exit " + code}, PermanentExit: []int{2}}
		return ex.handler(j)(context.Background(), &anarchon.Run{Job: "x", Slot: time.Now(), Attempt: 1})
	}
	slot := time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		event anarchon.Event
		want  string // the retry attribute; "" for none
	}{
		{"follows", anarchon.Event{Err: exit("3"), Retry: true, RetryIn: 10 * time.Second, Reason: "attempt 2 (of at most 4) follows in 10s"},
			"attempt 2 (of at most 4) follows in 10s"},
		{"last", anarchon.Event{Attempt: 4, Err: exit("3"), Reason: "no retry: attempt 4 was the last one the retry limit allows (3 retries)"},
			"no retry: attempt 4 was the last one the retry limit allows (3 retries)"},
		{"permanent", anarchon.Event{Err: exit("2"), Reason: "no retry: the error is marked permanent"},
			"no retry: exit code 2 is one of the job's permanent_exit_codes"},
		{"no retries", anarchon.Event{Err: exit("3")}, ""},
	} {
		buf.Reset()
		e := tc.event
		e.Kind, e.Job, e.Slot, e.Status, e.Attempt = anarchon.EventRunEnd, "x", slot, anarchon.StatusError, max(e.Attempt, 1)
		o.observe(e)
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v: %s", tc.name, err, buf.String())
		}
		got, has := m["retry"].(string)
		if m["msg"] != "run failed" || got != tc.want || has != (tc.want != "") {
			t.Errorf("%s: logged %v, want \"run failed\" with retry %q", tc.name, m, tc.want)
		}
	}
}

// TestRetryWonByAnotherReplica: the retry of a slot whose attempt failed
// on one replica and that another replica wins (the first stopped during
// the backoff) is logged there as a retry naming where the attempt
// failed, not as a takeover of a run that did not finish: the claim's
// answer does not tell the two apart, the slot's history does. A run
// handed over at stop is a takeover; a history that cannot be read says
// that how the attempt before ended is not known, unless the replica's
// own failed run set the retry up.
func TestRetryWonByAnotherReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		logs := map[string]*bytes.Buffer{}
		var ss []*anarchon.Scheduler
		for _, id := range []string{"r0", "r1"} {
			logs[id] = &bytes.Buffer{}
			o := newOutcomes(slog.New(slog.NewJSONHandler(&syncWriter{w: logs[id]}, nil)), id, &executor{})
			o.history = store.History
			s := anarchon.New(store, &anarchon.Options{InstanceID: id, Logger: slog.New(slog.DiscardHandler), OnEvent: o.observe})
			h := func(_ context.Context, run *anarchon.Run) error {
				if run.Attempt == 1 {
					return errors.New("exit status 3")
				}
				return nil
			}
			if err := s.Every("flaky", time.Hour, h, &anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 1, InitialBackoff: 10 * time.Second}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			ss = append(ss, s)
		}
		first := time.Now().Truncate(time.Hour).Add(time.Hour)
		time.Sleep(time.Until(first.Add(2 * time.Second)))
		recs, err := store.History(context.Background(), "flaky", 0)
		if err != nil || len(recs) != 1 || recs[0].Status != anarchon.StatusError {
			t.Fatalf("history after attempt 1: %v, %v", recs, err)
		}
		failed := recs[0].InstanceID
		other := "r0"
		for _, s := range ss {
			if s.InstanceID() == failed {
				stopScheds(t, s) // leaves during the backoff: the other wins attempt 2
			} else {
				other = s.InstanceID()
			}
		}
		time.Sleep(time.Minute)
		for _, s := range ss {
			if s.InstanceID() == other {
				stopScheds(t, s)
			}
		}
		synctest.Wait()
		var lines []map[string]any
		for l := range strings.Lines(logs[other].String()) {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			if m["attempt"] == float64(2) && m["msg"] != "run succeeded" {
				lines = append(lines, m)
			}
		}
		if len(lines) != 1 || lines[0]["msg"] != "retrying the slot after its failed attempt" ||
			lines[0]["failed_on"] != failed || lines[0]["failed_attempt"] != float64(1) {
			t.Errorf("%s's line for attempt 2: %v; want \"retrying the slot after its failed attempt\" with failed_on %s, failed_attempt 1\n%s",
				other, lines, failed, logs[other])
		}
	})

	slot := time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		prev  []anarchon.RunRecord
		err   error
		retry bool // Event.Retry: this replica's own retry
		want  string
		attrs map[string]any
	}{
		{"handed over", []anarchon.RunRecord{{Slot: slot, Attempt: 1, InstanceID: "r0", Status: anarchon.StatusHandedOver}}, nil, false,
			"taking over a run another instance did not finish", map[string]any{"previous_instance": "r0", "previous_status": "handed_over", "previous_attempt": float64(1)}},
		{"lease lost", []anarchon.RunRecord{{Slot: slot.Add(time.Hour), Attempt: 1, Status: anarchon.StatusError}, {Slot: slot, Attempt: 1, InstanceID: "r0", Status: anarchon.StatusLeaseLost}}, nil, false,
			"taking over a run another instance did not finish", map[string]any{"previous_status": "lease_lost"}},
		{"failed", []anarchon.RunRecord{{Slot: slot, Attempt: 1, InstanceID: "r0", Status: anarchon.StatusError}}, nil, false,
			"retrying the slot after its failed attempt", map[string]any{"failed_on": "r0", "failed_attempt": float64(1)}},
		{"own retry, history not read", nil, errors.New("connection refused"), true,
			"retrying the slot after its failed attempt", map[string]any{"failed_on": "r1"}},
		{"not known", nil, errors.New("connection refused"), false,
			"running a later attempt of the slot", map[string]any{"previous": "how the attempt before it ended is not known: the job's history could not be read: connection refused"}},
		{"not found", []anarchon.RunRecord{{Slot: slot.Add(time.Hour), Attempt: 1, Status: anarchon.StatusError}}, nil, false,
			"running a later attempt of the slot", map[string]any{"previous": "how the attempt before it ended is not known: attempt 1 of the slot is not among the job's newest 64 history records"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			ex := &executor{}
			o := newOutcomes(slog.New(slog.NewJSONHandler(&buf, nil)), "r1", ex)
			o.history = func(context.Context, string, int) ([]anarchon.RunRecord, error) { return tc.prev, tc.err }
			o.observe(anarchon.Event{Kind: anarchon.EventClaim, Job: "j", Slot: slot, Attempt: 2, Outcome: "won", Retry: tc.retry})
			// The command of attempt 2 waits for the line.
			ex.awaitLine(context.Background(), runKey("j", slot, 2))
			var m map[string]any
			if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
				t.Fatalf("%v: %q", err, buf.String())
			}
			if m["msg"] != tc.want {
				t.Errorf("line %v, want %q", m, tc.want)
			}
			for k, v := range tc.attrs {
				if m[k] != v {
					t.Errorf("%s = %v, want %v", k, m[k], v)
				}
			}
		})
	}
}

// stopScheds stops each scheduler within 10 s.
func stopScheds(t *testing.T, ss ...*anarchon.Scheduler) {
	t.Helper()
	for _, s := range ss {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop %s: %v", s.InstanceID(), err)
		}
		cancel()
	}
}

// syncWriter writes to w under a lock: the log of schedulers' goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestStatusRetryWait: a slot whose attempt failed and waits out its
// retry backoff is shown by status as waiting for its retry, with when
// the next attempt is due, in the text and in the JSON, not as running:
// the store holds its lease as running until then. The attempt that then
// runs is running.
func TestStatusRetryWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := membackend.New(nil)
		s := anarchon.New(b, &anarchon.Options{InstanceID: "r0", Logger: slog.New(slog.DiscardHandler)})
		release := make(chan struct{})
		h := func(ctx context.Context, run *anarchon.Run) error {
			if run.Attempt == 1 {
				return errors.New("exit status 3")
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}
		if err := s.Every("flaky", time.Hour, h, &anarchon.JobOptions{Retry: anarchon.Retry{MaxRetries: 1, InitialBackoff: 10 * time.Minute}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func() { close(release); stopScheds(t, s) }()
		d := &daemon{backend: b, sched: s, store: "memory:", jobs: []*jobSpec{{Name: "flaky", Schedule: "@every 1h"}}}
		first := time.Now().Truncate(time.Hour).Add(time.Hour)
		time.Sleep(time.Until(first.Add(time.Minute)))
		due := formatTime(first.Add(10 * time.Minute))
		rep := d.status(context.Background())
		js := rep.Jobs[0]
		if len(js.Active) != 1 || js.Active[0].State != stateRetryWait || js.Active[0].RetryDue != due || js.Active[0].Attempt != 1 {
			t.Fatalf("active during the backoff %+v (error %q), want attempt 1 %s, retry due %s", js.Active, js.Error, stateRetryWait, due)
		}
		out, err := json.Marshal(rep)
		if err != nil || !strings.Contains(string(out), `"state":"retry_wait"`) || !strings.Contains(string(out), `"retry_due":"`+due+`"`) {
			t.Errorf("JSON %s (%v): want state retry_wait and retry_due %s", out, err, due)
		}
		var text bytes.Buffer
		printJobStatus(&text, js)
		if want := "attempt 1 failed on r0, waiting for its retry: attempt 2 due at " + due; !strings.Contains(text.String(), want) || strings.Contains(text.String(), "running") {
			t.Errorf("status text:\n%s\nwant %q and no \"running\"", text.String(), want)
		}

		time.Sleep(time.Until(first.Add(11 * time.Minute)))
		js = d.status(context.Background()).Jobs[0]
		if len(js.Active) != 1 || js.Active[0].State != string(anarchon.RunStateRunning) || js.Active[0].Attempt != 2 || js.Active[0].RetryDue != "" {
			t.Errorf("active while attempt 2 runs %+v, want it running", js.Active)
		}
		text.Reset()
		printJobStatus(&text, js)
		if !strings.Contains(text.String(), "attempt 2, running, lease until") {
			t.Errorf("status text while attempt 2 runs:\n%s", text.String())
		}
	})
}
