package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestFingerprintMaterial: every part of a job beyond its schedule changes
// the material, and equal jobs give equal material.
func TestFingerprintMaterial(t *testing.T) {
	base := func() *jobSpec {
		return &jobSpec{Name: "j", Schedule: "* * * * *", Argv: []string{"/bin/sh", "-c", "echo a"}, Env: []string{"A=1"}}
	}
	ref := fingerprintMaterial(base())
	if fingerprintMaterial(base()) != ref {
		t.Fatal("the same job gives two materials")
	}
	changes := map[string]func(*jobSpec){
		"command": func(j *jobSpec) { j.Argv[2] = "echo b" },
		"shell":   func(j *jobSpec) { j.Argv[0] = "/bin/bash" },
		"argv":    func(j *jobSpec) { j.Argv = []string{"/bin/sh", "-c", "echo", "a"} },
		"stdin":   func(j *jobSpec) { j.Stdin = "x\n" },
		"env":     func(j *jobSpec) { j.Env = []string{"A=2"} },
		"env2":    func(j *jobSpec) { j.Env = append(j.Env, "B=1") },
		"workdir": func(j *jobSpec) { j.Workdir = "/tmp" },
		"user":    func(j *jobSpec) { j.User = "nobody" },
		"timeout": func(j *jobSpec) { j.Options.Timeout = time.Minute },
	}
	seen := map[string]string{ref: "base"}
	for name, change := range changes {
		j := base()
		change(j)
		m := fingerprintMaterial(j)
		if other, dup := seen[m]; dup {
			t.Errorf("%s: same material as %s", name, other)
		}
		seen[m] = name
	}
}

// startReplica starts a scheduler with the jobs of a crontab on b.
func startReplica(t *testing.T, b anarchon.Backend, id, crontab string) *anarchon.Scheduler {
	t.Helper()
	jobs, errs := parseTestCrontab(t, crontab)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	s := anarchon.New(b, &anarchon.Options{InstanceID: id, RegistryTTL: time.Hour})
	r := anarchon.New(b, &anarchon.Options{InstanceID: id})
	if errs := register(s, r, jobs, func(*jobSpec) anarchon.Handler { return noop }); len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

func parseTestCrontab(t *testing.T, text string) ([]*jobSpec, []error) {
	t.Helper()
	path := writeFile(t, t.TempDir(), "crontab", text)
	jobs, all, _ := sources{Crontabs: []string{path}}.load()
	errs, _ := splitWarnings(all)
	return jobs, errs
}

// TestReplicasDiffer: two replicas whose crontabs differ in one command and
// one job are told apart by status and the metrics, which name both jobs.
func TestReplicasDiffer(t *testing.T) {
	b := membackend.New(nil)
	a := startReplica(t, b, "a", "# name: same\n0 0 1 1 * true\n# name: cmd\n0 0 1 1 * echo a\n")
	startReplica(t, b, "b", "# name: same\n0 0 1 1 * true\n# name: cmd\n0 0 1 1 * echo b\n# name: onlyb\n0 0 1 1 * true\n")

	d := &daemon{backend: b, sched: a, store: "memory:"}
	rep := d.status(context.Background())
	if rep.ReplicasError != "" || len(rep.Replicas) != 2 {
		t.Fatalf("replicas %+v (%s)", rep.Replicas, rep.ReplicasError)
	}
	if want := []string{"cmd", "onlyb"}; !slices.Equal(rep.DifferingJobs, want) {
		t.Errorf("differing jobs %v, want %v", rep.DifferingJobs, want)
	}
	// a started first: with a tie it is the reference, and b differs.
	rb := rep.Replicas[1]
	if rb.ID != "b" || rb.State != "live" || rb.JobSetDiff == nil || rb.JobSetDiff.Reference != "a" ||
		!slices.Equal(rb.JobSetDiff.Changed, []string{"cmd"}) || !slices.Equal(rb.JobSetDiff.Extra, []string{"onlyb"}) {
		t.Errorf("replica b: %+v diff %+v", rb, rb.JobSetDiff)
	}
	if rep.Replicas[0].JobSetDiff != nil {
		t.Errorf("the reference has a diff: %+v", rep.Replicas[0].JobSetDiff)
	}
	var out strings.Builder
	printReplicas(&out, rep)
	for _, want := range []string{"replicas: 2 live, 0 dead, 0 stopped", "defined differently: cmd", "only on b: onlyb",
		"jobs that differ between live replicas: cmd, onlyb"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, out.String())
		}
	}

	m := newMetrics()
	m.initJobs([]*jobSpec{{Name: "same"}, {Name: "cmd"}})
	if v := testutil.ToFloat64(m.differs.WithLabelValues("cmd")); v != 0 {
		t.Errorf("differs before a refresh: %v", v)
	}
	m.refreshReplicas(context.Background(), a)
	if v := testutil.ToFloat64(m.mismatch); v != 1 {
		t.Errorf("mismatch %v, want 1", v)
	}
	for job, want := range map[string]float64{"same": 0, "cmd": 1, "onlyb": 1} {
		if v := testutil.ToFloat64(m.differs.WithLabelValues(job)); v != want {
			t.Errorf("differs{job=%q} %v, want %v", job, v, want)
		}
	}
	if v := testutil.ToFloat64(m.instances.WithLabelValues("live")); v != 2 {
		t.Errorf("live instances %v, want 2", v)
	}
}

// TestReplicasAgree: equal crontabs, written differently where it does not
// matter, give no difference.
func TestReplicasAgree(t *testing.T) {
	b := membackend.New(nil)
	a := startReplica(t, b, "a", "# name: x\n0 0 1 1 * echo a\n")
	startReplica(t, b, "b", "# a comment\n\n# name: x\n0  0 1 1 *   echo a\n")
	rep := (&daemon{backend: b, sched: a}).status(context.Background())
	if len(rep.Replicas) != 2 || len(rep.DifferingJobs) != 0 || rep.Replicas[0].JobsFingerprint != rep.Replicas[1].JobsFingerprint {
		t.Errorf("replicas %+v differing %v", rep.Replicas, rep.DifferingJobs)
	}
}

// TestMetricsFromStoreHistory: the last-success gauge comes from the
// store's history, so a replica reports a run another replica made; the
// next-slot gauge is the job's next slot; a job with no failure keeps its
// last-failure gauge at 0.
func TestMetricsFromStoreHistory(t *testing.T) {
	b := membackend.New(nil)
	const crontab = "# name: j\n0 0 1 1 * true\n"
	a := startReplica(t, b, "a", crontab)
	other := startReplica(t, b, "b", crontab)
	before := time.Now()
	if _, err := other.RunNow(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	jobs, _ := parseTestCrontab(t, crontab)
	m := newMetrics()
	m.initJobs(jobs)
	m.refreshFromStore(context.Background(), &daemon{backend: b, sched: a, jobs: jobs})
	if v := testutil.ToFloat64(m.lastOK.WithLabelValues("j")); v < float64(before.Add(-time.Second).Unix()) || v > float64(time.Now().Add(time.Second).Unix()) {
		t.Errorf("last success %v, want the time of b's run (about %d)", v, before.Unix())
	}
	if v := testutil.ToFloat64(m.lastFail.WithLabelValues("j")); v != 0 {
		t.Errorf("last failure %v with no failure", v)
	}
	next := time.Date(time.Now().UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC)
	if v := testutil.ToFloat64(m.nextSlot.WithLabelValues("j")); v != float64(next.Unix()) {
		t.Errorf("next slot %v, want %d (%v)", v, next.Unix(), next)
	}
}
