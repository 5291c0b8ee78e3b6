package redisbackend

import (
	"reflect"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// TestPackArgs: a batch sends each call's first key, the key suffixes
// once, and each argument once when every call has the same, in the
// layout lua/batch.lua reads.
func TestPackArgs(t *testing.T) {
	b := &Backend{prefix: "p"}
	s := newBatchedScript(true, "", "return 1")
	var calls []*evalCall
	for i, job := range []string{"a", "b{c}", "d"} {
		k := b.keys(job)
		calls = append(calls, &evalCall{s: s, keys: []string{k.run, k.ctl, k.fence},
			args: []any{slotArg(int64(100 + i)), "tok", int64(7), []byte("x"), i / 2}})
	}
	got := b.batched(calls)
	if len(got) != 1 || len(got[0].members) != 3 {
		t.Fatalf("batched: %d calls; want one batch of 3", len(got))
	}
	g := got[0]
	wantKeys := []string{"{p:a}:run", "{p:b%7Bc%7D}:run", "{p:d}:run"}
	wantArgs := []any{3, 5, "0", ":run", ":ctl", ":fence", "vssvv", "tok", int64(7),
		"100", []byte("x"), 0,
		"101", []byte("x"), 0,
		"102", []byte("x"), 1}
	if !reflect.DeepEqual(g.keys, wantKeys) || !reflect.DeepEqual(g.args, wantArgs) {
		t.Errorf("packed\n keys %q\n args %v\nwant\n keys %q\n args %v", g.keys, g.args, wantKeys, wantArgs)
	}
	// Declared (a cluster): every key of every call, no suffixes.
	g.packArgs(true)
	var all []string
	for _, c := range calls {
		all = append(all, c.keys...)
	}
	wantArgs = append([]any{3, 5, "1"}, wantArgs[6:]...)
	if !reflect.DeepEqual(g.keys, all) || !reflect.DeepEqual(g.args, wantArgs) {
		t.Errorf("packed, declared\n keys %q\n args %v\nwant\n keys %q\n args %v", g.keys, g.args, all, wantArgs)
	}
}

// TestBatchedByKeyShape: calls whose keys differ past the tag go in
// batches of their own, and a call whose keys do not share one tag is
// sent alone.
func TestBatchedByKeyShape(t *testing.T) {
	b := &Backend{prefix: "p"}
	s := newBatchedScript(true, "", "return 1")
	k1, k2 := b.keys("a"), b.keys("b")
	calls := []*evalCall{
		{s: s, keys: []string{k1.run, k1.ctl}, args: []any{"1"}},
		{s: s, keys: []string{k2.run, k2.hist}, args: []any{"1"}},
		{s: s, keys: []string{k2.run, k2.ctl}, args: []any{"1"}},
		{s: s, keys: []string{k1.run, k2.ctl}, args: []any{"1"}},
		{s: s, keys: []string{k1.run, k1.hist}, args: []any{"1"}},
	}
	got := b.batched(calls)
	var sizes []int
	for _, g := range got {
		sizes = append(sizes, max(len(g.members), 1))
	}
	if !reflect.DeepEqual(sizes, []int{2, 2, 1}) || got[2] != calls[3] {
		t.Errorf("batched sizes %v (alone: %v); want [2 2 1], the mixed-tag call alone", sizes, got[len(got)-1] == calls[3])
	}
}

// TestKeysShareOneString: a job's keys are its tag and their suffixes.
func TestKeysShareOneString(t *testing.T) {
	k := (&Backend{prefix: "p"}).keys("j")
	got := []string{k.run, k.claims, k.hist, k.results, k.active, k.age, k.ctl, k.trig, k.fence}
	for i, s := range keySuffixes {
		if got[i] != "{p:j}"+s {
			t.Errorf("key %d = %q; want %q", i, got[i], "{p:j}"+s)
		}
	}
}

// TestBurstLeaseClaimShares: the lease claims of a burst (one instance,
// jobs of the same options, one slot) share 11 of their 13 arguments, so
// a batch sends only token and job per call (redisbackend's doc,
// "Batches").
func TestBurstLeaseClaimShares(t *testing.T) {
	b := &Backend{prefix: "p", channel: "p:runs"}
	s := newBatchedScript(true, "", "return 1")
	var calls []*evalCall
	for i, job := range []string{"a", "b", "c"} {
		keys, args := b.leaseClaimArgs(anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{
			Job: job, Slot: 60000, Token: "tok" + slotArg(int64(i)), InstanceID: "i1"}, Lease: time.Minute})
		calls = append(calls, &evalCall{s: s, keys: keys, args: args})
	}
	g := b.batched(calls)[0]
	if mask, _ := g.args[3+len(calls[0].keys)].(string); mask != "svssssssvssss" {
		t.Errorf("mask %q; want token and job varying, the burst's one slot shared (svssssssvssss)", mask)
	}
}
