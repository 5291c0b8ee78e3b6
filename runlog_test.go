package anarchon_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// jsonLines decodes the JSON log lines in l.
func jsonLines(t *testing.T, l *logBuffer) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// A handler's failure reaches the scheduler's logger: an error at WARN
// ("run failed", with the job, slot, attempt and error), a panic at ERROR
// with its stack; a success logs no run line. Before, neither reached
// the log at any level.
func TestRunFailuresAreLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		s := newSched(t, membackend.New(nil), "i0", &anarchon.Options{Logger: log})
		ran := make(chan struct{}, 3)
		handlers := map[string]anarchon.Handler{
			"fails":  func(context.Context, *anarchon.Run) error { ran <- struct{}{}; return errors.New("disk full") },
			"panics": func(context.Context, *anarchon.Run) error { ran <- struct{}{}; panic("out of paper") },
			"works":  func(context.Context, *anarchon.Run) error { ran <- struct{}{}; return nil },
		}
		for name, h := range handlers {
			if err := s.Every(name, time.Hour, h, &anarchon.JobOptions{NoLease: true}); err != nil {
				t.Fatal(err)
			}
		}
		mustStart(t, s)
		for range handlers {
			<-ran
		}
		synctest.Wait()
		stopAll(t, s)
		got := map[string]map[string]any{}
		for _, l := range jsonLines(t, &buf) {
			if msg, _ := l["msg"].(string); strings.HasPrefix(msg, "run ") {
				got[l["job"].(string)] = l
			}
		}
		if l := got["fails"]; l == nil || l["level"] != "WARN" || l["msg"] != "run failed" || l["error"] != "disk full" || l["attempt"] != float64(1) || l["slot"] == nil {
			t.Errorf("failed run logged as %v; want WARN \"run failed\" with the error, attempt and slot", l)
		}
		if l := got["panics"]; l == nil || l["level"] != "ERROR" || l["msg"] != "run panicked" ||
			!strings.Contains(l["error"].(string), "out of paper") || !strings.Contains(l["stack"].(string), "runlog_test.go") {
			t.Errorf("panicked run logged as %v; want ERROR \"run panicked\" with the panic and its stack", l)
		}
		if l := got["works"]; l != nil {
			t.Errorf("a successful run logged %v", l)
		}
	})
}
