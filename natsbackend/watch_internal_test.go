package natsbackend

import (
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/nats-io/nats.go/jetstream"
)

// entry is a watched put of key with value v, as a KV watch delivers it.
type entry struct {
	jetstream.KeyValueEntry
	key string
	v   []byte
}

func (e entry) Key() string                     { return e.key }
func (e entry) Value() []byte                   { return e.v }
func (e entry) Operation() jetstream.KeyValueOp { return jetstream.KeyValuePut }
func (e entry) Created() time.Time              { return time.Time{} }
func (e entry) Revision() uint64                { return 1 }

// TestRunEventPassesOverRunningRuns: a run written running (a claim, a
// takeover, a renewal) is no event, whatever else it holds, and is
// passed over by its first bytes; every settled or released run is its
// event.
func TestRunEventPassesOverRunningRuns(t *testing.T) {
	enc, err := encodeJob("job")
	if err != nil {
		t.Fatal(err)
	}
	key := runKey(enc, 1000)
	running := runValue{State: anarchon.RunStateRunning, Token: "t", Holder: "i", Attempt: 2, LeaseMs: 5000}
	if v := encodeRun(running); string(v[:len(runningPrefix)]) != `{"st":"running"` {
		t.Fatalf("a running run is written %s; runningPrefix is %s", v, runningPrefix)
	}
	if ev, ok := runEvent(entry{key: key, v: encodeRun(running)}); ok {
		t.Errorf("a running run made the event %+v", ev)
	}
	for st, want := range map[anarchon.RunState]anarchon.RunEventKind{
		anarchon.RunStateReleased: anarchon.RunReleased,
		anarchon.RunStateDone:     anarchon.RunFinished,
		anarchon.RunStateMissed:   anarchon.RunFinished,
		anarchon.RunStateSkipped:  anarchon.RunFinished,
		anarchon.RunStatePaused:   anarchon.RunFinished,
	} {
		v := running
		v.State = st
		ev, ok := runEvent(entry{key: key, v: encodeRun(v)})
		if !ok || ev.Kind != want || ev.Job != "job" || ev.Slot != 1000 {
			t.Errorf("a %s run made the event %+v, %v; want %v of job 1000", st, ev, ok, want)
		}
	}
}
