package natsbackend_test

import (
	"errors"
	"testing"

	"github.com/anarchon/anarchon/natsbackend"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// With MustExist, neither Init nor a read creates the bucket or the
// stream: both fail with ErrNoData until a normal Init made them.
func TestMustExistCreatesNothing(t *testing.T) {
	url := natsURL(t)
	o := freshOptions(t, url)
	ro := *o
	ro.MustExist = true
	reader := openN(t, url, &ro, 1)[0]
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := reader.Init(t.Context()); !errors.Is(err, natsbackend.ErrNoData) {
			t.Fatalf("Init with MustExist on no bucket: %v, want ErrNoData", err)
		}
		if _, err := reader.History(t.Context(), "job", 10); !errors.Is(err, natsbackend.ErrNoData) {
			t.Fatalf("History with MustExist on no bucket: %v, want ErrNoData", err)
		}
		if _, err := js.KeyValue(t.Context(), o.Bucket); !errors.Is(err, jetstream.ErrBucketNotFound) {
			t.Fatalf("bucket %s after reads with MustExist: %v, want not found", o.Bucket, err)
		}
		if _, err := js.Stream(t.Context(), o.HistoryStream); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatalf("stream %s after reads with MustExist: %v, want not found", o.HistoryStream, err)
		}
	}
	if err := openN(t, url, o, 1)[0].Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := reader.Init(t.Context()); err != nil {
		t.Fatalf("Init with MustExist after a normal Init: %v", err)
	}
	if _, err := reader.History(t.Context(), "job", 10); err != nil {
		t.Fatalf("History with MustExist: %v", err)
	}
}
