package anarchon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

func noop(context.Context, *anarchon.Run) error { return nil }

// eventLog keeps the events of one kind.
type eventLog struct {
	mu   sync.Mutex
	kind anarchon.EventKind
	evs  []anarchon.Event
}

func (l *eventLog) add(e anarchon.Event) {
	if e.Kind != l.kind {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, e)
}

func (l *eventLog) all() []anarchon.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs)
}

func stateOf(t *testing.T, recs []anarchon.InstanceRecord, id string) anarchon.InstanceState {
	t.Helper()
	for _, r := range recs {
		if r.ID == id {
			return r.State
		}
	}
	t.Fatalf("no record of %q in %v", id, recs)
	return ""
}

// failingRegistry is a memory store whose RegisterInstance fails while
// fail is set: an instance that cannot renew, as if it had died.
type failingRegistry struct {
	*membackend.Backend
	fail  atomic.Bool
	lists atomic.Bool // refuse a record with its job list, as a store's size limit would
}

func (f *failingRegistry) RegisterInstance(ctx context.Context, info anarchon.InstanceInfo, ttl time.Duration) error {
	if f.fail.Load() {
		return errors.New("injected: cannot renew")
	}
	if f.lists.Load() && len(info.Jobs) > 0 {
		return errors.New("injected: message too large")
	}
	return f.Backend.RegisterInstance(ctx, info, ttl)
}

// Two schedulers with different job sets register at Start, each sees
// the other's differences once (EventJobSetMismatch), a scheduler that
// stops renewing is listed dead after its TTL and the difference clears,
// and Stop marks a record stopped.
func TestRegistryLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		bStore := &failingRegistry{Backend: store}
		const ttl = 3 * time.Second
		evA := &eventLog{kind: anarchon.EventJobSetMismatch}
		a := newSched(t, store, "a", &anarchon.Options{RegistryTTL: ttl, OnEvent: evA.add})
		b := newSched(t, bStore, "b", &anarchon.Options{RegistryTTL: ttl})
		for _, s := range []*anarchon.Scheduler{a, b} {
			if err := s.Every("x", time.Minute, noop, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Cron("y", "0 9 * * *", noop, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Cron("y", "0 10 * * *", noop, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Every("z", time.Hour, noop, nil); err != nil {
			t.Fatal(err)
		}
		mustStart(t, a)
		mustStart(t, b)

		recs, err := a.Instances(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 2 || stateOf(t, recs, "a") != anarchon.InstanceLive || stateOf(t, recs, "b") != anarchon.InstanceLive {
			t.Fatalf("after Start: %+v", recs)
		}
		for _, r := range recs {
			s := a
			if r.ID == "b" {
				s = b
			}
			want := s.InstanceInfo()
			if r.JobsFingerprint != want.JobsFingerprint || !slices.Equal(r.Jobs, want.Jobs) ||
				!r.StartedAt.Equal(want.StartedAt) || r.StartedAt.IsZero() || r.PID != want.PID || r.TTL != ttl {
				t.Errorf("record of %s = %+v, want %+v", r.ID, r.InstanceInfo, want)
			}
		}
		if a.InstanceInfo().JobsFingerprint == b.InstanceInfo().JobsFingerprint {
			t.Fatal("different job sets have one fingerprint")
		}

		time.Sleep(ttl/3 + time.Millisecond) // a's first renewal lists b
		recs, _ = b.Instances(t.Context())
		for _, r := range recs {
			if !r.JobsListed() || r.ID == "a" && !slices.Equal(r.Jobs, a.InstanceInfo().Jobs) {
				t.Errorf("after a saw b differ, %s's record has jobs %v", r.ID, r.Jobs)
			}
		}
		evs := evA.all()
		if len(evs) != 1 {
			t.Fatalf("a reported %d job-set mismatches, want 1: %+v", len(evs), evs)
		}
		want := anarchon.JobSetDiff{Instance: "b", Reference: "a", Extra: []string{"z"}, Changed: []string{"y"}}
		if got := evs[0].JobSetDiffs; len(got) != 1 || got[0].Instance != want.Instance || got[0].Reference != want.Reference ||
			len(got[0].Missing) != 0 || !slices.Equal(got[0].Extra, want.Extra) || !slices.Equal(got[0].Changed, want.Changed) {
			t.Fatalf("mismatch event diffs = %+v, want [%+v]", got, want)
		}
		time.Sleep(2 * ttl)
		if n := len(evA.all()); n != 1 {
			t.Fatalf("an unchanged mismatch was reported again: %d events", n)
		}

		// b stops renewing: listed dead after its TTL, and a sees the
		// job sets agree again.
		bStore.fail.Store(true)
		time.Sleep(ttl + ttl/3 + time.Millisecond)
		recs, err = a.Instances(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, recs, "b"); got != anarchon.InstanceDead {
			t.Fatalf("b, not renewed for its TTL: %s, want dead", got)
		}
		if got := stateOf(t, recs, "a"); got != anarchon.InstanceLive {
			t.Fatalf("a, renewing: %s, want live", got)
		}
		if d := anarchon.DiffJobSets(recs); d != nil {
			t.Fatalf("DiffJobSets counts a dead instance: %+v", d)
		}
		evs = evA.all()
		if len(evs) != 2 || len(evs[1].JobSetDiffs) != 0 {
			t.Fatalf("after b died, a's events = %+v, want a second one with no diffs", evs)
		}

		stopAll(t, a)
		recs, err = b.Instances(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, recs, "a"); got != anarchon.InstanceStopped {
			t.Fatalf("a after Stop: %s, want stopped", got)
		}
		bStore.fail.Store(false)
		time.Sleep(ttl / 3)
		recs, _ = a.Instances(t.Context())
		if got := stateOf(t, recs, "b"); got != anarchon.InstanceLive {
			t.Fatalf("b renewing again: %s, want live", got)
		}
		stopAll(t, b)
	})
}

// A negative RegistryTTL keeps the scheduler out of the registry; a
// backend without one answers ErrNoRegistry.
func TestRegistryOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		s := newSched(t, store, "quiet", &anarchon.Options{RegistryTTL: -1})
		mustStart(t, s)
		recs, err := s.Instances(t.Context())
		if err != nil || len(recs) != 0 {
			t.Fatalf("Instances = %v, %v; want none", recs, err)
		}
		stopAll(t, s)

		plain := newSched(t, struct{ anarchon.Backend }{store}, "plain", nil)
		mustStart(t, plain)
		if _, err := plain.Instances(t.Context()); !errors.Is(err, anarchon.ErrNoRegistry) {
			t.Fatalf("Instances without a registry = %v, want ErrNoRegistry", err)
		}
		stopAll(t, plain)
	})
}

func jobInfo(name, sched, zone string, o anarchon.JobOptions) anarchon.JobInfo {
	return anarchon.JobInfo{Name: name, Schedule: sched, Zone: zone, Options: o}
}

func TestFingerprintJob(t *testing.T) {
	base := jobInfo("report", "0 9 * * MON-FRI", "Europe/Athens", anarchon.JobOptions{MaxLate: time.Minute})
	fp := anarchon.FingerprintJob(base)
	// A fingerprint is stable across versions and processes: instances
	// of different builds compare them.
	// A change of this value is a change of the fingerprint format:
	// instances of the old and new versions would report each other as
	// running different jobs.
	if fp != "e6f47cf41517ffc9" {
		t.Fatalf("FingerprintJob(%+v) = %s, want the stable e6f47cf41517ffc9", base, fp)
	}
	same := []anarchon.JobInfo{
		jobInfo("report", " 0  9 *\t* MON-FRI ", "Europe/Athens", anarchon.JobOptions{MaxLate: time.Minute}),
		jobInfo("report", "0 9 * * MON-FRI", "Europe/Athens", anarchon.JobOptions{MaxLate: time.Minute, Jitter: time.Second, Timeout: time.Hour, HistorySize: 7}),
	}
	for _, j := range same {
		if got := anarchon.FingerprintJob(j); got != fp {
			t.Errorf("%+v: fingerprint %s, want %s as for %+v", j, got, fp, base)
		}
	}
	leased := base
	leased.Leased = true
	differ := []anarchon.JobInfo{
		jobInfo("report2", "0 9 * * MON-FRI", "Europe/Athens", anarchon.JobOptions{MaxLate: time.Minute}),
		jobInfo("report", "0 10 * * MON-FRI", "Europe/Athens", anarchon.JobOptions{MaxLate: time.Minute}),
		jobInfo("report", "0 9 * * MON-FRI", "UTC", anarchon.JobOptions{MaxLate: time.Minute}),
		jobInfo("report", "0 9 * * MON-FRI", "Europe/Athens", anarchon.JobOptions{MaxLate: time.Hour}),
		jobInfo("report", "0 9 * * MON-FRI", "Europe/Athens", anarchon.JobOptions{MaxLate: time.Minute, Fingerprint: "cmd: backup.sh"}),
		leased,
	}
	seen := map[string]int{fp: -1}
	for i, j := range differ {
		got := anarchon.FingerprintJob(j)
		if k, dup := seen[got]; dup {
			t.Errorf("differ[%d] %+v has the fingerprint of %d", i, j, k)
		}
		seen[got] = i
	}
	l2 := leased
	l2.Options.Lease = time.Minute
	if anarchon.FingerprintJob(l2) == anarchon.FingerprintJob(leased) {
		t.Error("a leased job's Lease is not in its fingerprint")
	}
}

func TestFingerprintJobSet(t *testing.T) {
	a := []anarchon.JobFingerprint{{"x", "1"}, {"y", "2"}}
	b := []anarchon.JobFingerprint{{"y", "2"}, {"x", "1"}}
	if got := anarchon.FingerprintJobSet(a); got != "71977cfde236c1e5" {
		t.Fatalf("FingerprintJobSet(%v) = %s, want the stable 71977cfde236c1e5", a, got)
	}
	if anarchon.FingerprintJobSet(a) != anarchon.FingerprintJobSet(b) {
		t.Error("the set fingerprint depends on order")
	}
	for _, c := range [][]anarchon.JobFingerprint{{{"x", "1"}}, {{"x", "1"}, {"y", "3"}}, {{"x", "1"}, {"y", "2"}, {"z", "2"}}, nil} {
		if anarchon.FingerprintJobSet(c) == anarchon.FingerprintJobSet(a) {
			t.Errorf("%v has the fingerprint of %v", c, a)
		}
	}
	// Names cannot run into fingerprints.
	if anarchon.FingerprintJobSet([]anarchon.JobFingerprint{{"a=b", "c"}}) == anarchon.FingerprintJobSet([]anarchon.JobFingerprint{{"a", "b=c"}}) {
		t.Error("ambiguous encoding")
	}
}

func rec(id string, state anarchon.InstanceState, started int, jobs ...anarchon.JobFingerprint) anarchon.InstanceRecord {
	return anarchon.InstanceRecord{
		InstanceInfo: anarchon.InstanceInfo{
			ID: id, Jobs: jobs, JobsFingerprint: anarchon.FingerprintJobSet(jobs),
			StartedAt: time.Unix(int64(started), 0),
		},
		State: state,
	}
}

func TestDiffJobSets(t *testing.T) {
	x, y, y2, z := anarchon.JobFingerprint{"x", "1"}, anarchon.JobFingerprint{"y", "2"}, anarchon.JobFingerprint{"y", "9"}, anarchon.JobFingerprint{"z", "3"}
	live, dead, stopped := anarchon.InstanceLive, anarchon.InstanceDead, anarchon.InstanceStopped

	if d := anarchon.DiffJobSets([]anarchon.InstanceRecord{rec("a", live, 1, x, y), rec("b", live, 2, y, x)}); d != nil {
		t.Errorf("equal sets: %+v", d)
	}
	// Dead and stopped instances do not count.
	if d := anarchon.DiffJobSets([]anarchon.InstanceRecord{rec("a", live, 1, x), rec("b", dead, 0, z), rec("c", stopped, 0, y)}); d != nil {
		t.Errorf("dead and stopped counted: %+v", d)
	}
	// The majority is the reference, even if it started later.
	d := anarchon.DiffJobSets([]anarchon.InstanceRecord{
		rec("old", live, 1, x, y2, z), rec("n1", live, 5, x, y), rec("n2", live, 6, x, y),
	})
	if len(d) != 1 || d[0].Instance != "old" || d[0].Reference != "n1" ||
		!slices.Equal(d[0].Missing, nil) || !slices.Equal(d[0].Extra, []string{"z"}) || !slices.Equal(d[0].Changed, []string{"y"}) {
		t.Errorf("majority: %+v", d)
	}
	if got := d[0].Jobs(); !slices.Equal(got, []string{"y", "z"}) {
		t.Errorf("Jobs() = %v", got)
	}
	// A tie goes to the instance that started first.
	d = anarchon.DiffJobSets([]anarchon.InstanceRecord{rec("b", live, 2, x), rec("a", live, 3, x, y)})
	if len(d) != 1 || d[0].Reference != "b" || d[0].Instance != "a" || !slices.Equal(d[0].Extra, []string{"y"}) {
		t.Errorf("tie: %+v", d)
	}
	c := anarchon.CompareJobSets(rec("r", live, 0, x, y).InstanceInfo, rec("i", live, 0, y2, z).InstanceInfo)
	if !slices.Equal(c.Missing, []string{"x"}) || !slices.Equal(c.Extra, []string{"z"}) || !slices.Equal(c.Changed, []string{"y"}) || c.Empty() {
		t.Errorf("CompareJobSets = %+v", c)
	}
}

// A record's JSON keeps the info's fields at the top level, in snake_case.
func TestInstanceRecordJSON(t *testing.T) {
	r := rec("web-1", anarchon.InstanceLive, 5, anarchon.JobFingerprint{Name: "x", Fingerprint: "1"})
	r.TTL = 15 * time.Second
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "jobs_fingerprint", "jobs", "started_at", "clock_offset_ns", "ttl_ns", "last_seen", "expires_at", "state"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON of a record has no %q: %s", k, data)
		}
	}
	var back anarchon.InstanceRecord
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.ID != r.ID || back.TTL != r.TTL || back.State != r.State || !slices.Equal(back.Jobs, r.Jobs) {
		t.Errorf("JSON round trip: %+v, want %+v", back, r)
	}
}

// logBuffer is a slog handler's destination safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Two processes that share an InstanceID overwrite each other's record;
// each warns once, and the later one also at its start, where it finds the
// earlier one's record live.
func TestRegistryTwinWarning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		var logs logBuffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		const ttl = 3 * time.Second
		a := newSched(t, store, "same", &anarchon.Options{RegistryTTL: ttl, Logger: log})
		mustStart(t, a)
		// b starts half a renewal period later (another StartedAt), so
		// that the two write in turns and each lists the other's record.
		time.Sleep(ttl/3 + ttl/6)
		b := newSched(t, store, "same", &anarchon.Options{RegistryTTL: ttl, Logger: log})
		mustStart(t, b)
		time.Sleep(5 * ttl)
		stopAll(t, a, b)
		if n := strings.Count(logs.String(), "another process registers under this instance ID"); n != 2 {
			t.Fatalf("%d twin warnings, want one from each instance:\n%s", n, logs.String())
		}
		// b, which started while a's record was live, said so at once.
		if n := strings.Count(logs.String(), "a live registry record has this instance ID"); n != 1 {
			t.Fatalf("%d start warnings, want b's:\n%s", n, logs.String())
		}
		// The operator of a program built on the library (the daemon's
		// --instance) sets the ID by another name than the Go option's.
		if strings.Contains(logs.String(), "InstanceID") {
			t.Errorf("the warnings name the Go option InstanceID:\n%s", logs.String())
		}
	})
}

// A record carries its job list at Start and while another live instance runs a
// different job set: three instances of one set publish none after a renewal; a fourth
// with another set makes every instance publish its list, and the
// mismatch is reported by job name on both sides within two renewals; once
// it stops, the lists are left out again. A record without its list is
// compared as Unlisted, never as an instance that lacks every job.
func TestJobListsOnlyWhileSetsDiffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		const ttl = 3 * time.Second
		var ss []*anarchon.Scheduler
		var logs []*eventLog
		for i, extra := range []string{"", "", "", "w"} {
			l := &eventLog{kind: anarchon.EventJobSetMismatch}
			s := newSched(t, store, fmt.Sprintf("s%d", i), &anarchon.Options{RegistryTTL: ttl, OnEvent: l.add})
			for _, name := range []string{"x", "y", extra} {
				if name == "" {
					continue
				}
				if err := s.Every(name, time.Minute, noop, nil); err != nil {
					t.Fatal(err)
				}
			}
			ss, logs = append(ss, s), append(logs, l)
		}
		listed := func(when string, want bool) {
			t.Helper()
			recs, err := ss[0].Instances(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.Live() && (len(r.Jobs) > 0) != want {
					t.Errorf("%s: %s's record lists %d jobs", when, r.ID, len(r.Jobs))
				}
				if n := ss[r.ID[1]-'0'].InstanceInfo().JobCount; r.NumJobs() != n || n < 2 {
					t.Errorf("%s: %s's record counts %d jobs, want %d", when, r.ID, r.NumJobs(), n)
				}
			}
		}
		for _, s := range ss[:3] {
			mustStart(t, s)
		}
		time.Sleep(2 * ttl)
		listed("three instances of one job set", false)

		mustStart(t, ss[3])
		// The others publish their lists at their first renewal that
		// lists the fourth; the fourth names the differences at its
		// first renewal after that: within two renewals.
		time.Sleep(2*(ttl/3) + time.Millisecond)
		listed("a fourth with another set", true)
		for i, l := range logs {
			evs := l.all()
			if len(evs) != 1 || len(evs[0].JobSetDiffs) == 0 {
				t.Fatalf("s%d: mismatch events %+v, want one", i, evs)
			}
			for _, d := range evs[0].JobSetDiffs {
				if d.Unlisted || !slices.Equal(d.Jobs(), []string{"w"}) {
					t.Errorf("s%d: diff %+v, want job w named", i, d)
				}
			}
		}
		recs, _ := ss[0].Instances(t.Context())
		if d := anarchon.DiffJobSets(recs); len(d) != 1 || d[0].Instance != "s3" || !slices.Equal(d[0].Extra, []string{"w"}) {
			t.Errorf("DiffJobSets = %+v, want s3 with extra w", d)
		}

		stopAll(t, ss[3])
		time.Sleep(ttl/3 + time.Millisecond)
		listed("after the fourth stopped", false)
		stopAll(t, ss[:3]...)
	})
}

func TestCompareUnlisted(t *testing.T) {
	x := anarchon.JobFingerprint{Name: "x", Fingerprint: "1"}
	full := rec("a", anarchon.InstanceLive, 1, x).InstanceInfo
	bare := rec("b", anarchon.InstanceLive, 2, x, anarchon.JobFingerprint{Name: "y", Fingerprint: "2"}).InstanceInfo
	bare.Jobs = nil
	if bare.JobsListed() || !full.JobsListed() {
		t.Fatalf("JobsListed: bare %v, full %v", bare.JobsListed(), full.JobsListed())
	}
	if empty := rec("e", anarchon.InstanceLive, 3).InstanceInfo; !empty.JobsListed() {
		t.Error("an empty job set is not listed")
	}
	for _, d := range []anarchon.JobSetDiff{anarchon.CompareJobSets(full, bare), anarchon.CompareJobSets(bare, full)} {
		if !d.Unlisted || d.Empty() || len(d.Jobs()) != 0 {
			t.Errorf("diff against a record without its list: %+v", d)
		}
	}
	same := full
	same.ID, same.Jobs = "c", nil
	if d := anarchon.CompareJobSets(full, same); d.Unlisted || !d.Empty() {
		t.Errorf("equal fingerprints, one list left out: %+v", d)
	}
}

// A store that refuses the record with its job list (NATS's message limit
// at about 20,000 jobs) gets it without: the instance stays listed live,
// with its fingerprint and job count, and each refusal is a store error.
func TestRegistryListRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &failingRegistry{Backend: membackend.New(nil)}
		store.lists.Store(true)
		errs := &eventLog{kind: anarchon.EventStoreError}
		const ttl = 3 * time.Second
		s := newSched(t, store, "big", &anarchon.Options{RegistryTTL: ttl, OnEvent: errs.add})
		if err := s.Every("x", time.Minute, noop, nil); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s)
		defer stopAll(t, s)
		recs, err := s.Instances(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || !recs[0].Live() || recs[0].NumJobs() != 1 || recs[0].JobsFingerprint != s.InstanceInfo().JobsFingerprint || len(recs[0].Jobs) != 0 {
			t.Fatalf("records %+v, want big live without its list", recs)
		}
		if n := len(errs.all()); n != 1 {
			t.Errorf("%d store errors, want 1 (the refused list at Start)", n)
		}
	})
}

// A change of this instance's own job set while another's difference is
// reported is reported again, with the new differences.
func TestOwnJobSetChangeReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		const ttl = 3 * time.Second
		l := &eventLog{kind: anarchon.EventJobSetMismatch}
		a := newSched(t, store, "a", &anarchon.Options{RegistryTTL: ttl, OnEvent: l.add})
		b := newSched(t, store, "b", &anarchon.Options{RegistryTTL: ttl})
		for _, s := range []*anarchon.Scheduler{a, b} {
			if err := s.Every("x", time.Minute, noop, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Every("w", time.Minute, noop, nil); err != nil {
			t.Fatal(err)
		}
		mustStart(t, a)
		mustStart(t, b)
		time.Sleep(2 * ttl)
		if err := a.Every("n", time.Minute, noop, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * ttl)
		stopAll(t, a, b)
		evs := l.all()
		if len(evs) != 2 {
			t.Fatalf("a's mismatch events %+v, want 2", evs)
		}
		if d := evs[1].JobSetDiffs; len(d) != 1 || !slices.Equal(d[0].Extra, []string{"w"}) || !slices.Equal(d[0].Missing, []string{"n"}) {
			t.Errorf("after a added n: %+v, want w extra on b and n missing there", d)
		}
	})
}

// The sizes SPEC §10 gives for a registry record: with the job list of
// 10,000 jobs named like the burst benchmark's ("burst-000000") it is
// about 0.5 MB of JSON (48 bytes a job), without it a few hundred bytes.
func TestRegistryRecordSize(t *testing.T) {
	var jobs []anarchon.JobFingerprint
	for i := range 10000 {
		jobs = append(jobs, anarchon.JobFingerprint{Name: fmt.Sprintf("burst-%06d", i), Fingerprint: "0123456789abcdef"})
	}
	info := anarchon.InstanceInfo{ID: "web-1", Jobs: jobs, JobsFingerprint: anarchon.FingerprintJobSet(jobs), JobCount: len(jobs)}
	full, _ := json.Marshal(info)
	info.Jobs = nil
	bare, _ := json.Marshal(info)
	if len(full) < 400_000 || len(full) > 600_000 || len(bare) > 512 {
		t.Errorf("record %d bytes with the list of 10,000 jobs, %d without; want about 0.5 MB and under 512 bytes", len(full), len(bare))
	}
}
