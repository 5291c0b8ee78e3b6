package sqlbackend

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/anarchon/anarchon"
)

var (
	_ anarchon.HeartbeatBatcher = (*RunStore)(nil)
	_ anarchon.ResultBatcher    = (*SQLBackend)(nil)
	_ anarchon.FinishBatcher    = (*RunStore)(nil)
)

// Heartbeats implements [anarchon.HeartbeatBatcher]: every lease of in is
// renewed by Heartbeat's own statement, all in one transaction (SQLite:
// one BEGIN IMMEDIATE), or, with Routines.Heartbeats, by one statement
// for the whole batch. A non-positive lease is that entry's Err, and the
// others are renewed. Any other error rolls the whole batch back and is
// returned for all of it: no lease is renewed.
//
// The leases are renewed in the order of (job, slot), so that two
// batches that share runs lock them in the same order. Two entries for
// one run and token are answered alike, and the lease is renewed to the
// later entry's. With the routine, an entry whose job or token the
// statement's JSON argument cannot carry (not UTF-8, or a NUL byte) goes
// alone through Heartbeat after the statement, so that it is answered as
// alone (PostgreSQL refuses it) without failing the others.
func (s *RunStore) Heartbeats(ctx context.Context, in []anarchon.HeartbeatInput) ([]anarchon.HeldAnswer, error) {
	b := s.b()
	const op = "heartbeat"
	out := make([]anarchon.HeldAnswer, len(in))
	if len(in) == 0 {
		return out, nil
	}
	todo, err := entries(ctx, b, "heartbeat batch", len(in), func(i int) (err error) {
		if err = checkHeartbeat(in[i]); err != nil {
			out[i].Err = b.errorf(op, err)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(todo) == 0 {
		return out, nil
	}
	slices.SortStableFunc(todo, func(i, k int) int {
		return cmp.Or(cmp.Compare(in[i].Job, in[k].Job), cmp.Compare(in[i].Slot, in[k].Slot))
	})
	err = b.decide(ctx, "heartbeat batch", todo, b.rt.Heartbeats != "",
		func(i int) bool { return textSafe(in[i].Job, in[i].Token) },
		func(todo []int) error { return b.heartbeatsRoutine(ctx, in, todo, out) },
		func(i int) { out[i].Held, out[i].Err = s.Heartbeat(ctx, in[i]) },
		func(tx Querier, i int) (err error) {
			out[i].Held, err = b.heartbeat(ctx, tx, in[i])
			return err
		}, nil)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SaveResults implements [anarchon.ResultBatcher]: every result of in is
// stored by SaveResult's own transaction body (the job's lock, the
// result, a plain claim's run row, trimming), all in one transaction, or,
// with Routines.SaveResults, by one statement for the whole batch. A
// result SaveResult would refuse (e.g. an empty job name) is that entry's
// error, and the others are stored. Any other error rolls the whole batch
// back and is returned for all of it: nothing is stored.
//
// The results are stored in the order of (job, slot), each job's lock
// taken in that order, so that two batches never deadlock; two results of
// one job keep their order. With the routine, a result whose job, token,
// instance or status the JSON argument cannot carry goes alone through
// SaveResult after the statement, as in Heartbeats. Where write
// transactions run one at a time (SQLite: no job locks), the results of
// jobs that have one each in the batch go first, each step of SaveResult
// for all of them at once (writeSets), then the others one by one.
func (b *SQLBackend) SaveResults(ctx context.Context, in []anarchon.SaveResultInput) ([]error, error) {
	const op = "save result"
	errs := make([]error, len(in))
	if len(in) == 0 {
		return errs, nil
	}
	srs := make([]saved, len(in))
	todo, err := entries(ctx, b, "save result batch", len(in), func(i int) (err error) {
		if srs[i], err = newSaved(in[i].Job, in[i].Result, in[i].HistorySize, in[i].HistoryTTL); err != nil {
			errs[i] = b.errorf(op, err)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(todo) == 0 {
		return errs, nil
	}
	sortSaved(srs, todo)
	err = b.decide(ctx, "save result batch", todo, b.rt.SaveResults != "",
		func(i int) bool { return srs[i].textSafe() },
		func(todo []int) error {
			_, err := b.all(ctx, b.cfg.Conn, b.rt.SaveResults, savedJSON(srs, todo))
			return err
		},
		func(i int) { errs[i] = b.SaveResult(ctx, in[i]) },
		func(tx Querier, i int) error { return b.saveResult(ctx, tx, srs[i]) },
		b.lone(srs, func(tx Querier, todo []int) error { return b.writeSets(ctx, tx, srs, todo, nil) }))
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// FinishResults implements [anarchon.FinishBatcher]: every run of in is
// finished by FinishResult's own transaction body, all in one
// transaction, or, with Routines.FinishResults, by one statement for the
// whole batch (which calls Routines.FinishResult's function per entry).
// An entry FinishResult would refuse (an empty token or status, a manual
// result, what SaveResult refuses) is that entry's Err, and the others
// are finished. Any other error rolls the whole batch back and is
// returned for all of it. The order, the entries that go alone, and the
// steps taken for all the jobs with one entry each (SQLite) are
// SaveResults'.
func (s *RunStore) FinishResults(ctx context.Context, in []anarchon.SaveResultInput) ([]anarchon.HeldAnswer, error) {
	b := s.b()
	const op = "finish result"
	out := make([]anarchon.HeldAnswer, len(in))
	if len(in) == 0 {
		return out, nil
	}
	srs := make([]saved, len(in))
	todo, err := entries(ctx, b, "finish result batch", len(in), func(i int) (err error) {
		if srs[i], err = checkFinishResult(in[i]); err != nil {
			out[i].Err = b.errorf(op, err)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(todo) == 0 {
		return out, nil
	}
	sortSaved(srs, todo)
	err = b.decide(ctx, "finish result batch", todo, b.rt.FinishResults != "",
		func(i int) bool { return srs[i].textSafe() },
		func(todo []int) error { return b.finishResultsRoutine(ctx, srs, todo, out) },
		func(i int) { out[i].Held, out[i].Err = s.FinishResult(ctx, in[i]) },
		func(tx Querier, i int) (err error) {
			out[i].Held, err = b.finishResult(ctx, tx, srs[i])
			return err
		},
		b.lone(srs, func(tx Querier, todo []int) error { return b.writeSets(ctx, tx, srs, todo, out) }))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decide does a batch's todo entries. With a routine (routined), the
// entries its JSON argument can carry (safe) go in one call of routine
// and the others alone through their single call (alone), after it;
// without, the entries run in one transaction, which any error rolls
// back whole: those sets takes (nil: none) with its one statement per
// step, then every other entry's single-call body (single). op names the
// batch in the error, which is then the whole batch's.
func (b *SQLBackend) decide(ctx context.Context, op string, todo []int, routined bool,
	safe func(i int) bool, routine func(todo []int) error, alone func(i int), single func(tx Querier, i int) error,
	sets func(tx Querier, todo []int) ([]int, error)) error {
	if routined {
		todo, lone := split(todo, safe)
		if len(todo) > 0 {
			if err := routine(todo); err != nil {
				return b.errorf(op, err)
			}
		}
		for _, i := range lone {
			alone(i)
		}
		return nil
	}
	err := b.cfg.Conn.Transaction(ctx, func(tx Querier) error {
		rest := todo
		if sets != nil {
			var err error
			if rest, err = sets(tx, todo); err != nil {
				return err
			}
		}
		for _, i := range rest {
			if err := single(tx, i); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return b.errorf(op, err)
	}
	return nil
}

// lone returns decide's sets for a batch of results srs: where setsWrite
// holds, write takes the entries whose job is alone in the batch
// (loneJobs), and the others are left to their single-call bodies; nil
// elsewhere.
func (b *SQLBackend) lone(srs []saved, write func(tx Querier, todo []int) error) func(tx Querier, todo []int) ([]int, error) {
	if !b.setsWrite() {
		return nil
	}
	return func(tx Querier, todo []int) ([]int, error) {
		lone, rest := loneJobs(todo, func(i int) string { return srs[i].job })
		if len(lone) == 0 {
			return rest, nil
		}
		return rest, write(tx, lone)
	}
}

// entries readies the backend for a batch of n entries (op names it in
// errors), checks each with check, which records a refused entry's error
// itself, and returns the indexes of the entries to do. Unlike the
// claims' batchTodo it calls no Guard: the single calls do not either.
func entries(ctx context.Context, b *SQLBackend, op string, n int, check func(i int) error) ([]int, error) {
	if err := b.ready(ctx, op); err != nil {
		return nil, err
	}
	todo := make([]int, 0, n)
	for i := range n {
		if check(i) == nil {
			todo = append(todo, i)
		}
	}
	return todo, nil
}

// sortSaved orders todo by the (job, slot) of srs, keeping the order of
// equal ones.
func sortSaved(srs []saved, todo []int) {
	slices.SortStableFunc(todo, func(i, k int) int {
		return cmp.Or(cmp.Compare(srs[i].job, srs[k].job), cmp.Compare(srs[i].r.Slot, srs[k].r.Slot))
	})
}

// split parts todo into the entries that go in the batch's one statement
// (safe) and those that go alone, each through its single call, keeping
// todo's order in both.
func split(todo []int, safe func(i int) bool) (batch, alone []int) {
	batch = todo[:0:0]
	for _, i := range todo {
		if safe(i) {
			batch = append(batch, i)
		} else {
			alone = append(alone, i)
		}
	}
	return batch, alone
}

// textSafe reports whether texts survive a JSON encoding into jsonb
// unchanged: encoding/json replaces bytes that are not UTF-8, which would
// name another run, and jsonb refuses an escaped NUL. An entry with such
// a text goes alone through its single call, so that the database
// answers it as it answers that call (PostgreSQL refuses it), and the
// other entries of the batch are not failed with it.
func textSafe(texts ...string) bool {
	for _, s := range texts {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return false
		}
	}
	return true
}

// textSafe is the textSafe of a result's texts; its error and output are
// sent through anarchon.EscapeText, which makes them safe.
func (sr saved) textSafe() bool {
	return textSafe(sr.job, sr.r.Token, sr.r.InstanceID, string(sr.r.Status))
}

type batchHeartbeat struct {
	Job   string `json:"j"`
	Slot  int64  `json:"s"`
	Token string `json:"t"`
	Lease int64  `json:"l"`
}

type runKey struct {
	job   string
	slot  int64
	token string
}

// heartbeatsRoutine renews in[todo] with one Routines.Heartbeats
// statement and stores the answers in out. Two entries for one run and
// token are sent once, with the later entry's lease.
func (b *SQLBackend) heartbeatsRoutine(ctx context.Context, in []anarchon.HeartbeatInput, todo []int, out []anarchon.HeldAnswer) error {
	arg := make([]batchHeartbeat, 0, len(todo))
	pos := make(map[runKey]int, len(todo)) // index in arg
	for _, i := range todo {
		h := in[i]
		key := runKey{h.Job, h.Slot, h.Token}
		e := batchHeartbeat{Job: h.Job, Slot: h.Slot, Token: h.Token, Lease: max(h.Lease.Milliseconds(), 1)}
		if k, ok := pos[key]; ok {
			arg[k] = e
			continue
		}
		pos[key] = len(arg)
		arg = append(arg, e)
	}
	data, err := json.Marshal(arg)
	if err != nil {
		return err
	}
	rows, err := b.all(ctx, b.cfg.Conn, b.rt.Heartbeats, string(data))
	if err != nil {
		return err
	}
	held := make(map[runKey]bool, len(rows))
	for _, row := range rows {
		rd := reader(row)
		key := runKey{rd.string(), rd.int64(), rd.string()}
		if err := rd.Err(); err != nil {
			return err
		}
		held[key] = true
	}
	for _, i := range todo {
		out[i] = anarchon.HeldAnswer{Held: held[runKey{in[i].Job, in[i].Slot, in[i].Token}]}
	}
	return nil
}

type batchResult struct {
	Job        string `json:"j"`
	Token      string `json:"t"`
	Slot       int64  `json:"s"`
	Instance   string `json:"i"`
	Attempt    int64  `json:"a"`
	Status     string `json:"st"`
	ClaimToken string `json:"c"`
	Started    any    `json:"sa"` // ms or null
	Finished   any    `json:"fa"`
	Error      string `json:"e"`
	Output     string `json:"o"`
	Manual     int64  `json:"m"`
	Plain      bool   `json:"p"`
	Size       int64  `json:"n"`
	TTL        int64  `json:"ttl"`
}

// savedJSON is the argument of Routines.SaveResults and FinishResults:
// srs[todo] in todo's order, as saveResultArgs passes them one by one.
func savedJSON(srs []saved, todo []int) string {
	arg := make([]batchResult, len(todo))
	for k, i := range todo {
		sr := srs[i]
		r := sr.r
		arg[k] = batchResult{
			Job: sr.job, Token: r.Token, Slot: r.Slot, Instance: r.InstanceID, Attempt: int64(r.Attempt),
			Status: string(r.Status), ClaimToken: sr.claimToken(), Started: msOrNil(r.StartedAt), Finished: msOrNil(r.FinishedAt),
			Error: anarchon.EscapeText(r.Error), Output: anarchon.EscapeText(r.Output),
			Manual: sr.manual(), Plain: sr.plain(), Size: sr.size, TTL: sr.ttlMs,
		}
	}
	data, err := json.Marshal(arg)
	if err != nil { // strings, integers and booleans always encode
		panic("sqlbackend: " + err.Error())
	}
	return string(data)
}

// finishResultsRoutine finishes srs[todo] with one Routines.FinishResults
// statement and stores the answers in out.
func (b *SQLBackend) finishResultsRoutine(ctx context.Context, srs []saved, todo []int, out []anarchon.HeldAnswer) error {
	rows, err := b.all(ctx, b.cfg.Conn, b.rt.FinishResults, savedJSON(srs, todo))
	if err != nil {
		return err
	}
	if len(rows) != len(todo) {
		return fmt.Errorf("finish result batch routine returned %d rows for %d entries", len(rows), len(todo))
	}
	for _, row := range rows {
		rd := reader(row)
		idx := rd.int64()
		ok := rd.bool()
		if err := rd.Err(); err != nil {
			return err
		}
		if idx < 1 || idx > int64(len(todo)) {
			return fmt.Errorf("finish result batch routine returned index %d of %d", idx, len(todo))
		}
		out[todo[idx-1]] = anarchon.HeldAnswer{Held: ok}
	}
	return nil
}
