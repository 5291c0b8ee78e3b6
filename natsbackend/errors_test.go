package natsbackend_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestIsPermanentKinds(t *testing.T) {
	api := func(code int, ec jetstream.ErrorCode) error {
		return &jetstream.APIError{Code: code, ErrorCode: ec, Description: "test"}
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{jetstream.ErrBucketNotFound, true},
		{jetstream.ErrStreamNotFound, true},
		{jetstream.ErrJetStreamNotEnabled, true},
		{nats.ErrConnectionClosed, true},
		{nats.ErrAuthorization, true},
		{nats.ErrPermissionViolation, true},
		{nats.ErrMaxPayload, true},
		{api(400, jetstream.JSErrCodeBadRequest), true},
		{api(404, 10059), true},
		{api(400, jetstream.JSErrCodeStreamWrongLastSequence), false},
		{api(500, 10023), false}, // insufficient resources
		{api(503, 10008), false}, // temporarily unavailable
		{api(500, 10074), true},  // replicas > 1 on a server without a cluster
		{nats.ErrTimeout, false},
		{nats.ErrNoResponders, false},
		{jetstream.ErrNoStreamResponse, false},
		{context.DeadlineExceeded, false},
		{errors.New("other"), false},
	} {
		if got := natsbackend.IsPermanent(fmt.Errorf("wrapped: %w", tc.err)); got != tc.want {
			t.Errorf("IsPermanent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if !anarchon.IsPermanent(natsbackend.ErrInvalid) || !anarchon.IsPermanent(natsbackend.ErrBucketMismatch) {
		t.Error("ErrInvalid or ErrBucketMismatch is not marked permanent")
	}
	if anarchon.IsPermanent(natsbackend.ErrContention) {
		t.Error("ErrContention is marked permanent; a retry may get through")
	}
}

// TestErrorClasses: errors from a real server are marked
// anarchon.Permanent when a retry cannot fix them (a deleted bucket or
// stream, bad input, a closed backend), and not when it may (a cancelled
// context).
func TestErrorClasses(t *testing.T) {
	url := natsURL(t)
	ctx := t.Context()
	o := freshOptions(t, url)
	b := openN(t, url, o, 1)[0]
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, permanent bool) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", what)
			return
		}
		if anarchon.IsPermanent(err) != permanent {
			t.Errorf("%s: %v: permanent %v, want %v", what, err, anarchon.IsPermanent(err), permanent)
		}
	}
	// Replicas above 1 on a server without a cluster (the test server):
	// the daemon's start fails at once instead of retrying it.
	r3 := freshOptions(t, url)
	r3.Replicas = 3
	check("Init with 3 replicas on one server", openN(t, url, r3, 1)[0].Init(ctx), true)
	job := "classes"
	_, err := b.Claim(ctx, in("", 1000, "t", "i"))
	check("Claim with an empty job name", err, true)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = b.Claim(cancelled, in(job, 1000, "t", "i"))
	check("Claim on a cancelled context", err, false)

	js := jetStream(t, url)
	if err := js.DeleteStream(ctx, o.HistoryStream); err != nil {
		t.Fatal(err)
	}
	_, err = b.History(ctx, job, 0)
	check("History after the history stream was deleted", err, true)
	// The next call binds again and creates the stream (TestBucketLost):
	// a loss is not permanent for the backend, only for the call that met it.
	if err := b.Init(ctx); err != nil {
		t.Fatalf("Init after the stream was deleted: %v", err)
	}
	if err := js.DeleteKeyValue(ctx, o.Bucket); err != nil {
		t.Fatal(err)
	}
	bctx, bcancel := context.WithTimeout(ctx, 5*time.Second)
	defer bcancel()
	// Without the bucket's stream nobody answers the key's direct get:
	// "no responders", which a stream leader election gives too, so it
	// stays transient.
	_, err = b.Runs().Claim(bctx, anarchon.RunClaim{ClaimInput: in(job, 1000, "t", "i"), Lease: time.Minute})
	check("RunStore.Claim after the bucket was deleted (no responders)", err, false)
	if _, err := b.Runs().Claim(bctx, anarchon.RunClaim{ClaimInput: in(job, 1000, "t", "i"), Lease: time.Minute}); err != nil {
		t.Errorf("RunStore.Claim after the bucket was bound again: %v", err)
	}

	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = b.Claim(ctx, in(job, 1000, "t", "i"))
	check("Claim after Close", err, true)
}

// TestInitNamesMissingJetStream checks the error of a first bind that no
// JetStream API answers (a server started without -js): a JetStream
// context whose API prefix no server serves meets the same "no
// responders" on a real server, and Init's error keeps it reachable and
// says what to check.
func TestInitNamesMissingJetStream(t *testing.T) {
	url := natsURL(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.NewWithAPIPrefix(nc, "ANARCHON_NO_JS_"+randHex(4))
	if err != nil {
		t.Fatal(err)
	}
	b, err := natsbackend.NewJetStream(js, freshOptions(t, url))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = b.Init(ctx)
	if !errors.Is(err, nats.ErrNoResponders) || !strings.Contains(err.Error(), "is JetStream enabled") {
		t.Fatalf("Init: %v, want nats.ErrNoResponders with a hint to enable JetStream", err)
	}
	if anarchon.IsPermanent(err) {
		t.Fatalf("Init: %v is permanent; a server may enable JetStream later", err)
	}
}
