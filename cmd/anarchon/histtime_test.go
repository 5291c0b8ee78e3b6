package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// A time the history shows has at most milliseconds, whatever the store
// kept: NATS and Redis keep a run's start to the nanosecond, SQL stores to
// the millisecond, and "history" looks the same on all of them.
func TestHistoryTimesInMilliseconds(t *testing.T) {
	ns := time.Date(2026, 12, 2, 9, 18, 44, 5814867, time.UTC)
	rec := anarchon.RunRecord{Job: "a", Slot: ns.Truncate(time.Millisecond), InstanceID: "i", Attempt: 1,
		Status: anarchon.StatusError, ClaimedAt: ns, StartedAt: ns.Add(59327 * time.Nanosecond), FinishedAt: ns.Add(time.Millisecond)}
	var buf bytes.Buffer
	printRecords(&buf, []anarchon.RunRecord{rec})
	if out := buf.String(); strings.Contains(out, "44.005814867Z") || strings.Count(out, "2026-12-02T09:18:44.005Z") != 3 {
		t.Errorf("table:\n%s\nwant slot, claimed and started as 2026-12-02T09:18:44.005Z", out)
	}
	j := toJSON(rec)
	if *j.ClaimedAt != "2026-12-02T09:18:44.005Z" || *j.StartedAt != "2026-12-02T09:18:44.005Z" || *j.FinishedAt != "2026-12-02T09:18:44.006Z" {
		t.Errorf("JSON: claimed %s, started %s, finished %s", *j.ClaimedAt, *j.StartedAt, *j.FinishedAt)
	}
}

// The same through "history" on a NATS store (ANARCHON_TEST_NATS_URL).
func TestHistoryTimesNATS(t *testing.T) {
	url := serverEnv(t, "ANARCHON_TEST_NATS_URL", "nats")
	store := url + "?prefix=histtime" + randSuffix()
	ct := writeFile(t, t.TempDir(), "jobs.cron", "# name: a\n@daily echo out\n")
	if code, out, errOut := cli(t, "run-now", "a", "--crontab", ct, "--store", store); code != 0 {
		t.Fatalf("run-now: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := cli(t, "history", "a", "--store", store)
	times := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`).FindAllStringSubmatch(out, -1)
	if code != 0 || len(times) != 3 {
		t.Fatalf("history: exit %d, %d times\n%s%s", code, len(times), out, errOut)
	}
	for _, m := range times {
		if len(m[1]) > 4 {
			t.Errorf("time %s has more than milliseconds:\n%s", m[0], out)
		}
	}
	code, out, _ = cli(t, "history", "a", "--store", store, "--json")
	var recs []recordJSON
	if err := json.Unmarshal([]byte(out), &recs); code != 0 || err != nil || len(recs) != 1 {
		t.Fatalf("history --json: exit %d, %v\n%s", code, err, out)
	}
	for _, s := range []*string{recs[0].ClaimedAt, recs[0].StartedAt, recs[0].FinishedAt} {
		if s == nil || len(*s) > len("2026-12-02T09:18:44.005Z") {
			t.Errorf("JSON time has more than milliseconds:\n%s", out)
			break
		}
	}
}

// Every time history and status show has exactly three fraction digits,
// zeros included (…:50.160Z, …:59.000Z), in the table and in JSON alike:
// the strings sort in time order, as a whole second's "…:59Z" next to
// "…:59.5Z" would not.
func TestTimesHaveThreeFractionDigits(t *testing.T) {
	slot := time.Date(2026, 12, 2, 9, 18, 0, 0, time.UTC)
	rec := anarchon.RunRecord{Job: "a", Slot: slot, InstanceID: "i", Attempt: 1, Status: anarchon.StatusSuccess,
		ClaimedAt: slot.Add(50*time.Second + 160*time.Millisecond), StartedAt: slot.Add(59 * time.Second),
		FinishedAt: slot.Add(59*time.Second + 999999999)}
	var buf bytes.Buffer
	printRecords(&buf, []anarchon.RunRecord{rec})
	for _, want := range []string{"2026-12-02T09:18:00.000Z", "2026-12-02T09:18:50.160Z", "2026-12-02T09:18:59.000Z"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table: no %s in\n%s", want, buf.String())
		}
	}
	j := toJSON(rec)
	if j.Slot != "2026-12-02T09:18:00.000Z" || *j.ClaimedAt != "2026-12-02T09:18:50.160Z" || *j.StartedAt != "2026-12-02T09:18:59.000Z" ||
		*j.FinishedAt != "2026-12-02T09:18:59.999Z" {
		t.Errorf("JSON: slot %s, claimed %s, started %s, finished %s", j.Slot, *j.ClaimedAt, *j.StartedAt, *j.FinishedAt)
	}
	// status: the registry's times, and the report's own.
	rec0 := anarchon.InstanceRecord{State: anarchon.InstanceLive, LastSeen: slot.Add(5 * time.Second),
		ExpiresAt: slot.Add(20*time.Second + 10*time.Millisecond), TTL: 15 * time.Second}
	rec0.ID, rec0.StartedAt = "i", slot
	rep := replicasOf([]anarchon.InstanceRecord{rec0})
	r := rep.Replicas[0]
	if r.StartedAt != "2026-12-02T09:18:00.000Z" || r.LastSeen != "2026-12-02T09:18:05.000Z" || r.ExpiresAt != "2026-12-02T09:18:20.010Z" {
		t.Errorf("replica: started %s, last seen %s, expires %s", r.StartedAt, r.LastSeen, r.ExpiresAt)
	}
	if got := toStateJSON(anarchon.JobState{Job: "a", Paused: true, At: slot}).At; got != "2026-12-02T09:18:00.000Z" {
		t.Errorf("paused at %s", got)
	}
	if got := formatTime(time.Date(2026, 12, 2, 9, 18, 0, 0, time.FixedZone("X", 3600))); got != "2026-12-02T08:18:00.000Z" {
		t.Errorf("formatTime of another zone: %s", got)
	}
}
