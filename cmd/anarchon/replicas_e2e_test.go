package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// statusJSON runs "anarchon status --json" with args.
func statusJSON(t *testing.T, dir string, args ...string) statusReport {
	t.Helper()
	cmd := exec.Command(daemonBinary(t), append([]string{"status", "--json"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("status: %v\n%s", err, stderr)
	}
	var rep statusReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	return rep
}

// httpBase returns the address the daemon printed in its summary.
func (p *proc) httpBase(t *testing.T) string {
	t.Helper()
	data, _ := os.ReadFile(p.logPath)
	i := strings.Index(string(data), "http://")
	if i < 0 {
		t.Fatalf("%s: no http address in the summary", p.id)
	}
	return strings.Fields(string(data[i:]))[0]
}

// replicaState returns the state of id in rep, "" if it is not listed.
func replicaState(rep statusReport, id string) (replicaJSON, bool) {
	for _, r := range rep.Replicas {
		if r.ID == id {
			return r, true
		}
	}
	return replicaJSON{}, false
}

// pollUntil calls check until it returns "" or within passes, and fails
// with the last thing check said. The state is another process's: there is
// nothing to wait on but the store.
func pollUntil(t *testing.T, within time.Duration, check func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// replicasDisagree runs two daemons with different crontabs on store: one
// job's command differs and one job is only in the second file. status
// names both jobs, /metrics shows the mismatch, and the second replica,
// SIGKILLed, is shown dead within its TTL, after which the mismatch is
// gone from /metrics.
func replicasDisagree(t *testing.T, store string) {
	daemonBinary(t)
	dir := t.TempDir()
	// Slots far away: the common jobs never run during the test. onlyb,
	// only in b's file, starts a long command every second (each slot
	// skipped while one runs), so that b holds a lease when it is killed.
	pids := filepath.Join(dir, "pids")
	ctA := writeFile(t, dir, "a.crontab", "# name: same\n0 0 1 1 * true\n# name: cmd\n0 0 1 1 * echo a\n")
	ctB := writeFile(t, dir, "b.crontab", "# name: same\n0 0 1 1 * true\n# name: cmd\n0 0 1 1 * echo b\n"+
		"# name: onlyb\n* * * * * * echo $$ >> "+pids+"; exec sleep 30\n")
	t.Cleanup(func() { // the commands of a SIGKILLed daemon live on
		data, _ := os.ReadFile(pids)
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				if p, err := os.FindProcess(pid); err == nil {
					_ = p.Kill()
				}
			}
		}
	})
	const ttl = 2 * time.Second
	common := []string{"--store", store, "--http", "127.0.0.1:0", "--log-level", "warn"}
	a := startDaemon(t, dir, "a", append([]string{"--crontab", ctA, "--registry-ttl", ttl.String()}, common...)...)
	a.waitReady(t, 60*time.Second)
	// ANARCHON_REGISTRY_TTL sets the flag as well as --registry-ttl does.
	b := startDaemonEnv(t, dir, "b", []string{"ANARCHON_REGISTRY_TTL=" + ttl.String()}, append([]string{"--crontab", ctB}, common...)...)
	b.waitReady(t, 60*time.Second)

	// Both registered before they printed their summaries: the first
	// status should already see them. The poll only absorbs a registration
	// the store refused once and the loop retried.
	started := time.Now()
	pollUntil(t, ttl, func() string {
		rep := statusJSON(t, dir, "--store", store, "--crontab", ctA)
		rb, ok := replicaState(rep, "b")
		if ra, _ := replicaState(rep, "a"); ra.State != "live" || rb.State != "live" {
			return "replicas not both live: " + rep.ReplicasError + " " + mustJSON(rep.Replicas)
		}
		if rb.TTLSeconds != ttl.Seconds() {
			return "b's TTL is not the one ANARCHON_REGISTRY_TTL gave: " + mustJSON(rb)
		}
		if !ok || rb.JobSetDiff == nil || !slices.Equal(rep.DifferingJobs, []string{"cmd", "onlyb"}) ||
			!slices.Equal(rb.JobSetDiff.Changed, []string{"cmd"}) || !slices.Equal(rb.JobSetDiff.Extra, []string{"onlyb"}) {
			return "status does not name the differing jobs: " + mustJSON(rep)
		}
		return ""
	})
	t.Logf("status named the differing jobs %v after both replicas were ready", time.Since(started).Round(time.Millisecond))

	// Without the job files status still lists the replicas.
	if rep := statusJSON(t, dir, "--store", store); len(rep.Replicas) != 2 || len(rep.Jobs) != 0 ||
		!slices.Equal(rep.DifferingJobs, []string{"cmd", "onlyb"}) {
		t.Errorf("status without job files: %s", mustJSON(rep))
	}

	// The text output names them too.
	text, err := exec.Command(daemonBinary(t), "status", "--store", store, "--crontab", ctA).Output()
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	for _, want := range []string{"replicas: 2 live", "WARNING: b runs another job set than a", "defined differently: cmd", "only on b: onlyb"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("status text lacks %q:\n%s", want, text)
		}
	}

	// /metrics of either replica, and /status.
	for _, p := range []*proc{a, b} {
		base := p.httpBase(t)
		pollUntil(t, ttl, func() string {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			body, code := httpGet(ctx, base+"/metrics")
			for _, want := range []string{"anarchon_job_set_mismatch 1", `anarchon_job_set_differs{job="cmd"} 1`,
				`anarchon_job_set_differs{job="onlyb"} 1`, `anarchon_job_set_differs{job="same"} 0`, `anarchon_instances{state="live"} 2`} {
				if code != 200 || !strings.Contains(body, want) {
					return p.id + ": /metrics lacks " + want
				}
			}
			return ""
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		body, code := httpGet(ctx, base+"/status")
		cancel()
		var st statusReport
		if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || len(st.Replicas) != 2 ||
			!slices.Equal(st.DifferingJobs, []string{"cmd", "onlyb"}) {
			t.Errorf("%s: /status %d %v: %s", p.id, code, err, body)
		}
	}

	// A SIGKILLed replica cannot deregister: it is listed dead once its
	// record expires, within one TTL of its last renewal, and the lease it
	// held (30 s by default) is marked as held by a dead replica.
	pollUntil(t, 10*time.Second, func() string {
		if data, _ := os.ReadFile(pids); len(data) == 0 {
			return "onlyb has not started on b"
		}
		return ""
	})
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-b.exited
	killed := time.Now()
	pollUntil(t, ttl+5*time.Second, func() string {
		rep := statusJSON(t, dir, "--store", store, "--crontab", ctA)
		if rb, _ := replicaState(rep, "b"); rb.State != "dead" {
			return "b not dead: " + mustJSON(rep.Replicas)
		}
		if len(rep.DifferingJobs) != 0 {
			return "a dead replica's jobs still counted as differing: " + mustJSON(rep.DifferingJobs)
		}
		return ""
	})
	rep := statusJSON(t, dir, "--store", store, "--crontab", ctB)
	var held bool
	for _, j := range rep.Jobs {
		for _, l := range j.Active {
			if j.Name == "onlyb" && l.Instance == "b" {
				held = true
				if l.HolderState != "dead" {
					t.Errorf("b's lease after b died: %+v", l)
				}
			}
		}
	}
	if !held {
		t.Errorf("no active lease of b's onlyb after b died: %s", mustJSON(rep.Jobs))
	}
	text, err = exec.Command(daemonBinary(t), "status", "--store", store, "--crontab", ctB).Output()
	if err != nil || !strings.Contains(string(text), "holder dead in the registry") || !strings.Contains(string(text), "replicas: 1 live, 1 dead") {
		t.Errorf("status after b died (%v):\n%s", err, text)
	}
	t.Logf("b listed dead %v after SIGKILL (TTL %v)", time.Since(killed).Round(time.Millisecond), ttl)
	base := a.httpBase(t)
	pollUntil(t, ttl+5*time.Second, func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		body, _ := httpGet(ctx, base+"/metrics")
		for _, want := range []string{"anarchon_job_set_mismatch 0", `anarchon_job_set_differs{job="cmd"} 0`,
			`anarchon_instances{state="live"} 1`, `anarchon_instances{state="dead"} 1`} {
			if !strings.Contains(body, want) {
				return "a: /metrics lacks " + want
			}
		}
		return ""
	})
	a.stop(t, 15*time.Second)
	rep = statusJSON(t, dir, "--store", store, "--crontab", ctA)
	if ra, _ := replicaState(rep, "a"); ra.State != "stopped" {
		t.Errorf("a after a clean stop: %+v", ra)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestReplicasDisagreeSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two daemons")
	}
	t.Parallel()
	replicasDisagree(t, "sqlite:"+filepath.Join(t.TempDir(), "anarchon.db"))
}

func TestReplicasDisagreePostgres(t *testing.T) {
	store := postgresStore(t, "two daemons", "e2e_")
	if testing.Short() {
		t.Skip("starts two daemons")
	}
	t.Parallel()
	replicasDisagree(t, store)
}
