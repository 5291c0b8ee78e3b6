package natsbackend_test

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// loggedBackend opens and binds a backend on fresh names, logging to
// the buffer it returns.
func loggedBackend(t *testing.T) (string, *natsbackend.Options, *natsbackend.Backend, *syncBuffer) {
	url := natsURL(t)
	o := freshOptions(t, url)
	logs := &syncBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	b := openN(t, url, o, 1)[0]
	if err := b.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	return url, o, b, logs
}

// A bucket and stream deleted under a running backend (an operator, a
// server that lost its JetStream directory) are bound again: the call
// that meets the loss fails (closed), an ERROR names it, the backend
// creates them again, and the next claims succeed instead of failing
// forever.
func TestBucketLost(t *testing.T) {
	url, o, b, logs := loggedBackend(t)
	ctx := t.Context()
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	claim := func(slot int64, tok string) (bool, error) {
		return b.Claim(ctx, anarchon.ClaimInput{Job: "j", Slot: slot, Token: tok, InstanceID: "a", HistorySize: 10})
	}
	if ok, err := claim(slot, "a"); err != nil || !ok {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	js := jetStream(t, url)
	if err := js.DeleteKeyValue(ctx, o.Bucket); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, o.HistoryStream); err != nil {
		t.Fatal(err)
	}
	if ok, err := claim(slot+1000, "b"); err == nil {
		t.Fatalf("the first claim after the bucket was deleted succeeded (%v): the loss went unseen", ok)
	}
	var recovered bool
	for range 3 {
		ok, err := claim(slot+2000, "c")
		if err == nil && ok {
			recovered = true
			break
		}
	}
	if !recovered {
		t.Fatal("claims still fail after the bucket was deleted: the backend did not bind again")
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), o.Bucket) {
		t.Errorf("no ERROR naming the bucket: %q", logs.String())
	}
	if _, err := b.History(ctx, "j", 0); err != nil {
		t.Errorf("History after the stream was created again: %v", err)
	}
}

// TestClaimWonHistoryRecordFails: a lease claim whose run is created and
// listed but whose claim record the history stream does not take (here
// its subjects changed under the backend, which answers as a stream
// without a leader does: no responders) is won, with a WARN, both with
// the overlap check and without: the run is this instance's, with a lease
// only it renews. Failing it ran the slot nowhere and kept a live run in
// the job key, which skipped every later slot as an overlap until the
// lease ended.
func TestClaimWonHistoryRecordFails(t *testing.T) {
	url, o, b, logs := loggedBackend(t)
	ctx := t.Context()
	js := jetStream(t, url)
	s, err := js.Stream(ctx, o.HistoryStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.Subjects = []string{"elsewhere.>"}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Truncate(time.Second).UnixMilli()
	for k, overlap := range []bool{false, true} {
		in := anarchon.ClaimInput{Job: "j" + strconv.Itoa(k), Slot: slot, Token: "t" + strconv.Itoa(k), InstanceID: "a", HistorySize: 10}
		out, err := b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: in, Lease: time.Minute, AllowOverlap: !overlap})
		if err != nil || out.Kind != anarchon.OutcomeWon || out.Attempt != 1 {
			t.Errorf("overlap check %v: claim = %+v, %v; want won", overlap, out, err)
		}
	}
	if got := strings.Count(logs.String(), "a won claim's history record failed"); got != 2 {
		t.Errorf("%d WARNs about the record, want 2; logs:\n%s", got, logs.String())
	}
}
