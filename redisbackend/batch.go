package redisbackend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/anarchon/anarchon"
	"github.com/redis/go-redis/v9"
)

var (
	_ anarchon.BatchClaimer    = (*Backend)(nil)
	_ anarchon.RunBatchClaimer = (*RunStore)(nil)
)

// ClaimBatch answers many plain claims (anarchon.BatchClaimer) with the
// script of [Backend.Claim] in its batch form: one EVALSHA runs the
// script for every claim of the batch (at most 512 of them; per cluster
// slot through a cluster client), in one pipeline: one round trip for
// the batch. New slots of paused jobs take a
// second pipeline for the script that settles them, as a single claim
// takes a second script. Each answer is the one Claim gives for that
// input; a claim's bad input or error reply is its own answer's Err. The
// error is non-nil only when no claim got an answer (the connection
// failed, the context ended, the backend is closed, or claims are held
// after a data loss, ErrDataLost).
func (b *Backend) ClaimBatch(ctx context.Context, in []anarchon.ClaimInput) ([]anarchon.ClaimAnswer, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	out := make([]anarchon.ClaimAnswer, len(in))
	calls := make([]*evalCall, 0, len(in))
	idx := make([]int, 0, len(in)) // calls[j] answers in[idx[j]]
	for i, c := range in {
		if err := b.checkRun(c.Job, c.Slot, c.Token); err != nil {
			out[i].Err = err
			continue
		}
		keys, args := b.claimArgs(c)
		calls = append(calls, &evalCall{s: scriptClaim, keys: keys, args: args})
		idx = append(idx, i)
	}
	if len(calls) == 0 {
		return out, nil
	}
	if err := b.epoch.check(ctx, b); err != nil {
		return nil, err
	}
	b.runCalls(ctx, calls)
	if err := allFailed(calls); err != nil {
		return nil, b.wrap("claim batch", err)
	}
	// New slots of paused jobs: the second script, all in one more pipeline.
	var paused []*evalCall
	var pidx []int
	for j, c := range calls {
		if c.err == nil && isPausedReply(c.res) {
			size, ttl := historyArgs(in[idx[j]])
			args := append(c.args[:len(c.args):len(c.args)], size, ttl)
			paused = append(paused, &evalCall{s: scriptClaimPaused, keys: b.pausedClaimKeys(in[idx[j]].Job), args: args})
			pidx = append(pidx, j)
		}
	}
	if len(paused) > 0 {
		b.runCalls(ctx, paused)
		for k, c := range paused {
			calls[pidx[k]] = c
		}
	}
	for j, c := range calls {
		i := idx[j]
		if c.err != nil {
			out[i].Err = b.wrap(fmt.Sprintf("claim %q slot %d", in[i].Job, in[i].Slot), b.withdraw(ctx, in[i].Job, in[i].Slot, in[i].Token, c.err))
			continue
		}
		out[i].Won, out[i].Err = b.claimAnswer(in[i], c.res)
	}
	return out, nil
}

// ClaimRuns answers many lease claims (anarchon.RunBatchClaimer) with the
// script of [RunStore.Claim] in its batch form, one EVALSHA for up to 512
// claims (per cluster slot), in one pipeline: one round trip for the
// batch. Each answer is the one Claim
// gives for that input; the error is non-nil only when no claim got an
// answer, as for [Backend.ClaimBatch].
func (s *RunStore) ClaimRuns(ctx context.Context, in []anarchon.RunClaim) ([]anarchon.RunClaimAnswer, error) {
	b := s.b
	if err := b.check(); err != nil {
		return nil, err
	}
	out := make([]anarchon.RunClaimAnswer, len(in))
	calls := make([]*evalCall, 0, len(in))
	idx := make([]int, 0, len(in))
	for i, c := range in {
		if err := checkRunClaim(b, c); err != nil {
			out[i].Err = err
			continue
		}
		keys, args := b.leaseClaimArgs(c)
		calls = append(calls, &evalCall{s: scriptLeaseClaim, keys: keys, args: args})
		idx = append(idx, i)
	}
	if len(calls) == 0 {
		return out, nil
	}
	if err := b.epoch.check(ctx, b); err != nil {
		return nil, err
	}
	b.runCalls(ctx, calls)
	if err := allFailed(calls); err != nil {
		return nil, b.wrap("lease claim batch", err)
	}
	for j, c := range calls {
		i := idx[j]
		if c.err != nil {
			out[i].Err = b.wrap(fmt.Sprintf("lease claim %q slot %d", in[i].Job, in[i].Slot), b.withdraw(ctx, in[i].Job, in[i].Slot, in[i].Token, c.err))
			continue
		}
		out[i].Outcome, out[i].Err = b.leaseClaimAnswer(in[i], c.res)
	}
	return out, nil
}

// evalCall is one script call of a batch and, after runCalls, its reply
// or error. A call of a script's batch form (batched) lists the calls it
// carries in members, which get their own replies from its reply.
type evalCall struct {
	s       *script
	keys    []string
	args    []any
	members []*evalCall

	res any
	err error
}

// maxBatchCalls bounds the calls one batch script carries. Redis runs
// nothing else while a script runs, so a scheduler with a large
// Options.BatchSize still holds the server for at most this many calls
// at a time (a few milliseconds).
const maxBatchCalls = 512

// batchKey sorts the calls of a batch into the scripts that carry them:
// one script's calls with the same numbers of keys and arguments and the
// same key layout (the keys' suffixes after the job's hash tag, shape), on
// one cluster slot.
type batchKey struct {
	s      *script
	nk, na int
	shape  string
	slot   int
}

// keyShape splits the keys of one call into its hash tag (keys[0] up to
// its first '}', the tag every key of a job starts with, jobKeys) and the
// suffixes after it, joined by NUL: a batch sends each call's first key
// and the suffixes once (lua/batch.lua). ok is false when a key does not
// start with the first key's tag; such a call is not packed.
func keyShape(keys []string) (tag, shape string, ok bool) {
	end := strings.IndexByte(keys[0], '}')
	if end < 0 {
		return "", "", false
	}
	tag = keys[0][:end+1]
	var sb strings.Builder
	for j, k := range keys {
		suffix, ok := strings.CutPrefix(k, tag)
		if !ok || strings.IndexByte(suffix, 0) >= 0 || (j == 0 && suffix == "") {
			return "", "", false
		}
		if j > 0 {
			sb.WriteByte(0)
		}
		sb.WriteString(suffix)
	}
	return tag, sb.String(), true
}

// batched packs the calls whose script has a batch form into calls of
// that form, at most maxBatchCalls each, one per cluster slot through a
// *redis.ClusterClient (a script's keys must share a slot there); other
// calls, and a pack of one, stay as they are. packArgs writes each
// pack's keys and arguments.
func (b *Backend) batched(calls []*evalCall) []*evalCall {
	_, cluster := b.client.(*redis.ClusterClient)
	open := map[batchKey]*evalCall{}
	out := make([]*evalCall, 0, len(calls))
	for _, c := range calls {
		if c.s.batch == nil || len(c.args) == 0 || len(c.keys) == 0 {
			out = append(out, c)
			continue
		}
		_, shape, ok := keyShape(c.keys)
		if !ok {
			out = append(out, c)
			continue
		}
		k := batchKey{s: c.s, nk: len(c.keys), na: len(c.args), shape: shape, slot: -1}
		if cluster {
			k.slot = keySlot(c.keys[0])
		}
		g := open[k]
		if g == nil || len(g.members) == maxBatchCalls {
			g = &evalCall{s: c.s.batch}
			open[k] = g
			out = append(out, g)
		}
		g.members = append(g.members, c)
	}
	for i, g := range out {
		switch {
		case len(g.members) == 1:
			out[i] = g.members[0]
		case g.members != nil:
			g.packArgs(cluster)
		}
	}
	return out
}

// packArgs sets the keys and arguments of a batch call from its members'
// (lua/batch.lua reads them). A burst's calls share most of their
// arguments and all but the hash tag of their keys, and the server's one
// thread pays for every argument it receives (parsing it, then copying
// it into the script's KEYS or ARGV), so a batch sends what its calls
// share once:
//
//   - KEYS: on a single server, each call's first key, in call order;
//     through a cluster client (declared, full), every key of every call;
//   - ARGV: the number of keys and of arguments per call; "1" when KEYS
//     holds every key, else "0" and the suffixes of the calls' keys after
//     the tag (keyShape), from which the script builds each call's other
//     keys; a mask of one letter per argument, 's' for an argument every
//     call has the same (a string or integer of equal value), 'v' for one
//     that varies; the shared arguments, once each; then each call's
//     varying arguments, call after call.
//
// A cluster checks only a script's declared keys before it runs it: a
// key the script reaches undeclared, on a slot that is being migrated,
// fails mid-script ("non local key") after the calls before it wrote. A
// declared one makes the node refuse the whole script (TRYAGAIN, ASK)
// before it writes, as it refuses a single call's script
// (TestBatchOnMigratingSlot). A single server has no slots to migrate.
func (g *evalCall) packArgs(declared bool) {
	first := g.members[0]
	nk, na := len(first.keys), len(first.args)
	_, shape, _ := keyShape(first.keys)
	shared := make([]bool, na)
	nshared := 0
	for j, a := range first.args {
		shared[j] = comparableArg(a)
		for _, m := range g.members[1:] {
			if !shared[j] {
				break
			}
			shared[j] = m.args[j] == a
		}
		if shared[j] {
			nshared++
		}
	}
	mask := make([]byte, na)
	g.args = make([]any, 0, 4+nk+nshared+len(g.members)*(na-nshared))
	g.args = append(g.args, nk, na)
	if declared {
		g.keys = make([]string, 0, len(g.members)*nk)
		g.args = append(g.args, "1")
	} else {
		g.keys = make([]string, 0, len(g.members))
		g.args = append(g.args, "0")
		for suffix := range strings.SplitSeq(shape, "\x00") {
			g.args = append(g.args, suffix)
		}
	}
	g.args = append(g.args, nil) // the mask, below
	maskAt := len(g.args) - 1
	for j, a := range first.args {
		mask[j] = 'v'
		if shared[j] {
			mask[j] = 's'
			g.args = append(g.args, a)
		}
	}
	g.args[maskAt] = string(mask)
	for _, m := range g.members {
		if declared {
			g.keys = append(g.keys, m.keys...)
		} else {
			g.keys = append(g.keys, m.keys[0])
		}
		for j, a := range m.args {
			if !shared[j] {
				g.args = append(g.args, a)
			}
		}
	}
}

// comparableArg reports whether a is a script argument packArgs may
// compare with == (the kinds the backend's calls pass).
func comparableArg(a any) bool {
	switch a.(type) {
	case string, int, int64:
		return true
	}
	return false
}

// settle sets the reply or error of c and, for a batch call, of each of
// its members: the element of the reply array in the member's place (an
// error element is the member's error), or the batch's own error.
func (c *evalCall) settle(res any, err error) {
	c.res, c.err = res, err
	if c.members == nil {
		return
	}
	arr, ok := res.([]any)
	if err == nil && (!ok || len(arr) != len(c.members)) {
		err = fmt.Errorf("redisbackend: batch script answered %T for %d calls", res, len(c.members))
	}
	for i, m := range c.members {
		if err != nil {
			m.res, m.err = nil, err
			continue
		}
		if e, ok := arr[i].(error); ok {
			m.res, m.err = nil, e
			continue
		}
		m.res, m.err = arr[i], nil
	}
}

// leaves are the calls whose replies callers read: c's members for a
// batch call, else c itself.
func (c *evalCall) leaves() []*evalCall {
	if c.members != nil {
		return c.members
	}
	return []*evalCall{c}
}

// allFailed returns the error of the batch when every call failed without
// a reply from the server (a broken connection, an ended context): then
// no claim has an answer. A script's error reply is the answer of its
// claim alone.
func allFailed(calls []*evalCall) error {
	var first error
	for _, c := range calls {
		var re redis.Error
		if c.err == nil || errors.As(c.err, &re) || errors.Is(c.err, ErrNotReplicated) {
			return nil
		}
		if first == nil {
			first = c.err
		}
	}
	return first
}

// pipeliner is what runs a pipeline: the backend's client, or with
// Options.Replicas the client of one master.
type pipeliner interface {
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// runCalls runs the calls, packed into batch scripts where their script
// has a batch form (batched), with EVALSHA in one pipeline, and those the
// server's script cache lacked (NOSCRIPT: a restart, SCRIPT FLUSH, a new
// cluster node) again with EVAL in a second, as go-redis's Script.Run
// does for one call. go-redis sends the pipeline of a ClusterClient to
// each master holding one of the keys, side by side; every call's keys
// share one hash tag, so each call runs whole on one node.
//
// With Options.Replicas the calls are grouped by master, and each
// master's pipeline ends with one WAIT on the connection that carried its
// scripts, so the WAIT covers all of them, as runWrite's WAIT covers one
// claim: a won claim whose WAIT fell short gets ErrNotReplicated, and
// the batch's callers withdraw it as a single claim does (Backend.withdraw).
func (b *Backend) runCalls(ctx context.Context, calls []*evalCall) {
	calls = b.batched(calls)
	if b.replicas == 0 {
		b.pipeline(ctx, b.client, calls, false)
		return
	}
	groups := map[string][]*evalCall{}
	nodes := map[string]*redis.Client{}
	switch c := b.client.(type) {
	case *redis.Client:
		groups[""], nodes[""] = calls, c
	case *redis.ClusterClient:
		for _, call := range calls {
			n, err := c.MasterForKey(ctx, call.keys[0])
			if err != nil {
				call.settle(nil, err)
				continue
			}
			addr := n.Options().Addr
			groups[addr], nodes[addr] = append(groups[addr], call), n
		}
	}
	var wg sync.WaitGroup
	for addr, g := range groups {
		wg.Go(func() { b.pipeline(ctx, nodes[addr], g, true) })
	}
	wg.Wait()
}

// pipeline runs calls on p, EVALSHA first and EVAL for NOSCRIPT, each
// pipeline ending with a WAIT when wait is set.
func (b *Backend) pipeline(ctx context.Context, p pipeliner, calls []*evalCall, wait bool) {
	run := func(calls []*evalCall, useSHA bool) {
		cmds := make([]*redis.Cmd, len(calls))
		var waitCmd *redis.Cmd
		_, _ = p.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for i, c := range calls {
				if useSHA {
					cmds[i] = pipe.EvalSha(ctx, c.s.Hash(), c.keys, c.args...)
				} else {
					cmds[i] = pipe.Eval(ctx, c.s.src, c.keys, c.args...)
				}
			}
			if wait {
				waitCmd = pipe.Do(ctx, "wait", b.replicas, b.waitFor.Milliseconds())
			}
			return nil
		})
		var acked int64
		var waitErr error
		if wait {
			acked, waitErr = waitCmd.Int64()
		}
		for i, c := range calls {
			c.settle(cmds[i].Val(), cmds[i].Err())
			if !wait {
				continue
			}
			for _, l := range c.leaves() {
				switch {
				case l.err != nil:
				case waitErr != nil:
					l.res, l.err = nil, waitErr
				case won(l.res) && acked < int64(b.replicas):
					l.res, l.err = nil, fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, acked, b.replicas, b.waitFor)
				}
			}
		}
	}
	run(calls, true)
	var missing []*evalCall
	for _, c := range calls {
		if c.err != nil && redis.HasErrorPrefix(c.err, "NOSCRIPT") {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		run(missing, false)
	}
}
