package natsbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/anarchon/anarchon"
)

// prefetched is what the first turn of a lease claim (claimRun) reads
// at once: the run, and beside it the job's pause state and its job key.
// A claim of a new slot needs all three, one after the other (the run to
// find it absent, the pause state before its create, the job key to list
// the run): read one after the other they cost two more round trips
// before and after the create. A claim of an existing run is answered
// from the run as soon as it is read, without waiting for the other two.
// Reading the pause state beside the run instead of after it keeps
// control.go's window (a pause stored after the read and before the
// create is not seen by that one claim); the job key is written with a
// compare-and-set on the revision read, so a key changed since the read
// fails it and commitJob reads again.
//
// The runs that commitJob reads from the job key's list (probed) are read
// beside the create (startProbes), not after it: the compare-and-set of
// the job key orders the commit after them as it does after a read made
// once the create was answered, since every run that is won (a create or
// a takeover) writes the job key before it is answered won.
//
// A prefetched is used by the goroutine of its claim only, which calls
// stop before it returns: its reads are ended and waited for (a hedged
// copy of a read, resend.go, may still be under way, cancelled, and
// touches nothing of the claim).
type prefetched struct {
	stop   func()             // ends the reads still under way and waits for them
	sctx   context.Context    // the reads' context, ended by stop
	wg     *sync.WaitGroup    // the reads' goroutines
	side   chan sideRead      // the pause state and job key, once read
	got    map[string]kvEntry // that read's keys, absent ones without an entry
	err    error              // that read's error
	read   bool               // side has answered into got and err
	probes chan probeRead     // startProbes's read, if it started one
	limit  int                // the overlap limit that read was made for
}

// sideRead is the answer of prefetch's read of the pause state and the
// job key.
type sideRead struct {
	got map[string]kvEntry
	err error
}

// probeRead is the answer of the read startProbes starts.
type probeRead struct {
	probe []int64
	runs  map[string]kvEntry
	err   error
}

// prefetch reads the run key of job and, in a goroutine of its own, its
// pause state and job key, with the server clock beside when the cached
// sample is stale (through nowBounds, so that a check of the clock made
// meanwhile waits for that read instead of sending its own). It returns
// once the run is read; the other read is waited for by the first use of
// its keys.
func (b *Backend) prefetch(ctx context.Context, h handles, job, key string) (*prefetched, kvEntry, bool, runValue, error) {
	sctx, cancel := context.WithCancel(ctx)
	wg := new(sync.WaitGroup)
	p := &prefetched{sctx: sctx, wg: wg, side: make(chan sideRead, 1)}
	p.stop = func() { cancel(); wg.Wait() }
	if !b.clk.fresh() {
		wg.Go(func() { _, _, _ = b.nowBounds(sctx, h) }) // a failure is left to the checks that need the clock
	}
	wg.Go(func() {
		got, err := b.readMany(sctx, h, []string{pauseKey(job), jobKey(job)}, true)
		if sideReadFails != nil && err == nil {
			err = sideReadFails
		}
		p.side <- sideRead{got, err}
	})
	e, found, v, err := b.readRunEntry(ctx, h, key)
	return p, e, found, v, err
}

// others waits for the read of the pause state and the job key; ok is
// false when it failed, and the caller then reads the key it needs on its
// own, as it would have without prefetch (a failed read of one key fails
// no claim that needs only the other).
func (p *prefetched) others() (got map[string]kvEntry, ok bool) {
	if !p.read {
		r := <-p.side
		p.got, p.err, p.read = r.got, r.err, true
	}
	return p.got, p.err == nil
}

// readRunEntry is readRun with the entry as a kvEntry and found false
// for an absent run.
func (b *Backend) readRunEntry(ctx context.Context, h handles, key string) (kvEntry, bool, runValue, error) {
	e, v, err := b.readRun(ctx, h, key)
	if err != nil || e == nil {
		return kvEntry{}, false, v, err
	}
	return kvEntry{val: e.Value(), rev: e.Revision(), created: e.Created()}, true, v, nil
}

// jobOr is the job key of job (its list and revision, 0 when absent) from
// p, or read from the bucket when p is nil or its read failed.
func (p *prefetched) jobOr(ctx context.Context, b *Backend, h handles, job string) (jobValue, uint64, error) {
	if p == nil {
		return b.readJob(ctx, h, job)
	}
	got, read := p.others()
	if !read {
		return b.readJob(ctx, h, job)
	}
	return jobIn(got, job)
}

// jobIn is the job key of job (its list and revision, 0 when absent) in
// got, a read of keys that included it.
func jobIn(got map[string]kvEntry, job string) (jobValue, uint64, error) {
	var v jobValue
	e, ok := got[jobKey(job)]
	if !ok {
		return v, 0, nil
	}
	if err := json.Unmarshal(e.val, &v); err != nil {
		return jobValue{}, 0, fmt.Errorf("natsbackend: job key %s holds an unreadable value: %w", jobKey(job), err)
	}
	return v, e.rev, nil
}

// admitOr is Backend.admit with the pause state from p: only the
// never-early check is left, answered from the cached clock sample (or
// the read of the clock that prefetch started, if it is still under
// way). With p nil, or when p's read failed, it is admit.
func (p *prefetched) admitOr(ctx context.Context, b *Backend, h handles, job string, in anarchon.ClaimInput) (stateValue, bool, error) {
	if p == nil {
		return b.admit(ctx, h, job, in)
	}
	got, read := p.others()
	if !read {
		return b.admit(ctx, h, job, in)
	}
	if err := b.checkEarly(ctx, h, in.Job, in.Slot); err != nil {
		return stateValue{}, false, err
	}
	var st stateValue
	e, ok := got[pauseKey(job)]
	if !ok {
		return st, false, nil
	}
	if err := json.Unmarshal(e.val, &st); err != nil {
		return stateValue{}, false, fmt.Errorf("natsbackend: job state %s holds an unreadable value: %w", pauseKey(job), err)
	}
	return st, st.Paused, nil
}

// startProbes starts reading, in a goroutine of its own, the runs a
// commit of slot under limit reads from the prefetched job key's list
// (probed); probesOr then waits for it. With p nil it does nothing. An
// unreadable job key is its error.
func (p *prefetched) startProbes(ctx context.Context, b *Backend, h handles, job string, slot int64, limit int) error {
	if p == nil {
		return nil
	}
	jv, _, err := p.jobOr(ctx, b, h, job)
	if err != nil {
		return err
	}
	p.probes, p.limit = make(chan probeRead, 1), limit
	p.wg.Go(func() {
		probe, runs, err := readProbes(p.sctx, b, h, job, jv, slot, limit)
		p.probes <- probeRead{probe, runs, err}
	})
	return nil
}

// probesOr is the read startProbes started for limit, or, with p nil or
// no such read, the same read made now from the list jv.
func (p *prefetched) probesOr(ctx context.Context, b *Backend, h handles, job string, jv jobValue, slot int64, limit int) ([]int64, map[string]kvEntry, error) {
	if p != nil && p.probes != nil && p.limit == limit {
		r := <-p.probes
		p.probes = nil
		return r.probe, r.runs, r.err
	}
	return readProbes(ctx, b, h, job, jv, slot, limit)
}

// readProbes reads the runs that a commit of slot under limit reads from
// the list jv (probed), in one request.
func readProbes(ctx context.Context, b *Backend, h handles, job string, jv jobValue, slot int64, limit int) ([]int64, map[string]kvEntry, error) {
	probe := probed(jv, slot, limit)
	keys := make([]string, len(probe))
	for k, s := range probe {
		keys[k] = runKey(job, s)
	}
	runs, err := b.readMany(ctx, h, keys, true)
	return probe, runs, err
}

// sideReadFails, set by tests only, is the error every read of the pause
// state and job key beside a lease claim's run read answers.
var sideReadFails error
