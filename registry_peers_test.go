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

		bStore.fail.Store(true) // b renewed last just now
		time.Sleep(ttl - ttl/3)
		want(&aLogs, "instance stopped renewing its registry record (killed, hung or cut off from the store); backups take over its leased runs when their leases end", "b", 0)
		time.Sleep(2*ttl/3 + time.Millisecond)
		want(&aLogs, "instance stopped renewing its registry record (killed, hung or cut off from the store); backups take over its leased runs when their leases end", "b", 1)
		if !strings.Contains(aLogs.String(), "level=WARN msg=\"instance stopped renewing") {
			t.Fatalf("a dead instance is not a warning:\n%s", aLogs.String())
		}
		bStore.fail.Store(false)
		time.Sleep(ttl/3 + time.Millisecond)
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
