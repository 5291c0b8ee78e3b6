package natsbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	_ anarchon.BatchClaimer    = (*Backend)(nil)
	_ anarchon.RunBatchClaimer = (*RunStore)(nil)
)

// ClaimBatch answers many plain claims (anarchon.BatchClaimer), each as
// [Backend.Claim] would, with each step of Claim taken for the whole
// batch at once:
//
//  1. the pause states of the batch's jobs and the slots' claim keys in
//     one direct get request per directBatch keys (beside one read of
//     the server clock when the cached sample is stale), then the
//     never-early check of each slot from the clock; a slot whose key
//     exists is answered from it (won only under its own token), as
//     step 3 answers a create that lost, and takes no create: a key
//     once created names its slot's one winner, so the read of any
//     replica that has it is the answer (SPEC §4, "Waves": a burst's
//     later waves claim slots their owners hold);
//  2. one KV create per other slot (a put at revision 0), all published
//     before any acknowledgement is awaited;
//  3. for the creates that lost, the holders' tokens in one more direct
//     get request (repeat safety).
//
// So a batch waits for about three round trips whatever its size, and
// sends one request per slot not held plus two to four; a batch of held
// slots only its reads. The rare slot whose key
// was deleted between its create and the read, and the history records
// of slots settled as paused, take the single path's steps, side by side.
// A claim's bad input or error is its own answer's Err; the error is
// non-nil only when no claim got an answer (the backend is closed, the
// state read failed).
func (b *Backend) ClaimBatch(ctx context.Context, in []anarchon.ClaimInput) ([]anarchon.ClaimAnswer, error) {
	h, err := b.ready(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]anarchon.ClaimAnswer, len(in))
	jobs := make([]string, len(in))
	var live []int
	for i, c := range in {
		job, err := encodeJob(c.Job)
		if err == nil {
			err = checkToken(c.Token)
		}
		if err != nil {
			out[i].Err = err
			continue
		}
		jobs[i] = job
		live = append(live, i)
	}
	if len(live) == 0 {
		return out, nil
	}

	// 1. Pause states, the slots' claim keys and the clock, side by side.
	pkeys := make([]string, 0, 2*len(live))
	for _, i := range live {
		pkeys = append(pkeys, pauseKey(jobs[i]), claimKey(jobs[i], in[i].Slot))
	}
	// Each step is bounded by Options.Timeout as one call is.
	actx, cancel := b.bound(ctx)
	defer cancel()
	states, err := b.readMany(actx, h, pkeys, b.clk.fresh())
	if err != nil {
		return nil, err
	}
	var keys []string
	var vals [][]byte
	var idx []int
	paused := map[int]stateValue{}
	for _, i := range live {
		c := in[i]
		if err := b.checkEarly(actx, h, c.Job, c.Slot); err != nil {
			out[i].Err = err
			continue
		}
		if e, ok := states[claimKey(jobs[i], c.Slot)]; ok {
			// The slot is claimed already (a burst's later wave, SPEC
			// §4): its holder answers, as step 3 would after a create
			// that lost, and no create is sent.
			var cv claimValue
			if err := json.Unmarshal(e.val, &cv); err != nil {
				out[i].Err = fmt.Errorf("natsbackend: claim %s holds an unreadable value: %w", claimKey(jobs[i], c.Slot), err)
				continue
			}
			out[i].Won = cv.Token == c.Token
			continue
		}
		val := claimValue{Token: c.Token, Instance: c.InstanceID}
		if e, ok := states[pauseKey(jobs[i])]; ok {
			var st stateValue
			if err := json.Unmarshal(e.val, &st); err != nil {
				out[i].Err = fmt.Errorf("natsbackend: job state %s holds an unreadable value: %w", pauseKey(jobs[i]), err)
				continue
			}
			if st.Paused {
				val.Token = anarchon.PausedToken(c.Slot)
				paused[i] = st
			}
		}
		data, _ := json.Marshal(val)
		keys, vals, idx = append(keys, claimKey(jobs[i], c.Slot)), append(vals, data), append(idx, i)
	}

	// 2. The creates.
	cctx, cancel := b.bound(ctx)
	defer cancel()
	_, errs := b.createMany(cctx, h, keys, vals)
	var lost, settle []int
	for j, i := range idx {
		switch err := errs[j]; {
		case err == nil:
			if _, ok := paused[i]; ok {
				settle = append(settle, i)
			} else {
				out[i].Won = true
			}
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			lost = append(lost, j)
		default:
			out[i].Err = b.wrap("claim", err)
		}
	}

	// 3. The holders of the lost slots.
	var again []int
	if len(lost) > 0 {
		lkeys := make([]string, len(lost))
		for k, j := range lost {
			lkeys[k] = keys[j]
		}
		rctx, cancel := b.bound(ctx)
		holders, err := b.readMany(rctx, h, lkeys, true)
		cancel()
		for _, j := range lost {
			i := idx[j]
			if err != nil {
				out[i].Err = err
				continue
			}
			e, ok := holders[keys[j]]
			if !ok {
				again = append(again, i) // deleted or aged out since the create
				continue
			}
			var cv claimValue
			if err := json.Unmarshal(e.val, &cv); err != nil {
				out[i].Err = fmt.Errorf("natsbackend: claim %s holds an unreadable value: %w", keys[j], err)
				continue
			}
			out[i].Won = cv.Token == in[i].Token
		}
	}
	forEach(len(again), func(k int) {
		i := again[k]
		out[i].Won, out[i].Err = b.Claim(ctx, in[i])
	})
	forEach(len(settle), func(k int) {
		i := settle[k]
		out[i].Err = b.savePaused(ctx, in[i], paused[i])
	})
	return out, nil
}

// ClaimRuns answers many lease claims (anarchon.RunBatchClaimer), each
// as [RunStore.Claim] would. The common case of a burst, a run not
// claimed yet, takes the steps of the single path for the whole batch at
// once: one direct get request reads every slot's run and every job's
// pause state (beside one read of the server clock when the cached
// sample is stale); the never-early and MaxLate checks answer from the
// clock; the runs are created, all published before any acknowledgement
// is awaited; the won runs are listed in their jobs' keys (commitJobs)
// and then recorded in history, the records all published before any
// acknowledgement is awaited, beside one direct get request per
// directBatch runs that reads their lease ends (settleWins). A slot whose
// run exists, whose job is paused or which is late, or whose create lost,
// takes the single path (SPEC §6's table), side by side with the others.
// The error is non-nil only when no claim got an answer.
func (r *RunStore) ClaimRuns(ctx context.Context, in []anarchon.RunClaim) ([]anarchon.RunClaimAnswer, error) {
	b := r.b
	h, err := b.ready(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]anarchon.RunClaimAnswer, len(in))
	jobs := make([]string, len(in))
	var live []int
	for i, c := range in {
		job, err := encodeJob(c.Job)
		if err == nil {
			err = checkToken(c.Token)
		}
		if err == nil {
			err = checkLease(c)
		}
		if err != nil {
			out[i].Err = err
			continue
		}
		jobs[i] = job
		live = append(live, i)
	}
	if len(live) == 0 {
		return out, nil
	}

	keys := make([]string, 0, 2*len(live))
	for _, i := range live {
		keys = append(keys, runKey(jobs[i], in[i].Slot), pauseKey(jobs[i]))
	}
	// Each step is bounded by Options.Timeout as one call is.
	actx, cancel := b.bound(ctx)
	defer cancel()
	got, err := b.readMany(actx, h, keys, b.clk.fresh())
	if err != nil {
		return nil, err
	}
	var single []int // the single path decides these
	var ckeys []string
	var vals [][]byte
	var idx []int
	var los []time.Time
	for _, i := range live {
		c := in[i]
		if e, ok := got[runKey(jobs[i], c.Slot)]; ok {
			if !b.answerRead(actx, h, c, e, &out[i]) {
				single = append(single, i)
			}
			continue
		}
		if err := b.checkEarly(actx, h, c.Job, c.Slot); err != nil {
			out[i].Err = err
			continue
		}
		if e, ok := got[pauseKey(jobs[i])]; ok {
			var st stateValue
			if json.Unmarshal(e.val, &st) != nil || st.Paused {
				single = append(single, i)
				continue
			}
		}
		if c.MaxLate > 0 {
			deadline := time.UnixMilli(c.Slot + c.MaxLate.Milliseconds() + 1)
			late, err := b.serverAfter(actx, h, deadline.Add(-time.Nanosecond))
			if err != nil || late {
				single = append(single, i)
				continue
			}
		}
		lo, _, err := b.nowBounds(actx, h)
		if err != nil {
			out[i].Err = err
			continue
		}
		ckeys, vals = append(ckeys, runKey(jobs[i], c.Slot)), append(vals, encodeRun(newRun(c)))
		idx, los = append(idx, i), append(los, lo)
	}

	cctx, cancel := b.bound(ctx)
	revs, errs := b.createMany(cctx, h, ckeys, vals)
	cancel()
	// What follows a create, and the single path, decide the claims of one
	// job in turn (their order in the batch), as single claims in a row
	// would: of two new slots of a job without overlap, the first wins.
	// Jobs go side by side.
	created := map[int]int{} // in index -> ckeys index, for the won creates
	var lost []int
	for j, i := range idx {
		switch err := errs[j]; {
		case err == nil:
			created[i] = j
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			lost = append(lost, i)
		default:
			out[i].Err = b.wrap("claim run", err)
		}
	}
	// The runs another claimer created first are read in one request, as
	// the batch's first read was, and answered from it where no write
	// follows (another's live lease: running); the rest take the single
	// path, which reads again.
	if len(lost) > 0 {
		lkeys := make([]string, len(lost))
		for k, i := range lost {
			lkeys[k] = runKey(jobs[i], in[i].Slot)
		}
		rctx, cancel := b.bound(ctx)
		again, err := b.readMany(rctx, h, lkeys, true)
		for k, i := range lost {
			if e, ok := again[lkeys[k]]; err != nil || !ok || !b.answerRead(rctx, h, in[i], e, &out[i]) {
				single = append(single, i)
			}
		}
		cancel()
	}
	isSingle := make(map[int]bool, len(single))
	for _, i := range single {
		isSingle[i] = true
	}
	decide := map[string][]int{}
	var order []string
	for _, i := range live {
		if _, won := created[i]; !won && !isSingle[i] {
			continue
		}
		if decide[jobs[i]] == nil {
			order = append(order, jobs[i])
		}
		decide[jobs[i]] = append(decide[jobs[i]], i)
	}
	// The job keys of the jobs with one won create in the batch (a burst's
	// every job) are updated together (commitJobs).
	var pj []string
	var ps []int64
	var pl, pi []int
	for _, job := range order {
		if l := decide[job]; len(l) == 1 {
			if _, ok := created[l[0]]; ok {
				i := l[0]
				pi, pj, ps, pl = append(pi, i), append(pj, jobs[i]), append(ps, in[i].Slot), append(pl, overlapLimit(in[i]))
			}
		}
	}
	// The wins the batch listed are settled together (settleWins); the
	// others list their slots one by one in claimCreated.
	listed := make(map[int]bool, len(pi))
	var settle []int
	lctx, cancel := b.bound(ctx)
	for k, ok := range b.commitJobs(lctx, h, pj, ps, pl) {
		if ok {
			listed[pi[k]] = true
			settle = append(settle, pi[k])
		}
	}
	cancel()
	b.settleWins(ctx, h, in, jobs, settle, func(i int) (string, uint64, time.Time) {
		j := created[i]
		return ckeys[j], revs[j], los[j]
	}, out)
	forEach(len(order), func(k int) {
		for _, i := range decide[order[k]] {
			if listed[i] {
				continue
			}
			j, ok := created[i]
			if !ok {
				out[i].Outcome, out[i].Err = b.claimRun(ctx, in[i])
				continue
			}
			sctx, cancel := b.bound(ctx)
			o, retry, err := b.claimCreated(sctx, h, jobs[i], ckeys[j], revs[j], los[j], in[i], 1, nil)
			cancel()
			if retry {
				o, err = b.claimRun(ctx, in[i])
			}
			out[i].Outcome, out[i].Err = o, err
		}
	})
	b.listRunning(ctx, h, in, jobs, live, isSingle, out)
	return out, nil
}

// listRunning lists in their job keys the runs that the batch's reads
// answered running (ensureListed says why), reading the job keys of all
// of them in one step first, which ensureListed decides from: a burst's
// later waves are answered running for runs their owners listed
// already, which costs that read alone.
func (b *Backend) listRunning(ctx context.Context, h handles, in []anarchon.RunClaim, jobs []string, live []int, single map[int]bool, out []anarchon.RunClaimAnswer) {
	var running []int
	var keys []string
	for _, i := range live {
		if !single[i] && out[i].Err == nil && out[i].Outcome.Kind == anarchon.OutcomeRunning {
			running = append(running, i)
			keys = append(keys, jobKey(jobs[i]))
		}
	}
	if len(running) == 0 {
		return
	}
	rctx, cancel := b.bound(ctx)
	defer cancel()
	got, err := b.readMany(rctx, h, keys, true)
	forEach(len(running), func(k int) {
		i := running[k]
		var first func() (jobValue, uint64, error)
		if err == nil {
			first = func() (jobValue, uint64, error) { return jobIn(got, jobs[i]) }
		}
		if err := b.ensureListed(rctx, h, jobs[i], in[i].Slot, first); err != nil {
			out[i].Outcome, out[i].Err = anarchon.ClaimOutcome{}, err
		}
	})
}

// settleWins completes the won claims idx of in whose slots the batch
// already listed in their job keys (commitJobs), as settleWin completes
// one, with each step taken for all of them at once: their claim records
// are published to history, all before any acknowledgement is awaited
// (repeated on an election only, as RecordClaims's are), beside one
// direct get request per directBatch runs that reads back the server
// timestamps of the revisions the creates wrote (the lease ends). So the
// batch waits for one round trip, where settleWin sends two requests
// per claim. A run whose read shows another revision (a heartbeat or a
// takeover already replaced it) or none (a replica that has not seen the
// create yet) has its lease end read as leaseEnd reads it. at(i) is claim
// i's run key, the revision its create wrote and a lower bound of the
// server time before the create. It sets out[i] of each claim of idx.
func (b *Backend) settleWins(ctx context.Context, h handles, in []anarchon.RunClaim, jobs []string, idx []int,
	at func(i int) (key string, rev uint64, lo time.Time), out []anarchon.RunClaimAnswer) {
	if len(idx) == 0 {
		return
	}
	keys := make([]string, len(idx))
	for k, i := range idx {
		keys[k], _, _ = at(i)
	}
	sctx, cancel := b.bound(ctx)
	defer cancel()
	var ends map[string]kvEntry
	var wg sync.WaitGroup
	wg.Go(func() { ends, _ = b.getMany(sctx, h, keys) }) // a failed read falls back below
	errs := make([]error, len(in))
	b.publishAllBy(sctx, b.resendOnElection, "record claim", idx, make([]uint64, len(in)), errs, func(i int) (*nats.Msg, []jetstream.PublishOpt) {
		return b.claimMsg(jobs[i], in[i].ClaimInput, 1, false)
	})
	wg.Wait()
	var unread []int // their lease ends are read one by one
	for _, i := range idx {
		key, rev, _ := at(i)
		c := in[i]
		if errs[i] != nil {
			b.recordFailed(ctx, c.ClaimInput, 1, b.wrap("record claim", errs[i]))
		}
		out[i].Outcome = anarchon.ClaimOutcome{Kind: anarchon.OutcomeWon, Attempt: 1, Holder: c.InstanceID, Fence: rev}
		if e, ok := ends[key]; ok && e.rev == rev {
			out[i].Outcome.LeaseUntil = leaseFrom(e.created, c.Lease)
		} else {
			unread = append(unread, i)
		}
	}
	forEach(len(unread), func(k int) {
		i := unread[k]
		key, rev, lo := at(i)
		out[i].Outcome.LeaseUntil = b.leaseEnd(sctx, h, key, rev, lo, in[i].Lease)
	})
}

// answerRead answers the lease claim c in out from e, the state of its
// run read in a batch, where decideRead decides it without a write; it
// reports false (out untouched) where the single path must decide.
func (b *Backend) answerRead(ctx context.Context, h handles, c anarchon.RunClaim, e kvEntry, out *anarchon.RunClaimAnswer) bool {
	var v runValue
	if json.Unmarshal(e.val, &v) != nil {
		return false // the single path reports the unreadable value
	}
	o, decided, err := b.decideRead(ctx, h, c, v, e.created)
	if !decided {
		return false
	}
	out.Outcome, out.Err = o, err
	return true
}

// batchParallel bounds the goroutines of a batch's per-slot steps.
const batchParallel = anarchon.DefaultBatchSize

// forEach calls f(0), ..., f(n-1), at most batchParallel at a time, and
// returns when all have returned. The last call runs on the caller's
// goroutine, which would otherwise only wait: a single call starts no
// goroutine (BenchmarkReadKeys: one Get through forEach took 184 µs
// where the Get alone took 124 µs when it started one).
func forEach(n int, f func(i int)) {
	if n == 0 {
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, batchParallel)
	for i := range n - 1 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	sem <- struct{}{}
	f(n - 1)
	<-sem
	wg.Wait()
}

// kvEntry is the latest value of a key and its revision.
type kvEntry struct {
	val     []byte
	rev     uint64
	created time.Time
}

// readMany reads the latest value of each key; a missing or deleted key
// has no entry. Unless fresh, it reads the server clock beside (a failed
// clock read is left to the checks that need the clock, which read it
// again).
func (b *Backend) readMany(ctx context.Context, h handles, keys []string, fresh bool) (map[string]kvEntry, error) {
	var clock sync.WaitGroup
	if !fresh {
		clock.Go(func() { _, _ = b.readClock(ctx, h) })
	}
	got, err := b.getMany(ctx, h, keys)
	clock.Wait()
	return got, err
}

// directBatch is the most keys one direct get request asks for; the
// server answers at most 1,024 messages per request.
const directBatch = 256

// directMin is the fewest keys getMany reads with a direct get request
// for many subjects; fewer are read with one KV Get each, side by side.
// Such a request takes a reply subscription of its own, which costs more
// than it saves for a few keys: BenchmarkReadKeys measured one request
// for 1, 2, 3, 4 and 8 keys at 266, 270, 279, 295 and 325 µs, and as
// many Gets side by side at 155, 189, 215, 246 and 340 µs (one Get
// alone: 122–153 µs; loopback, nats-server 2.14.10, 2 cores).
const directMin = 5

// fastPath reports whether the JetStream context uses the default API
// prefix, so that the bucket's subjects are "$KV.<bucket>.<key>" and its
// direct get API "$JS.API.DIRECT.GET.KV_<bucket>". Otherwise the batch
// steps use the KV API, one request per key, side by side.
func (b *Backend) fastPath() bool {
	if noFastPath {
		return false
	}
	o := b.js.Options()
	return o.APIPrefix == "" && o.Domain == ""
}

// noFastPath turns the fast path off, for tests of the other path.
var noFastPath bool

// getMany reads the latest value of each key with direct get requests
// that each ask for the last message of up to directBatch subjects
// ("multi_last", nats-server 2.11 and later), side by side. On a server
// that refuses such a request, without the fast path, or for fewer than
// directMin keys, it reads each key with KV Get, side by side. A read that a stream's election dropped,
// or that met no leader, is sent again (resend), as a single read is.
func (b *Backend) getMany(ctx context.Context, h handles, keys []string) (map[string]kvEntry, error) {
	keys = uniq(keys)
	out := make(map[string]kvEntry, len(keys))
	var mu sync.Mutex
	n := (len(keys) + directBatch - 1) / directBatch
	errs := make([]error, n)
	forEach(n, func(c int) {
		part := keys[c*directBatch : min((c+1)*directBatch, len(keys))]
		var got map[string]kvEntry
		err := b.resendRead(ctx, func(ctx context.Context) (err error) {
			got, err = hedged(ctx, b.hedgeAfter(), func(ctx context.Context) (map[string]kvEntry, error) {
				if b.fastPath() && len(part) >= directMin {
					m, err := b.directMulti(ctx, part)
					if !errors.Is(err, errNoMultiGet) {
						return m, err
					}
				}
				return b.getEach(ctx, h, part)
			})
			return err
		})
		mu.Lock()
		defer mu.Unlock()
		errs[c] = err
		for k, e := range got {
			out[k] = e
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if laggingReplica != nil { // tests only: no pass over the answers otherwise
		for k := range out {
			if lagging(k) {
				delete(out, k)
			}
		}
	}
	return out, nil
}

// laggingReplica, set by tests only, makes the direct gets of the keys it
// names answer as a replica that has not yet seen them would: absent.
var laggingReplica func(key string) bool

func lagging(key string) bool { return laggingReplica != nil && laggingReplica(key) }

func uniq(keys []string) []string {
	seen := make(map[string]bool, len(keys))
	out := keys[:0:0]
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// errNoMultiGet is directMulti's answer when the server does not serve
// the request; getMany then reads key by key.
var errNoMultiGet = errors.New("natsbackend: multi-subject direct get not served")

// directMulti asks the bucket's stream for the last message of each
// key's subject in one direct get request. The server answers with one
// message per subject that has one, then an end-of-batch status (204),
// or a 404 when none has one.
func (b *Backend) directMulti(ctx context.Context, keys []string) (map[string]kvEntry, error) {
	pre := "$KV." + b.opts.Bucket + "."
	subjects := make([]string, len(keys))
	for i, k := range keys {
		subjects[i] = pre + k
	}
	req, _ := json.Marshal(struct {
		MultiLast []string `json:"multi_last"`
		Batch     int      `json:"batch"`
	}{subjects, len(subjects)})
	nc := b.js.Conn()
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, b.wrap("read keys", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest("$JS.API.DIRECT.GET.KV_"+b.opts.Bucket, inbox, req); err != nil {
		return nil, b.wrap("read keys", err)
	}
	out := make(map[string]kvEntry, len(keys))
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			if cerr := ctxErr(ctx, "read keys"); cerr != nil {
				return nil, cerr
			}
			if errors.Is(err, nats.ErrNoResponders) {
				return nil, errNoMultiGet // no direct gets: see status 503 below
			}
			return nil, b.wrap("read keys", err)
		}
		if len(m.Data) == 0 && m.Header.Get("Status") != "" {
			switch status := m.Header.Get("Status"); status {
			case "204": // end of batch
				if np := m.Header.Get("Nats-Num-Pending"); np != "" && np != "0" {
					return nil, fmt.Errorf("natsbackend: read keys: the server left %s messages unsent", np)
				}
				return out, nil
			case "404": // none of the keys has a value
				return out, nil
			case "408", "400", "503":
				// A server before 2.11 (the request reads as empty), or a
				// bucket without direct gets (no responders): the KV API
				// reads key by key, and reports a stream that is gone.
				return nil, errNoMultiGet
			default:
				return nil, fmt.Errorf("natsbackend: read keys: status %s %s", status, m.Header.Get("Description"))
			}
		}
		key, ok := strings.CutPrefix(m.Header.Get(jetstream.SubjectHeader), pre)
		if !ok {
			continue
		}
		if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			continue
		}
		if m.Header.Get("Nats-Marker-Reason") != "" {
			continue
		}
		rev, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		ts, _ := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
		out[key] = kvEntry{val: m.Data, rev: rev, created: ts}
	}
}

// getEach reads each key with KV Get, side by side.
func (b *Backend) getEach(ctx context.Context, h handles, keys []string) (map[string]kvEntry, error) {
	out := make(map[string]kvEntry, len(keys))
	errs := make([]error, len(keys))
	var mu sync.Mutex
	forEach(len(keys), func(i int) {
		e, err := h.kv.Get(ctx, keys[i])
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return
		}
		if err != nil {
			errs[i] = b.wrap("read "+keys[i], err)
			return
		}
		mu.Lock()
		out[keys[i]] = kvEntry{val: e.Value(), rev: e.Revision(), created: e.Created()}
		mu.Unlock()
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// createMany writes vals[i] to keys[i] if the key has no value (a put
// expecting revision 0, what Claim's first write is): all are published
// before any acknowledgement is awaited. revs[i] is the new revision, or
// errs[i] the error, which wraps jetstream.ErrKeyRevisionMismatch when
// the key has a value (or a delete marker). Without the fast path it
// calls KV Update for each, side by side.
func (b *Backend) createMany(ctx context.Context, h handles, keys []string, vals [][]byte) (revs []uint64, errs []error) {
	// Expecting revision 0 is a create: it fails when the key exists.
	return b.updateMany(ctx, h, "claim", keys, vals, make([]uint64, len(keys)))
}
