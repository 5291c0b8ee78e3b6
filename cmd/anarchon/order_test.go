package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// A command's stdout and stderr reach the history's tail, the log and the
// failed run's output= attribute in the order the command wrote them (one
// pipe for both, as cron gives them), unless --split-logs sends them to
// two places.
func TestOutputOrder(t *testing.T) {
	// 40 lines, alternating between the streams, then a failure.
	script := `i=0; while [ $i -lt 20 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done; exit 3`
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("out %d", i), fmt.Sprintf("err %d", i))
	}
	job := &jobSpec{Name: "order", Schedule: "@daily", Argv: []string{"/bin/sh", "-c", script}}
	for run := range 5 {
		var logBuf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logBuf, nil))
		e := &executor{log: log, instance: "t", grace: time.Second}
		o := newOutcomes(log, "t", e)
		s := anarchon.New(membackend.New(nil), &anarchon.Options{InstanceID: "t", Logger: slog.New(slog.DiscardHandler), OnEvent: o.observe})
		if errs := register(s, s, []*jobSpec{job}, e.handler); len(errs) > 0 {
			t.Fatal(errs)
		}
		rec, err := s.RunNow(t.Context(), job.Name)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Split(strings.TrimSpace(rec.Output), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("run %d: history output out of order:\n%s", run, rec.Output)
		}
		var logged []string
		for _, l := range strings.Split(logBuf.String(), "\n") {
			if i := strings.Index(l, ` msg="`); i >= 0 && strings.Contains(l, "stream=") {
				m := l[i+6:]
				logged = append(logged, m[:strings.IndexByte(m, '"')])
			}
		}
		if strings.Join(logged, "|") != strings.Join(want, "|") {
			t.Fatalf("run %d: log lines out of order: %q", run, logged)
		}
		wantAttr := `output="` + strings.Join(want[len(want)-failureLines:], `\n`) + `"`
		if !strings.Contains(logBuf.String(), wantAttr) {
			t.Fatalf("run %d: run failed line lacks %s:\n%s", run, wantAttr, logBuf.String())
		}
	}
}
