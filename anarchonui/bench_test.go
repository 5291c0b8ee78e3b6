//go:build unix

package anarchonui

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkJobPage10k renders the page of a job whose store keeps 10,000
// history records (5,000 slots, half of them taken over: attempt 1
// lease_lost, attempt 2 success), server-side: the store read, the
// grouping into slots and the template. The acceptance bound is 200 ms per
// page. "first" is the page as served (the newest PageSize slots, 100 by
// default); "all" renders all 7,500 slots on one page. Besides the wall
// time it reports cpu-ms/op, the process's user and system CPU time per
// page, which a machine loaded by other work inflates less.
func BenchmarkJobPage10k(b *testing.B) {
	for _, c := range []struct {
		name string
		path string
	}{{"first", "/job/report"}, {"all", "/job/report"}} {
		b.Run(c.name, func(b *testing.B) {
			s, st := newScheduler(b, 10_000)
			base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := range 5_000 {
				slot := base.Add(time.Duration(i) * 5 * time.Minute)
				if i%2 == 0 {
					save(b, st, slot, "replica-a", fmt.Sprint("a", i), 1, anarchon.StatusLeaseLost, "lease lost", 10_000)
					save(b, st, slot, "replica-b", fmt.Sprint("b", i), 2, anarchon.StatusSuccess, "", 10_000)
				} else {
					save(b, st, slot, "replica-c", fmt.Sprint("c", i), 1, anarchon.StatusSuccess, "", 10_000)
					save(b, st, slot.Add(time.Second), "replica-c", fmt.Sprint("m", i), 1, anarchon.StatusError, "exit status 1", 10_000)
				}
			}
			size := 0
			if c.name == "all" {
				size = 10_000
			}
			h := Handler(s, &Options{PageSize: size})
			if recs, _ := s.History(b.Context(), "report", 0); len(recs) != 10_000 {
				b.Fatalf("store keeps %d records, want 10000", len(recs))
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, loopback(httptest.NewRequest("GET", c.path, nil)))
				if w.Code != 200 || !strings.Contains(w.Body.String(), `data-attempt="2" data-status="success"`) {
					b.Fatalf("GET %s = %d", c.path, w.Code)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}
