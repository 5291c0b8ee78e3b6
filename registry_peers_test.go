package anarchon_test

import (
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// An instance logs the others as its registry listings show them: none
// at Start, each one joining, one stopping cleanly, one that stops
// renewing (at WARN, once its record is dead), the same one back, and
// one killed and started again within its TTL (SPEC §10, "Peers in the
// log"). Each change is logged once, at the first renewal that lists it.
func TestRegistryPeersLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		bStore := &failingRegistry{Backend: store}
		dStore := &failingRegistry{Backend: store}
		const ttl = 3 * time.Second
		var aLogs, bLogs logBuffer
		opts := func(l *logBuffer) *anarchon.Options {
			return &anarchon.Options{RegistryTTL: ttl, Logger: slog.New(slog.NewTextHandler(l, nil))}
		}
		count := func(l *logBuffer, msg, instance string) int {
			n := 0
			for _, line := range strings.Split(l.String(), "\n") {
				if strings.Contains(line, "msg=\""+msg+"\"") && strings.Contains(line, " peer="+instance) {
					n++
				}
			}
			return n
		}
		want := func(l *logBuffer, msg, instance string, n int) {
			t.Helper()
			if got := count(l, msg, instance); got != n {
				t.Fatalf("%d lines %q of %s, want %d:\n%s", got, msg, instance, n, l.String())
			}
		}

		a := newSched(t, store, "a", opts(&aLogs))
		mustStart(t, a)
		if !strings.Contains(aLogs.String(), `msg="no other live instance in the registry"`) {
			t.Fatalf("a alone at Start:\n%s", aLogs.String())
		}
		// The others start half a renewal after a, so that none of their
		// writes falls at the instant of one of a's listings, whose order
		// would be the scheduler's to choose (a at 0, 1, 2 … s; b at
		// 0.5, 1.5 … s).
		time.Sleep(ttl / 6)
		b := newSched(t, bStore, "b", opts(&bLogs))
		c := newSched(t, store, "c", nil)
		mustStart(t, b)
		mustStart(t, c)
		if !strings.Contains(bLogs.String(), `msg="other live instances in the registry" instance=b count=1 peers=a`) {
			t.Fatalf("b at Start, with a live:\n%s", bLogs.String())
		}
		time.Sleep(ttl/3 + time.Millisecond)
		want(&aLogs, "instance joined", "b", 1)
		want(&aLogs, "instance joined", "c", 1)

		stopAll(t, c)
		time.Sleep(ttl / 3)
		want(&aLogs, "instance stopped", "c", 1)

		bStore.fail.Store(true) // b renewed last 1 ms ago, at 2.5 s: dead at 5.5 s
		time.Sleep(ttl - ttl/3)
		want(&aLogs, "instance stopped renewing its registry record (killed, hung or cut off from the store); backups take over its leased runs when their leases end", "b", 0)
		time.Sleep(2*ttl/3 + time.Millisecond)
		want(&aLogs, "instance stopped renewing its registry record (killed, hung or cut off from the store); backups take over its leased runs when their leases end", "b", 1)
		if !strings.Contains(aLogs.String(), "level=WARN msg=\"instance stopped renewing") {
			t.Fatalf("a dead instance is not a warning:\n%s", aLogs.String())
		}
		bStore.fail.Store(false) // b renews at 7.5 s, a lists at 8 s
		time.Sleep(2*ttl/3 + time.Millisecond)
		want(&aLogs, "instance joined", "b", 2)

		// d is killed (it renews no more and never deregisters) and a new
		// process starts under its ID before its record is dead.
		d1 := newSched(t, dStore, "d", nil)
		mustStart(t, d1)
		time.Sleep(ttl/3 + time.Millisecond)
		want(&aLogs, "instance joined", "d", 1)
		dStore.fail.Store(true)
		time.Sleep(time.Second)
		d2 := newSched(t, store, "d", nil)
		mustStart(t, d2)
		time.Sleep(ttl/3 + time.Millisecond)
		want(&aLogs, "instance started again", "d", 1)
		want(&aLogs, "instance joined", "d", 1)

		stopAll(t, d2, d1, b, a)
		for _, msg := range []string{"instance joined", "instance stopped", "instance started again", "instance left the registry"} {
			want(&bLogs, msg, "b", 0) // never itself
		}
	})
}

// Two processes under one ID write its record in turns, so the listings
// show its start time going back and forth: that is logged as a start
// again once at most, not at every turn.
func TestRegistryPeersTwinNotRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		var logs logBuffer
		a := newSched(t, store, "a", &anarchon.Options{RegistryTTL: 2900 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		mustStart(t, a)
		// Renewing every 1 s and every 0.7 s, the two are the record's
		// last writer in turns that drift against a's listings.
		t1 := newSched(t, store, "same", &anarchon.Options{RegistryTTL: 3 * time.Second})
		mustStart(t, t1)
		time.Sleep(1500 * time.Millisecond)
		t2 := newSched(t, store, "same", &anarchon.Options{RegistryTTL: 2100 * time.Millisecond})
		mustStart(t, t2)
		seen := map[string]bool{}
		for range 30 {
			time.Sleep(time.Second)
			recs, err := a.Instances(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.ID == "same" {
					seen[r.StartedAt.String()] = true
				}
			}
		}
		stopAll(t, t2, t1, a)
		if len(seen) != 2 {
			t.Fatalf("the listings showed %d start times of the shared ID, want both processes'", len(seen))
		}
		if n := strings.Count(logs.String(), `msg="instance started again" instance=a peer=same`); n > 1 {
			t.Errorf("%d lines of a start again for two processes writing in turns, want at most 1:\n%s", n, logs.String())
		}
	})
}

// Of two processes under one ID, the one that stops while the other wrote
// the record last leaves the record live, the other's: marking it
// stopped would list a running instance as stopped until its next
// renewal. The last one to stop marks it stopped.
func TestRegistryTwinStopLeavesRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := membackend.New(nil)
		var logs logBuffer
		const ttl = 3 * time.Second
		a := newSched(t, store, "same", &anarchon.Options{RegistryTTL: ttl, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		mustStart(t, a)
		time.Sleep(ttl/3 + ttl/6) // b renews half a period after a: at 1.5, 2.5 … s
		b := newSched(t, store, "same", &anarchon.Options{RegistryTTL: ttl})
		mustStart(t, b)
		time.Sleep(5*ttl + ttl/12) // 16.75 s: b wrote last, at 16.5 s
		stopAll(t, a)
		recs, err := b.Instances(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || !recs[0].Live() || !recs[0].StartedAt.Equal(b.InstanceInfo().StartedAt) {
			t.Fatalf("after a stopped, the shared record is %+v, want b's, live", recs)
		}
		if !strings.Contains(logs.String(), "not marking the registry record stopped: another process under this instance ID wrote it last") {
			t.Errorf("a did not say why it left the record:\n%s", logs.String())
		}
		stopAll(t, b)
		if recs, err = a.Instances(t.Context()); err != nil || len(recs) != 1 || recs[0].State != anarchon.InstanceStopped {
			t.Fatalf("after both stopped: %+v, %v; want the record stopped", recs, err)
		}
	})
}
