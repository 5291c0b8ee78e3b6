package faults_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/faults"
)

// base is a slot boundary of the synthetic ledgers below.
var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) int64 { return base.Add(d).UnixMicro() }

func run(inst, job, token string, slot time.Duration, attempt int, start, end time.Duration, result string) []faults.Entry {
	s := faults.Entry{Ev: faults.EvStart, Inst: inst, Job: job, Token: token, Slot: base.Add(slot).UnixMilli(), Attempt: attempt, T: at(start), Local: at(start)}
	if end < 0 {
		return []faults.Entry{s}
	}
	e := s
	e.Ev, e.T, e.Local, e.Result = faults.EvEnd, at(end), at(end), result
	return []faults.Entry{s, e}
}

// fenced returns the lines of a run (run's) carrying fence.
func fenced(fence uint64, lines []faults.Entry) []faults.Entry {
	out := make([]faults.Entry, len(lines))
	for i, e := range lines {
		e.Fence = fence
		out[i] = e
	}
	return out
}

func rec(job, token string, slot time.Duration, st anarchon.Status) anarchon.RunRecord {
	return anarchon.RunRecord{Job: job, Token: token, Slot: base.Add(slot), Status: st}
}

func spec() faults.Spec {
	return faults.Spec{
		LeasedJob: "leased", PlainJob: "plain", LeasedInterval: 3 * time.Second, PlainInterval: time.Second,
		Lease: time.Second, Work: 2 * time.Second, From: base, To: base.Add(3 * time.Second),
	}
}

func cat(parts ...[]faults.Entry) []faults.Entry {
	var out []faults.Entry
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestCheck(t *testing.T) {
	const ms = time.Millisecond
	goodHistory := map[string][]anarchon.RunRecord{
		"leased": {rec("leased", "a", 0, anarchon.StatusSuccess), rec("leased", "b", 3*time.Second, anarchon.StatusSuccess)},
		"plain":  {rec("plain", "p", 0, anarchon.StatusSuccess)},
	}
	good := cat(
		run("i1.1", "leased", "a", 0, 1, 5*ms, 2005*ms, faults.ResultCompleted),
		run("i2.1", "leased", "b", 3*time.Second, 1, 3005*ms, 5005*ms, faults.ResultCompleted),
		run("i1.1", "plain", "p", 0, 1, 2*ms, 102*ms, faults.ResultCompleted),
	)
	tests := []struct {
		name    string
		entries []faults.Entry
		history map[string][]anarchon.RunRecord
		faults  []faults.Fault
		want    string // a substring of a violation; "" for none
	}{
		{"clean", good, goodHistory, nil, ""},
		{"plain slot twice", cat(good, run("i2.1", "plain", "q", 0, 1, 3*ms, 50*ms, faults.ResultCompleted)), goodHistory, nil, "ran 2 times"},
		{"early start", cat(good, run("i3.1", "plain", "e", time.Second, 1, 950*ms, 990*ms, faults.ResultCompleted)), goodHistory, nil, "before its slot"},
		{"lost slot", good[:2], map[string][]anarchon.RunRecord{"leased": goodHistory["leased"][:1]}, nil, "never settled"},
		{"backup overlaps the holder", cat(
			run("i1.1", "leased", "a", 0, 1, 5*ms, 2005*ms, faults.ResultCompleted),
			run("i2.1", "leased", "a2", 0, 2, 1500*ms, 1600*ms, faults.ResultStopped),
			good[2:]), goodHistory, nil, "before attempt 1 on i1.1 ended"},
		{"backup after the holder was killed", cat(
			run("i1.1", "leased", "a", 0, 1, 5*ms, -1, ""),
			run("i2.1", "leased", "a2", 0, 2, 1500*ms, 3000*ms, faults.ResultCompleted),
			good[2:]), goodHistory,
			[]faults.Fault{{Kind: faults.FaultKillWinner, Targets: []string{"i1.1"}, Start: base.Add(700 * ms)}}, ""},
		{"rerun after a kill before Finish", cat(
			run("i1.1", "leased", "a", 0, 1, 5*ms, 1005*ms, faults.ResultCompleted),
			run("i2.1", "leased", "a2", 0, 2, 2500*ms, 3000*ms, faults.ResultCompleted),
			good[2:]), goodHistory,
			[]faults.Fault{{Kind: faults.FaultKillWinner, Targets: []string{"i1.1"}, Start: base.Add(1010 * ms)}}, ""},
		{"rerun after a finish the store refused", cat(
			run("i1.1", "leased", "a", 0, 1, 5*ms, 1005*ms, faults.ResultCompleted),
			run("i2.1", "leased", "a2", 0, 2, 2500*ms, 3000*ms, faults.ResultCompleted),
			good[2:]), map[string][]anarchon.RunRecord{
			"leased": {rec("leased", "a", 0, anarchon.StatusUnconfirmed), rec("leased", "a2", 0, anarchon.StatusSuccess), goodHistory["leased"][1]},
			"plain":  goodHistory["plain"],
		}, nil, ""},
		{"completed twice", cat(
			run("i1.1", "leased", "a", 0, 1, 5*ms, 1005*ms, faults.ResultCompleted),
			run("i2.1", "leased", "a2", 0, 2, 2500*ms, 3000*ms, faults.ResultCompleted),
			good[2:]), goodHistory, nil, "completed 2 times"},
		{"settled twice", good, map[string][]anarchon.RunRecord{
			"leased": append(goodHistory["leased"], rec("leased", "abandoned-0", 0, anarchon.StatusAbandoned)),
			"plain":  goodHistory["plain"],
		}, nil, "settled 2 times"},
		{"ran during an outage", good, goodHistory,
			[]faults.Fault{{Kind: faults.FaultCut, Start: base.Add(-time.Second), End: base.Add(10 * ms)}}, "not fail-closed"},
		{"two holders with one attempt", cat(
			run("i1.1", "leased", "a", 0, 1, 5*ms, 1005*ms, faults.ResultStopped),
			run("i2.1", "leased", "a2", 0, 1, 1500*ms, 2000*ms, faults.ResultCompleted),
			good[2:]), goodHistory, nil, "one fencing number"},
		{"started past MaxLate", cat(good, run("i3.1", "plain", "l", time.Second, 1, 3500*ms, 3600*ms, faults.ResultCompleted)),
			goodHistory, nil, "past MaxLate"},
		{"started inside MaxLate", cat(good, run("i3.1", "plain", "l", time.Second, 1, 2500*ms, 2600*ms, faults.ResultCompleted)),
			goodHistory, nil, ""},
		{"started past MaxLate, inside Spawn", cat(good, run("i3.1", "plain", "l", time.Second, 1, 3150*ms, 3600*ms, faults.ResultCompleted)),
			goodHistory, nil, ""},
		{"started past MaxLate and Spawn", cat(good, run("i3.1", "plain", "l", time.Second, 1, 3250*ms, 3600*ms, faults.ResultCompleted)),
			goodHistory, nil, "past MaxLate"},
		{"lost during a node fault", good[:2], map[string][]anarchon.RunRecord{"leased": goodHistory["leased"][:1]},
			[]faults.Fault{{Kind: faults.FaultNodeKill, Targets: []string{"n1"}, Start: base.Add(2500 * ms), End: base.Add(4 * time.Second)}}, ""},
		// Fencing tokens: a takeover above the holder it replaced, each
		// start with a fence of its own.
		{"fenced takeover", cat(
			fenced(7, run("i1.1", "leased", "a", 0, 1, 5*ms, 1005*ms, faults.ResultStopped)),
			fenced(9, run("i2.1", "leased", "a2", 0, 2, 1500*ms, 2000*ms, faults.ResultCompleted)),
			fenced(10, good[2:4]), good[4:]), goodHistory, nil, ""},
		{"takeover with a smaller fence", cat(
			fenced(7, run("i1.1", "leased", "a", 0, 1, 5*ms, 1005*ms, faults.ResultStopped)),
			fenced(6, run("i2.1", "leased", "a2", 0, 2, 1500*ms, 2000*ms, faults.ResultCompleted)),
			fenced(10, good[2:4]), good[4:]), goodHistory, nil, "carries fence 6, not above fence 7 of attempt 1"},
		{"takeover with the same fence", cat(
			fenced(7, run("i1.1", "leased", "a", 0, 1, 5*ms, 1005*ms, faults.ResultStopped)),
			fenced(7, run("i2.1", "leased", "a2", 0, 2, 1500*ms, 2000*ms, faults.ResultCompleted)),
			fenced(10, good[2:4]), good[4:]), goodHistory, nil, "not above fence 7"},
		{"one fence on two slots", cat(fenced(7, good[:2]), fenced(7, good[2:4]), good[4:]), goodHistory, nil,
			"fence 7 carried by two starts"},
		{"Fence required, a start without one", cat(fenced(7, good[:2]), good[2:]), goodHistory, nil,
			"started on i2.1 without a fence"},
		{"Fence required, every start fenced", cat(fenced(7, good[:2]), fenced(8, good[2:4]), good[4:]), goodHistory, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp := spec()
			if strings.Contains(tc.name, "MaxLate") {
				sp.MaxLate = 2 * time.Second
			}
			if strings.Contains(tc.name, "Spawn") {
				sp.Spawn = 200 * time.Millisecond
			}
			sp.Fence = strings.HasPrefix(tc.name, "Fence required")
			r := faults.Check(sp, tc.entries, tc.history, tc.faults)
			all := strings.Join(r.Violations, "\n")
			if tc.want == "" && len(r.Violations) > 0 {
				t.Fatalf("unexpected violations:\n%s", all)
			}
			if tc.want != "" && !strings.Contains(all, tc.want) {
				t.Fatalf("want a violation containing %q, got:\n%s", tc.want, all)
			}
			if r.String() == "" {
				t.Fatal("empty report")
			}
			if tc.name == "rerun after a finish the store refused" {
				// The report names the slot's runs and what history says
				// of each, for a drill that failed in CI.
				want := "rerun: leased slot 00:00:00.000: #1 i1.1 00:00:00.005000–00:00:01.005000 completed, history [unconfirmed]; #2 i2.1"
				if r.Reruns != 1 || !strings.Contains(r.String(), want) {
					t.Errorf("reruns %d, report:\n%s\nwant a line containing %q", r.Reruns, r, want)
				}
			}
		})
	}
}

func TestLedgerRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := faults.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	want := run("i1.1", "leased", "tok", 0, 2, time.Millisecond, time.Second, faults.ResultCompleted)
	for _, e := range want {
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := faults.ReadLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("read %+v, want %+v", got, want)
	}
	if _, err := faults.OpenLedger(""); err == nil {
		t.Fatal("OpenLedger accepted an empty path")
	}
}

func TestOpenBadURL(t *testing.T) {
	for _, u := range []string{"", "nope", "ftp://user:secret@host/x", "nats://user:secret@127.0.0.1:1?replicas=x", "nats://user:secret@127.0.0.1:1?replicas=3&x=1"} {
		_, err := faults.Open(u)
		if err == nil {
			t.Fatalf("Open(%q) succeeded", u)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Fatalf("Open(%q): the error shows the password: %v", u, err)
		}
	}
}

// A stepped instance must measure the store's clock right again within
// one clock sync of each step; a line written after the step but read
// before it (its Local not under the new offset) does not count.
func TestCheckClockStep(t *testing.T) {
	const ms = time.Millisecond
	hist := map[string][]anarchon.RunRecord{
		"leased": {rec("leased", "a", 0, anarchon.StatusSuccess), rec("leased", "b", 3*time.Second, anarchon.StatusSuccess)},
		"plain":  {rec("plain", "p", 0, anarchon.StatusSuccess)},
	}
	runs := cat(
		run("i1.1", "leased", "a", 0, 1, 5*ms, 2005*ms, faults.ResultCompleted),
		run("i1.1", "leased", "b", 3*time.Second, 1, 3005*ms, 5005*ms, faults.ResultCompleted),
		run("i2.1", "plain", "p", 0, 1, 2*ms, 102*ms, faults.ResultCompleted),
	)
	// i2.1's clock steps +1 h at 1 s; offset lines: stale (read before the
	// step), wrong (old estimate under the new clock), right.
	step := faults.Entry{Ev: faults.EvStep, Inst: "i2.1", T: at(time.Second), Local: at(time.Second + time.Hour)}
	stale := faults.Entry{Ev: faults.EvOffset, Inst: "i2.1", T: at(1001 * ms), Local: at(1000 * ms)}
	wrong := faults.Entry{Ev: faults.EvOffset, Inst: "i2.1", T: at(1500 * ms), Local: at(1500*ms + time.Hour)}
	right := func(d time.Duration) faults.Entry {
		return faults.Entry{Ev: faults.EvOffset, Inst: "i2.1", T: at(d), Local: at(d + time.Hour), OffsetMs: -time.Hour.Milliseconds()}
	}
	end := faults.Entry{Ev: faults.EvStop, Inst: "i1.1", T: at(6 * time.Second), Local: at(6 * time.Second)}
	tests := []struct {
		name    string
		entries []faults.Entry
		want    string // a violation's text; "" for none
		sync    time.Duration
	}{
		{"right within a sync", cat(runs, []faults.Entry{step, stale, wrong, right(2200 * ms), end}), "", 1200 * ms},
		{"right after a sync", cat(runs, []faults.Entry{step, stale, wrong, right(2500 * ms), end}), "more than one clock sync", 1200 * ms},
		{"never right", cat(runs, []faults.Entry{step, stale, wrong, end}), "never measured the store's clock right again", 1200 * ms},
		{"no ClockSync", cat(runs, []faults.Entry{step, right(1100 * ms), end}), "Spec.ClockSync is not set", 0},
		{"unjudged: the ledger ends within a sync", cat(runs, []faults.Entry{step, stale, wrong, end}), "", 10 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp := spec()
			sp.ClockSync = tc.sync
			r := faults.Check(sp, tc.entries, hist, nil)
			got := strings.Join(r.Violations, "\n")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Fatalf("violations %q, want %q", got, tc.want)
			}
			if tc.sync > 0 && r.Steps != 1 {
				t.Errorf("Steps %d, want 1", r.Steps)
			}
			if unjudged := strings.HasPrefix(tc.name, "unjudged"); unjudged != (r.StepsUnjudged == 1) {
				t.Errorf("StepsUnjudged %d", r.StepsUnjudged)
			}
			if tc.name == "right within a sync" && r.SlowestStepSync != 1200*ms {
				t.Errorf("SlowestStepSync %v, want 1.2s", r.SlowestStepSync)
			}
		})
	}
}
