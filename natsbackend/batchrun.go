package natsbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/anarchon/anarchon"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	_ anarchon.HeartbeatBatcher   = (*RunStore)(nil)
	_ anarchon.ResultBatcher      = (*Backend)(nil)
	_ anarchon.ClaimRecordBatcher = (*Backend)(nil)
	_ anarchon.FinishBatcher      = (*RunStore)(nil)
)

// Heartbeats renews many leases (anarchon.HeartbeatBatcher), each as
// [RunStore.Heartbeat] would, with each step of Heartbeat taken for the
// whole batch at once: one direct get request reads every run, and the
// compare-and-set updates of the runs the tokens hold are all published
// before any acknowledgement is awaited. So a batch waits for about two
// round trips whatever its size, and sends one request per renewed run
// plus one (per 256 runs). A run whose update lost to another writer
// (its revision changed since the read), and one that the read shows not
// held (which the single path confirms with the stream's leader:
// readRunLeader), take the single path, side by side with the others. A
// run's bad input (an empty job or token, a lease that is not positive)
// or error is its own answer's Err; the
// error is non-nil only when no run got an answer (the backend is
// closed, the read failed).
func (r *RunStore) Heartbeats(ctx context.Context, in []anarchon.HeartbeatInput) ([]anarchon.HeldAnswer, error) {
	b := r.b
	h, err := b.ready(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]anarchon.HeldAnswer, len(in))
	keys := make([]string, len(in))
	for i, c := range in {
		keys[i], out[i].Err = runKeyOf(c.Job, c.Slot, c.Token)
		if out[i].Err == nil {
			out[i].Err = checkBeat(c.Lease)
		}
	}
	runs, err := b.readRuns(ctx, h, keys, out)
	if err != nil {
		return nil, err
	}
	var w writes
	var refused []int // not held by the read: the single path confirms it with the leader
	for i, e := range runs {
		if out[i].Err != nil {
			continue
		}
		if e == nil {
			refused = append(refused, i)
			continue
		}
		if nv, ok := renew(e.v, in[i].Token, in[i].Lease); ok {
			w.add(i, keys[i], nv, e.rev)
		} else {
			refused = append(refused, i)
		}
	}
	again := b.writeRuns(ctx, h, &w, func(i int, err error) {
		out[i].Held, out[i].Err = err == nil, err
	})
	again = append(again, refused...)
	forEach(len(again), func(k int) {
		i := again[k]
		out[i].Held, out[i].Err = r.Heartbeat(ctx, in[i])
	})
	return out, nil
}

// SaveResults stores many results (anarchon.ResultBatcher), each as
// [Backend.SaveResult] would: the history records are all published
// before any acknowledgement is awaited, then each job's subject is
// trimmed once, all the purge requests sent before any answer is
// awaited. So a batch waits for two round trips whatever its size, and
// sends one request per result plus one per job. The trim of a job with
// several results in the batch keeps what its last result's HistorySize
// asks, after all of them are appended. A result's bad input or error
// (its publish's, or its job's trim's) is its own; the error is non-nil
// only when the backend is closed.
func (b *Backend) SaveResults(ctx context.Context, in []anarchon.SaveResultInput) ([]error, error) {
	h, err := b.ready(ctx)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(in))
	jobs := make([]string, len(in))
	var live []int
	for i, c := range in {
		jobs[i], errs[i] = encodeJob(c.Job)
		if errs[i] == nil {
			errs[i] = checkHistory(c)
		}
		if errs[i] == nil {
			live = append(live, i)
		}
	}
	b.saveMany(ctx, h, in, jobs, live, errs)
	return errs, nil
}

// FinishResults finishes many leased runs with their results
// (anarchon.FinishBatcher), each as [RunStore.FinishResult] would, with
// each step taken for the whole batch at once: one direct get request
// reads every run; the compare-and-set updates of the runs the tokens
// hold are all published before any acknowledgement is awaited; then the
// results are stored as [Backend.SaveResults] stores them (the publishes
// together, then one trim per job). So a batch waits for about four
// round trips whatever its size, as one FinishResult does. A run whose
// update lost to another writer, and one that the read shows not held
// (confirmed with the stream's leader: readRunLeader), take the single
// path's finish, side by side with the others, before the results are
// stored. A run's bad input or error is its own answer's Err (no result
// is stored for a run whose finish failed); the error is non-nil only
// when no run got an answer (the backend is closed, the read failed).
func (r *RunStore) FinishResults(ctx context.Context, in []anarchon.SaveResultInput) ([]anarchon.HeldAnswer, error) {
	b := r.b
	h, err := b.ready(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]anarchon.HeldAnswer, len(in))
	keys := make([]string, len(in))
	for i, c := range in {
		if out[i].Err = checkFinishResult(c); out[i].Err == nil {
			keys[i], out[i].Err = runKeyOf(c.Job, c.Result.Slot, c.Result.Token)
		}
	}
	runs, err := b.readRuns(ctx, h, keys, out)
	if err != nil {
		return nil, err
	}
	var w writes
	var refused []int // not held by the read: the single path confirms it with the leader
	for i, e := range runs {
		if out[i].Err != nil {
			continue
		}
		if e == nil {
			refused = append(refused, i)
			continue
		}
		nv, write, repeat := settleDone(e.v, in[i].Result.Token, in[i].Result.Status)
		switch {
		case write:
			w.add(i, keys[i], nv, e.rev)
		case repeat:
			out[i].Held = true
		default:
			refused = append(refused, i)
		}
	}
	again := b.writeRuns(ctx, h, &w, func(i int, err error) {
		out[i].Held, out[i].Err = err == nil, err
	})
	again = append(again, refused...)
	forEach(len(again), func(k int) {
		i := again[k]
		c := in[i]
		out[i].Held, out[i].Err = b.finish(ctx, c.Job, c.Result.Slot, c.Result.Token, c.Result.Status)
	})

	// The results, of every run whose finish got an answer.
	results := make([]anarchon.SaveResultInput, len(in))
	jobs := make([]string, len(in))
	errs := make([]error, len(in))
	var live []int
	for i := range in {
		if keys[i] == "" || out[i].Err != nil {
			continue
		}
		results[i] = heldResult(in[i], out[i].Held)
		jobs[i], _ = encodeJob(in[i].Job)
		live = append(live, i)
	}
	b.saveMany(ctx, h, results, jobs, live, errs)
	for _, i := range live {
		out[i].Err = errs[i]
	}
	return out, nil
}

// runKeyOf is the run key of (job, slot), after the checks of runArgs:
// a job name that cannot be a key, an empty token.
func runKeyOf(job string, slot int64, token string) (string, error) {
	enc, err := encodeJob(job)
	if err != nil {
		return "", err
	}
	if err := checkToken(token); err != nil {
		return "", err
	}
	return runKey(enc, slot), nil
}

// runEntry is a run read by readRuns, with the revision it was read at.
type runEntry struct {
	v   runValue
	rev uint64
}

// readRuns reads the runs of keys with one direct get request (per
// directBatch keys), for the entries whose out[i].Err is nil; the others
// are skipped. runs[i] is the run of keys[i], nil when it is absent
// (answer: not held) or its value is unreadable (out[i].Err is set, as
// the single path's read sets it). The error is the read's, for the
// whole batch.
func (b *Backend) readRuns(ctx context.Context, h handles, keys []string, out []anarchon.HeldAnswer) ([]*runEntry, error) {
	var want []string
	for i, k := range keys {
		if out[i].Err == nil {
			want = append(want, k)
		}
	}
	runs := make([]*runEntry, len(keys))
	if len(want) == 0 {
		return runs, nil
	}
	rctx, cancel := b.bound(ctx) // each step is bounded by Options.Timeout as one call is
	defer cancel()
	got, err := b.getMany(rctx, h, want)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		e, ok := got[k]
		if out[i].Err != nil || !ok {
			continue
		}
		var v runValue
		if err := json.Unmarshal(e.val, &v); err != nil {
			out[i].Err = fmt.Errorf("natsbackend: run %s holds an unreadable value: %w", k, err)
			continue
		}
		runs[i] = &runEntry{v: v, rev: e.rev}
	}
	return runs, nil
}

// writes are the compare-and-set updates of a batch: vals[j] to keys[j]
// if its revision is still revs[j], for entry idx[j].
type writes struct {
	idx  []int
	keys []string
	vals [][]byte
	revs []uint64
}

func (w *writes) add(i int, key string, v runValue, rev uint64) {
	w.idx, w.keys, w.vals, w.revs = append(w.idx, i), append(w.keys, key), append(w.vals, encodeRun(v)), append(w.revs, rev)
}

// writeRuns publishes the updates of w (updateMany) and calls done for
// each entry whose update was answered: err nil (written) or the error of
// the single path's update. It returns the entries whose update lost to
// another writer, which the caller decides again with the single path.
func (b *Backend) writeRuns(ctx context.Context, h handles, w *writes, done func(i int, err error)) (again []int) {
	if len(w.keys) == 0 {
		return nil
	}
	uctx, cancel := b.bound(ctx)
	defer cancel()
	_, errs := b.updateMany(uctx, h, "update run", w.keys, w.vals, w.revs)
	for j, i := range w.idx {
		switch err := errs[j]; {
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			again = append(again, i)
		case err != nil:
			done(i, b.wrap("update run", err))
		default:
			done(i, nil)
		}
	}
	return again
}

// updateMany (op names it in a timeout error) writes vals[i] to keys[i]
// if the key's last revision is revs[i] (a KV Update, compare-and-set):
// all are published before any acknowledgement is awaited. newRevs[i] is
// the new revision, or errs[i] the error, which wraps
// jetstream.ErrKeyRevisionMismatch when the key changed. Without the fast
// path it calls KV Update for each, side by side.
//
// The publishes are sent again across an election (publishAll). A second
// copy of a write that did land fails as a revision mismatch, which every
// caller already answers by reading the key and deciding again (a claim
// finds its own token, a finish its own done run), so a copy is safe.
func (b *Backend) updateMany(ctx context.Context, h handles, op string, keys []string, vals [][]byte, revs []uint64) (newRevs []uint64, errs []error) {
	newRevs, errs = make([]uint64, len(keys)), make([]error, len(keys))
	if !b.fastPath() {
		forEach(len(keys), func(i int) { newRevs[i], errs[i] = h.kv.Update(ctx, keys[i], vals[i], revs[i]) })
		return newRevs, errs
	}
	all := make([]int, len(keys))
	for i := range all {
		all[i] = i
	}
	return newRevs, b.publishAll(ctx, op, all, newRevs, errs, func(i int) (*nats.Msg, []jetstream.PublishOpt) {
		return &nats.Msg{Subject: "$KV." + b.opts.Bucket + "." + keys[i], Data: vals[i]},
			[]jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(revs[i])}
	})
}

// publishAll publishes msg(i) for each i of idx, all before any
// acknowledgement is awaited, and sets seqs[i] (the stream sequence) or
// errs[i]; op names it in a timeout error. The publishes still unanswered
// when a stream of the backend elects a leader are sent again at once,
// and those that met no leader are sent again when one is elected
// (resend): the old leader dropped them. Only messages whose second copy
// is harmless may be given: a compare-and-set whose copy fails as a
// revision mismatch, a record with a message ID the stream deduplicates.
// It returns errs.
func (b *Backend) publishAll(ctx context.Context, op string, idx []int, seqs []uint64, errs []error, msg func(i int) (*nats.Msg, []jetstream.PublishOpt)) []error {
	return b.publishAllBy(ctx, b.resend, op, idx, seqs, errs, msg)
}

// publishAllBy is publishAll with the repeat rule send (resend, or
// resendOnElection for records a handler's start waits for).
func (b *Backend) publishAllBy(ctx context.Context, send func(context.Context, func(context.Context) error) error,
	op string, idx []int, seqs []uint64, errs []error, msg func(i int) (*nats.Msg, []jetstream.PublishOpt)) []error {
	futures := make([]jetstream.PubAckFuture, len(errs))
	pending := idx
	_ = send(ctx, func(try context.Context) error {
		for _, i := range pending {
			m, opts := msg(i)
			futures[i], errs[i] = b.js.PublishMsgAsync(m, opts...)
		}
		var again []int
		for _, i := range pending {
			if futures[i] == nil {
				continue
			}
			seqs[i], errs[i] = awaitAck(try, futures[i], op)
			if errs[i] != nil && (errors.Is(errs[i], context.Canceled) || noResponders(errs[i])) {
				again = append(again, i)
			}
		}
		if pending = again; len(again) > 0 {
			return errs[again[0]] // resent if an election ended try
		}
		return nil
	})
	return errs
}

// awaitAck waits for the answer to an async publish: its stream sequence,
// or its error, which wraps jetstream.ErrKeyRevisionMismatch when the
// publish expected another last sequence (as KV Update maps it).
func awaitAck(ctx context.Context, f jetstream.PubAckFuture, op string) (uint64, error) {
	select {
	case pa := <-f.Ok():
		return pa.Sequence, nil
	case err := <-f.Err():
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			err = fmt.Errorf("%w: %w", err, jetstream.ErrKeyRevisionMismatch)
		}
		return 0, err
	case <-ctx.Done():
		return 0, ctxErr(ctx, op)
	}
}

// saveMany is SaveResult for the entries live of in (jobs[i]: in[i]'s
// job, encoded), errs[i] set to each one's error: the records are all
// published before any acknowledgement is awaited (and sent again across
// an election: publishAll, their message IDs dedupe a copy); then every job with a
// record stored is trimmed once, to its last stored record's
// HistorySize, all the purges sent before any answer is awaited.
func (b *Backend) saveMany(ctx context.Context, h handles, in []anarchon.SaveResultInput, jobs []string, live []int, errs []error) {
	if len(live) == 0 {
		return
	}
	pctx, cancel := b.bound(ctx)
	defer cancel()
	b.publishAll(pctx, "save result", live, make([]uint64, len(in)), errs, func(i int) (*nats.Msg, []jetstream.PublishOpt) {
		return b.resultMsg(jobs[i], in[i]), b.resultOpts(in[i])
	})
	keep := map[string]uint64{}
	var order []string // the jobs to trim, in their first stored record's order
	for _, i := range live {
		if errs[i] != nil {
			errs[i] = b.wrap("save result", errs[i])
			continue
		}
		if _, ok := keep[jobs[i]]; !ok {
			order = append(order, jobs[i])
		}
		keep[jobs[i]] = keepFor(in[i].HistorySize)
	}
	if len(order) == 0 {
		return
	}
	tctx, cancel := b.bound(ctx)
	defer cancel()
	trimErrs := b.trimMany(tctx, h, order, keep)
	for _, i := range live {
		if errs[i] == nil {
			errs[i] = trimErrs[jobs[i]]
		}
	}
}

// trimMany trims the subject of each job to keep[job] messages, as trim
// does one: with the fast path the purge requests are all sent, each with
// its own reply subject, before any answer is awaited; without it, each
// job's trim goes side by side. It returns each job's error (nil: none).
func (b *Backend) trimMany(ctx context.Context, h handles, jobs []string, keep map[string]uint64) map[string]error {
	errs := make([]error, len(jobs))
	if b.fastPath() {
		b.purgeMany(ctx, jobs, keep, errs)
	} else {
		forEach(len(jobs), func(k int) {
			err := h.hist.Purge(ctx, jetstream.WithPurgeSubject(b.subject(jobs[k])), jetstream.WithPurgeKeep(keep[jobs[k]]))
			errs[k] = b.wrap("trim history", err)
		})
	}
	out := make(map[string]error, len(jobs))
	for k, job := range jobs {
		out[job] = errs[k]
	}
	return out
}

// purgeMany sends one purge request (the JetStream API's, which
// Stream.Purge sends) per job to the history stream, with reply subjects
// "<inbox>.<k>" on one subscription, and sets errs[k] from job k's
// answer.
func (b *Backend) purgeMany(ctx context.Context, jobs []string, keep map[string]uint64, errs []error) {
	nc := b.js.Conn()
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox + ".*")
	if err != nil {
		for k := range errs {
			errs[k] = b.wrap("trim history", err)
		}
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	api := "$JS.API.STREAM.PURGE." + b.opts.HistoryStream
	pending := make(map[int]bool, len(jobs))
	for k, job := range jobs {
		req, _ := json.Marshal(jetstream.StreamPurgeRequest{Subject: b.subject(job), Keep: keep[job]})
		if err := nc.PublishRequest(api, inbox+"."+strconv.Itoa(k), req); err != nil {
			errs[k] = b.wrap("trim history", err)
			continue
		}
		pending[k] = true
	}
	for len(pending) > 0 {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			if cerr := ctxErr(ctx, "trim history"); cerr != nil {
				err = cerr
			} else {
				err = b.wrap("trim history", err)
			}
			for k := range pending {
				errs[k] = err
			}
			return
		}
		_, tail, _ := strings.Cut(m.Subject, inbox+".")
		k, perr := strconv.Atoi(tail)
		if perr != nil || !pending[k] {
			continue
		}
		delete(pending, k)
		errs[k] = b.wrap("trim history", purgeAnswer(m))
	}
}

// purgeAnswer is the error of a purge request's answer: a status without
// data (no responders: the stream is gone), or the API's error.
func purgeAnswer(m *nats.Msg) error {
	if len(m.Data) == 0 && m.Header.Get("Status") != "" {
		if m.Header.Get("Status") == "503" {
			return jetstream.ErrNoStreamResponse
		}
		return fmt.Errorf("status %s %s", m.Header.Get("Status"), m.Header.Get("Description"))
	}
	var resp struct {
		Error *jetstream.APIError `json:"error,omitempty"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return fmt.Errorf("unreadable purge answer: %w", err)
	}
	if resp.Error != nil {
		return resp.Error
	}
	return nil
}
