package redisbackend_test

import (
	"errors"
	"testing"

	"github.com/anarchon/anarchon/redisbackend"
)

// With MustExist, Init of a prefix no instance initialised fails with
// ErrNoData and writes no key; after a normal Init it succeeds and reads.
func TestMustExistWritesNothing(t *testing.T) {
	addr := redisAddr(t)
	prefix := freshPrefix(t, addr)
	c := newClient(t, addr, nil)
	reader, err := redisbackend.New(newClient(t, addr, nil), &redisbackend.Options{Prefix: prefix, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := reader.Init(t.Context()); !errors.Is(err, redisbackend.ErrNoData) {
			t.Fatalf("Init with MustExist on an empty prefix: %v, want ErrNoData", err)
		}
		keys, err := c.Keys(t.Context(), "*"+prefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			t.Fatalf("Init with MustExist wrote %q", keys)
		}
	}
	newBackend(t, addr, prefix, nil)
	if err := reader.Init(t.Context()); err != nil {
		t.Fatalf("Init with MustExist after a normal Init: %v", err)
	}
	if _, err := reader.History(t.Context(), "job", 10); err != nil {
		t.Fatalf("History with MustExist: %v", err)
	}
}
