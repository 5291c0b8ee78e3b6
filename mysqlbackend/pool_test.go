package mysqlbackend_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/mysqlbackend"
)

// TestPoolSize checks the bound Open puts on its pool (no server needed:
// Open does no I/O): DefaultMaxConns by default, Options.MaxConns when
// set, and a negative MaxConns refused.
func TestPoolSize(t *testing.T) {
	const dsn = "u:p@tcp(127.0.0.1:1)/db"
	for _, c := range []struct{ set, want int }{{0, mysqlbackend.DefaultMaxConns}, {3, 3}} {
		b, err := mysqlbackend.Open(dsn, &mysqlbackend.Options{MaxConns: c.set})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.DB().Stats().MaxOpenConnections; got != c.want {
			t.Errorf("MaxConns %d: the pool holds at most %d connections, want %d", c.set, got, c.want)
		}
		b.Close(context.Background())
	}
	b, err := mysqlbackend.Open(dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	if got := b.DB().Stats().MaxOpenConnections; got != mysqlbackend.DefaultMaxConns {
		t.Errorf("nil options: the pool holds at most %d connections, want %d", got, mysqlbackend.DefaultMaxConns)
	}
	if _, err := mysqlbackend.Open(dsn, &mysqlbackend.Options{MaxConns: -1}); err == nil {
		t.Error("Open with MaxConns -1: no error")
	}
}

// TestPoolBound sends 200 claims at once through a backend whose pool
// holds 4 connections: every claim succeeds, the pool never opened more
// than 4, and claims waited for a connection instead of opening one.
func TestPoolBound(t *testing.T) {
	prefix := freshPrefix(t)
	b, err := mysqlbackend.Open(serverDSN(t), &mysqlbackend.Options{Prefix: prefix, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	ctx := t.Context()
	if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: "pool", HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	slot0 := time.Now().Add(-time.Hour).Truncate(time.Minute).UnixMilli()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	var mu sync.Mutex
	peak := 0
	for k := range 200 {
		wg.Go(func() {
			in := anarchon.ClaimInput{Job: "pool", Slot: slot0 - int64(k)*1000, Token: fmt.Sprint("t", k), InstanceID: "i"}
			if ok, err := b.Claim(ctx, in); err != nil || !ok {
				errs <- fmt.Errorf("claim %d = %v, %v; want true, nil", k, ok, err)
			}
			mu.Lock()
			peak = max(peak, b.DB().Stats().OpenConnections)
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := b.DB().Stats()
	if peak > 4 || st.OpenConnections > 4 {
		t.Errorf("the pool had up to %d connections open (%d now), want at most 4", peak, st.OpenConnections)
	}
	if st.WaitCount == 0 {
		t.Error("no claim waited for a connection: the burst did not reach the bound")
	}
	t.Logf("200 claims, at most %d connections open, %d waits for one", peak, st.WaitCount)
}
