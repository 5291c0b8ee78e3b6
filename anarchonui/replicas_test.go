package anarchonui

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// The replicas page lists the registry: live and dead instances by the
// store's clock, their versions and clock offsets, and the live instance
// whose job set differs from the majority's highlighted with the job that
// differs.
func TestReplicasPage(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b := membackend.New(&membackend.Options{Now: clock})
	s := anarchon.New(b, &anarchon.Options{InstanceID: "replica-a"})
	if err := s.Every("tick", time.Minute, nop, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	set := func(jobs ...anarchon.JobFingerprint) anarchon.InstanceInfo {
		return anarchon.InstanceInfo{Jobs: jobs, JobsFingerprint: anarchon.FingerprintJobSet(jobs)}
	}
	same := set(anarchon.JobFingerprint{Name: "tick", Fingerprint: "1111111111111111"}, anarchon.JobFingerprint{Name: "report", Fingerprint: "2222222222222222"})
	other := set(anarchon.JobFingerprint{Name: "tick", Fingerprint: "1111111111111111"}, anarchon.JobFingerprint{Name: "report", Fingerprint: "3333333333333333"})
	reg := func(id, version string, info anarchon.InstanceInfo, offset, ttl time.Duration) {
		info.ID, info.Version, info.ClockOffset, info.StartedAt = id, version, offset, now
		if err := b.RegisterInstance(ctx, info, ttl); err != nil {
			t.Fatal(err)
		}
	}
	reg("replica-dead", "v0.1.0", same, 0, time.Second)
	mu.Lock()
	now = now.Add(5 * time.Second) // past replica-dead's TTL
	mu.Unlock()
	reg("replica-a", "v0.1.0", same, 2*time.Millisecond, 15*time.Second)
	reg("replica-b", "v0.1.0", same, -3*time.Millisecond, 15*time.Second)
	reg("replica-c", "v0.2.0", other, 40*time.Millisecond, 15*time.Second)

	code, body := get(t, Handler(s, &Options{Now: clock}), "/replicas")
	if code != 200 {
		t.Fatalf("GET /replicas = %d\n%s", code, body)
	}
	rows := regexp.MustCompile(`<tr class="replica ([a-z ]+)" data-instance="([^"]+)" data-state="(\w+)">`).FindAllStringSubmatch(body, -1)
	got := map[string]string{}
	for _, r := range rows {
		got[r[2]] = r[1]
	}
	want := map[string]string{"replica-a": "live", "replica-b": "live", "replica-c": "live differs", "replica-dead": "dead"}
	if len(got) != len(want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	for id, cls := range want {
		if got[id] != cls {
			t.Errorf("%s: class %q, want %q", id, got[id], cls)
		}
	}
	for _, s := range []string{"v0.2.0", "40ms", "-3ms", "differs in: report", `id="jobset-mismatch"`, same.JobsFingerprint, other.JobsFingerprint, `replica-a <span class="tag">this</span>`} {
		if !strings.Contains(body, s) {
			t.Errorf("replicas page lacks %q", s)
		}
	}

	// A store without a registry says so.
	plain := anarchon.New(noRegistry{membackend.New(nil)}, nil)
	if _, body := get(t, Handler(plain, nil), "/replicas"); !strings.Contains(body, "keeps no instance registry") {
		t.Errorf("replicas page of a store without a registry:\n%s", body)
	}
}

// noRegistry hides the memory store's abilities but its Backend methods.
type noRegistry struct{ anarchon.Backend }
