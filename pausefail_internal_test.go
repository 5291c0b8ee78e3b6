package anarchon

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// histControl serves a fixed history and records the pauses it is asked
// for.
type histControl struct {
	nopStore
	hist   []RunRecord
	paused []PauseInput
}

func (b *histControl) History(context.Context, string, int) ([]RunRecord, error) { return b.hist, nil }
func (b *histControl) SetPaused(_ context.Context, in PauseInput) (JobState, error) {
	b.paused = append(b.paused, in)
	return JobState{Job: in.Job, Paused: in.Paused, By: in.By, Reason: in.Reason}, nil
}
func (b *histControl) JobState(context.Context, string) (JobState, error) { return JobState{}, nil }
func (b *histControl) JobStates(context.Context) ([]JobState, error)      { return nil, nil }

// PauseOnFailure's count, as its doc and SPEC §12 state it: runs that
// failed (error, abandoned) count, a success ends the row, slots that did
// not run (paused, missed, skipped) and runs still going neither count nor
// break it, and a slot counts once, by its newest record.
func TestPauseOnFailureCount(t *testing.T) {
	slot := func(i int) time.Time { return time.Unix(int64(1000-i), 0).UTC() }
	rec := func(i int, st Status) RunRecord { return RunRecord{Job: "j", Slot: slot(i), Status: st} }
	for _, c := range []struct {
		name  string
		hist  []RunRecord // newest first
		pause bool
	}{
		{"three failures", []RunRecord{rec(0, StatusError), rec(1, StatusAbandoned), rec(2, StatusError)}, true},
		{"a success ends the row", []RunRecord{rec(0, StatusError), rec(1, StatusError), rec(2, StatusSuccess), rec(3, StatusError)}, false},
		{"slots not run are ignored", []RunRecord{rec(0, StatusError), rec(1, StatusPaused), rec(2, StatusMissed), rec(3, StatusRunning),
			rec(4, StatusSkipped), rec(5, StatusError), rec(6, StatusError)}, true},
		{"a slot counts once", []RunRecord{rec(0, StatusError), rec(1, StatusError), rec(1, StatusError), rec(1, StatusError)}, false},
		{"by its newest record", []RunRecord{rec(0, StatusError), rec(1, StatusSuccess), rec(1, StatusError), rec(2, StatusError)}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &histControl{hist: c.hist}
			s := New(b, &Options{InstanceID: "i0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			j := &job{name: "j", opt: JobOptions{PauseOnFailure: 3}}
			s.afterFailure(context.Background(), j, "exit 1")
			if got := len(b.paused) == 1; got != c.pause {
				t.Fatalf("paused %v (%+v), want %v", got, b.paused, c.pause)
			}
			if c.pause && (!b.paused[0].Paused || b.paused[0].By != "i0") {
				t.Errorf("pause %+v, want paused by the instance", b.paused[0])
			}
		})
	}
}
