package redisbackend_test

import (
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// TestMemoryPerRun measures what a job's retained runs cost in Redis
// (MEMORY USAGE over the job's keys) and checks that trimming keeps it
// bounded: after 3×HistorySize runs the job holds HistorySize of them.
func TestMemoryPerRun(t *testing.T) {
	addr := redisAddr(t)
	prefix := freshPrefix(t, addr)
	b := newBackend(t, addr, prefix, nil)
	c := b.Client()
	const size = 100
	job := "memory"
	slot0 := time.Now().Truncate(time.Minute).Add(-6 * time.Hour).UnixMilli() // every slot due: never early
	usage := func() int64 {
		var total int64
		keys, err := c.Keys(t.Context(), "{"+prefix+":"+job+"}:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			n, err := c.MemoryUsage(t.Context(), k, 0).Result()
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
		return total
	}
	var at100 int64
	for i := range 3 * size {
		tok := randToken()
		slot := slot0 + int64(i)*60000
		in := anarchon.ClaimInput{Job: job, Slot: slot, Token: tok, InstanceID: "host-1.example:4242", HistorySize: size}
		if ok, err := b.Claim(t.Context(), in); err != nil || !ok {
			t.Fatal(ok, err)
		}
		now := time.Now()
		r := anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: in.InstanceID, Attempt: 1, Status: anarchon.StatusSuccess, StartedAt: now, FinishedAt: now.Add(time.Second)}
		if err := b.SaveResult(t.Context(), anarchon.SaveResultInput{Job: job, Result: r, HistorySize: size}); err != nil {
			t.Fatal(err)
		}
		if i == size-1 {
			at100 = usage()
		}
	}
	at300 := usage()
	recs, err := b.History(t.Context(), job, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != size {
		t.Errorf("History after %d runs with HistorySize %d: %d records", 3*size, size, len(recs))
	}
	t.Logf("%d retained runs: %d bytes (%d bytes/run, no error text or output); after %d runs: %d bytes",
		size, at100, at100/size, 3*size, at300)
	if at300 > at100+at100/2 {
		t.Errorf("memory grew from %d to %d bytes although HistorySize bounds it", at100, at300)
	}
	if mark, err := c.HGet(t.Context(), "{"+prefix+":"+job+"}:run", "mark").Result(); err != nil || !strings.HasPrefix(mark, "1") {
		t.Errorf("watermark %q, %v", mark, err)
	}
}
