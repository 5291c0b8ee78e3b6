package sqlbackend

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/anarchon/anarchon"
)

var (
	_ anarchon.BatchClaimer    = (*SQLBackend)(nil)
	_ anarchon.RunBatchClaimer = (*RunStore)(nil)
)

// ClaimBatch implements [anarchon.BatchClaimer]: every claim of in is
// decided by Claim's own statements, all in one transaction (SQLite: one
// BEGIN IMMEDIATE, so one hold of the database's write lock per batch
// instead of one per slot). A claim's bad input, and a slot refused as
// early, are that claim's Err, and the others are decided. Any other
// error rolls the whole batch back and is returned for all of it: no
// slot is answered, none is claimed.
//
// The claims run in the order of (job, slot), so that two batches that
// share slots lock them in the same order and never deadlock; claims of
// different slots do not depend on each other, and two claims of one slot
// in a batch keep their order (the first decides it).
//
// Without a batch routine (SQLite, MySQL), one read outside the
// transaction first answers every claim whose slot already has a run row,
// as the claim's own statements would have answered at that moment: the
// INSERT writes only where there is no row, so the claim is won only
// under the row's token. The read is the claim's moment, as the INSERT
// is a single claim's. The claims of a burst's later waves (SPEC §4, "Waves"),
// whose slots their owners have claimed, then cost one SELECT per batch,
// run beside the writers (WAL), instead of two statements each under the
// database's write lock. A slot settled by a pause, and a slot with no
// row, go to the transaction. On SQLite a batch whose first slot has no
// row skips the read (preRead).
//
// In the transaction, a dialect with RETURNING (SQLite; PostgreSQL
// without its routines) inserts every slot of the batch with one
// statement (plainClaims, 500 slots per statement), in the batch's
// order, with the single claim's checks (paused, watermark, early): a
// claim of a slot it inserted is won under the inserted token, and a
// slot settled by a pause gets its record once. A claim of a slot it did
// not insert (a row came after the read, trimmed, early) runs the single
// claim's statements, which answer it. The new slots of a burst then cost
// one statement per batch instead of one each (TestBatchRoundTrips and
// TestBurstBatchRoundTrips on SQLite: 4 statements for a won batch of 1,
// 10 or 100);
// BenchmarkClaimBatch's figures before and after are in bench/HISTORY.md
// §1, "Batch claims". MySQL, without RETURNING, runs the single claim's
// statements for every slot.
func (b *SQLBackend) ClaimBatch(ctx context.Context, in []anarchon.ClaimInput) ([]anarchon.ClaimAnswer, error) {
	out := make([]anarchon.ClaimAnswer, len(in))
	if len(in) == 0 {
		return out, nil
	}
	todo, err := batchTodo(ctx, b, "claim batch", in, checkClaim, func(i int, err error) { out[i].Err = b.errorf("claim", err) })
	if err != nil {
		return nil, err
	}
	if todo == nil { // every claim refused
		return out, nil
	}
	slices.SortStableFunc(todo, func(i, k int) int {
		return cmp.Or(cmp.Compare(in[i].Job, in[k].Job), cmp.Compare(in[i].Slot, in[k].Slot))
	})
	if b.rt.ClaimBatch != "" && jsonSafe(in, todo, func(c anarchon.ClaimInput) anarchon.ClaimInput { return c }) {
		if err := b.claimBatchRoutine(ctx, in, todo, out); err != nil {
			return nil, b.errorf("claim batch", err)
		}
		return out, nil
	}
	if todo, err = b.answerHeld(ctx, in, todo, out); err != nil {
		return nil, b.errorf("claim batch", err)
	}
	if len(todo) == 0 {
		return out, nil
	}
	err = b.cfg.Conn.Transaction(ctx, func(tx Querier) error {
		var inserted map[slotKey]string
		if !b.d.NoReturning {
			var err error
			if inserted, err = b.insertClaims(ctx, tx, in, todo); err != nil {
				return err
			}
		}
		recorded := map[slotKey]bool{}
		for _, i := range todo {
			out[i] = anarchon.ClaimAnswer{}
			k := slotKey{in[i].Job, in[i].Slot}
			if tok, ok := inserted[k]; ok {
				// The batch's INSERT decided the slot: won under the token
				// it inserted, or settled by a pause, which is recorded
				// once, as the claim that settled it records it.
				if paused := anarchon.PausedToken(in[i].Slot); tok == paused && !recorded[k] {
					recorded[k] = true
					if err := b.recordPaused(ctx, tx, in[i].Job, paused, in[i].Slot, in[i].InstanceID); err != nil {
						return b.errorf("claim", err)
					}
				}
				out[i].Won = tok == in[i].Token
				continue
			}
			won, err := b.claim(ctx, tx, in[i])
			if err != nil {
				if isEarly(err) {
					out[i].Err = err
					continue
				}
				return err
			}
			out[i].Won = won
		}
		return nil
	})
	if err != nil {
		return nil, b.errorf("claim batch", err)
	}
	return out, nil
}

// insertClaims runs plainClaims for the claims in[todo…] (in todo's
// order, heldChunk claims per statement) and returns the token of every
// slot it inserted. A slot it did not insert (a row was there, trimmed,
// early) is absent: the claim's own statements then answer it.
func (b *SQLBackend) insertClaims(ctx context.Context, tx Querier, in []anarchon.ClaimInput, todo []int) (map[slotKey]string, error) {
	inserted := make(map[slotKey]string, len(todo))
	for chunk := range slices.Chunk(todo, heldChunk) {
		q, args := b.unionKeys(b.q.plainClaims, b.q.plainClaimKey, len(chunk), func(n int) []any {
			c := in[chunk[n]]
			return []any{n, c.Job, c.Slot, c.Token, c.InstanceID, anarchon.PausedToken(c.Slot)}
		})
		args = append(args, anarchon.EarlyTolerance.Milliseconds())
		rows, err := b.all(ctx, tx, q, args...)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			rd := reader(row)
			k := slotKey{rd.string(), rd.int64()}
			tok := rd.string()
			if err := rd.Err(); err != nil {
				return nil, err
			}
			inserted[k] = tok
		}
	}
	return inserted, nil
}

// unionKeys puts into stmt's {keys} n copies of key, a one-row SELECT of
// typed parameters, joined with UNION ALL, and returns the statement in
// the database's placeholder syntax with the arguments of the rows,
// row(0) … row(n-1), in order; the arguments of stmt's own `?` after
// {keys} follow them. With SQLDialect.JSONKeys the rows go as one JSON
// argument instead (jsonKeys), where their texts allow it.
func (b *SQLBackend) unionKeys(stmt, key string, n int, row func(n int) []any) (string, []any) {
	if b.d.JSONKeys {
		if keys, arg, ok := jsonKeys(cmp.Or(b.jsonEach, "json_each"), key, n, row); ok {
			return b.rewrite(strings.Replace(stmt, "{keys}", keys, 1)), []any{arg}
		}
	}
	var keys strings.Builder
	var args []any
	for k := range n {
		if k > 0 {
			keys.WriteString(" UNION ALL ")
		}
		keys.WriteString(key)
		args = append(args, row(k)...)
	}
	return b.rewrite(strings.Replace(stmt, "{keys}", keys.String(), 1)), args
}

// jsonKeys is the {keys} of unionKeys as one SELECT over each (json_each
// or jsonb_each, probeJSONB) of a JSON array of the n rows (each an array
// of row(k)'s values), and that array: the k-th `?` of key reads the
// row's k-th element. The statement
// is the same short text whatever n, where n rows joined with UNION ALL
// are n SELECTs for the database to parse and plan: with SQLite that
// parse was about a third of a burst's claim transactions, which run one
// at a time across processes (BENCHMARKS.md §8). A key of one `?`
// (takeFences's job) reads a flat array of the values, each row's value
// itself, without json_extract. ok is false when a text
// value is not valid UTF-8 or holds NUL, which JSON would change: the
// caller joins the rows instead.
func jsonKeys(each, key string, n int, row func(n int) []any) (keys string, arg string, ok bool) {
	rows := make([][]any, n)
	for k := range n {
		rows[k] = row(k)
		for _, v := range rows[k] {
			if t, isText := v.(string); isText && !textSafe(t) {
				return "", "", false
			}
		}
	}
	var v any = rows
	flat := strings.Count(key, "?") == 1
	if flat {
		col := make([]any, n)
		for k := range n {
			col[k] = rows[k][0]
		}
		v = col
	}
	js, err := json.Marshal(v)
	if err != nil {
		return "", "", false
	}
	var q strings.Builder
	i := 0
	for part := range strings.SplitSeq(key, "?") {
		if i > 0 && flat {
			q.WriteString("value")
		} else if i > 0 {
			fmt.Fprintf(&q, "json_extract(value, '$[%d]')", i-1)
		}
		q.WriteString(part)
		i++
	}
	q.WriteString(" FROM " + each + "(?)")
	return q.String(), string(js), true
}

// probeJSONB returns the JSON table function jsonKeys reads its array
// with: jsonb_each where the database has it (SQLite 3.45.0 and later),
// else json_each. jsonb_each hands each row's array to json_extract in
// SQLite's binary JSON, which json_extract reads as it is; json_each
// hands it over as text, which json_extract parses again for each
// column. With jsonb_each a won claim of a batch cost 2.08–2.23× the raw
// inserts of the same run against 2.68–2.85× with json_each, a won lease
// claim 3.04–3.20× against 3.83–4.00× (sqlitefile's BenchmarkClaimBatch
// and BenchmarkClaimRunsBatch, three runs of each build in turn,
// bench/HISTORY.md, "jsonb_each"). Any error but SQLite's "no such
// table: jsonb_each" (busy, I/O) is returned: Init then fails and runs
// again at the next call.
func (b *SQLBackend) probeJSONB(ctx context.Context) (string, error) {
	_, err := b.all(ctx, b.cfg.Conn, "SELECT 1 FROM jsonb_each('[1]')")
	switch {
	case err == nil:
		return "jsonb_each", nil
	case strings.Contains(err.Error(), "no such table: jsonb_each"):
		return "json_each", nil
	}
	return "", err
}

// heldChunk is the most slots one read of answerHeld asks for: two
// parameters each, well below SQLite's and MySQL's limits on a
// statement's parameters (32,766 and 65,535) whatever Options.BatchSize.
const heldChunk = 500

// slotKey names a slot of a job.
type slotKey struct {
	job  string
	slot int64
}

// heldRow is a slot's run row as the pre-read of a batch finds it, with
// the server's clock at the read.
type heldRow struct {
	runRow
	now int64
}

// readHeld reads the run rows of the slots keys, from one read per
// heldChunk slots, outside any transaction (ClaimBatch's doc). Slots
// without a row are absent from the map.
func (b *SQLBackend) readHeld(ctx context.Context, keys []slotKey) (map[slotKey]heldRow, error) {
	held := make(map[slotKey]heldRow, len(keys))
	for chunk := range slices.Chunk(keys, heldChunk) {
		q, args := b.unionKeys(b.q.heldSlots, b.q.heldSlotKey, len(chunk), func(n int) []any {
			return []any{chunk[n].job, chunk[n].slot}
		})
		rows, err := b.all(ctx, b.cfg.Conn, q, args...)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			rd := reader(row)
			k := slotKey{rd.string(), rd.int64()}
			var h heldRow
			h.token, h.instance, h.attempt = rd.string(), rd.string(), rd.int64()
			h.state, h.status = anarchon.RunState(rd.string()), anarchon.Status(rd.string())
			h.leaseUntil, h.hasLease = rd.nullInt64()
			h.now = rd.int64()
			if err := rd.Err(); err != nil {
				return nil, err
			}
			held[k] = h
		}
	}
	return held, nil
}

// preRead answers the claims todo[…] that answer can answer from their
// slots' rows (readHeld), and returns the others' indexes, in todo's
// order. key is claim i's slot; answer reports whether a row answers
// claim i, and records the answer.
//
// Where write transactions run one at a time (SQLite), a batch of more
// than one slot reads its first slot's row alone (the probe), and when it
// has none skips the read of the others and goes to the transaction
// whole: a burst's first wave, whose slots are new, would read them all
// for nothing, on the CPU its claims' transactions wait for (a read of
// 256 held slots costs about 1.5 ms: BENCHMARKS.md §1, 5.8–6.3 µs per
// lost claim of a batch). A batch whose first slot has a row reads the
// others' rows next. The transaction decides every claim either way, a
// slot that has a row by the single claim's statements. Elsewhere
// (MySQL) the probe would be one more round trip for every held batch.
func (b *SQLBackend) preRead(ctx context.Context, todo []int, key func(i int) slotKey, answer func(i int, row heldRow) bool) ([]int, error) {
	var keys []slotKey
	seen := make(map[slotKey]bool, len(todo))
	for _, i := range todo {
		if k := key(i); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	var probed map[slotKey]heldRow
	if len(keys) > 1 && b.writesInTurn() {
		var err error
		if probed, err = b.readHeld(ctx, keys[:1]); err != nil {
			return nil, err
		}
		if len(probed) == 0 {
			return todo, nil
		}
		keys = keys[1:]
	}
	held, err := b.readHeld(ctx, keys)
	if err != nil {
		return nil, err
	}
	maps.Copy(held, probed)
	rest := todo[:0]
	for _, i := range todo {
		row, ok := held[key(i)]
		if !ok || !answer(i, row) {
			rest = append(rest, i)
		}
	}
	return rest, nil
}

// answerHeld answers the plain claims in[todo[…]] whose slots have a run
// row (ClaimBatch's doc): won only under the row's token. A slot settled
// by a pause goes to the transaction, which records it.
func (b *SQLBackend) answerHeld(ctx context.Context, in []anarchon.ClaimInput, todo []int, out []anarchon.ClaimAnswer) ([]int, error) {
	return b.preRead(ctx, todo, func(i int) slotKey { return slotKey{in[i].Job, in[i].Slot} }, func(i int, row heldRow) bool {
		if row.token == anarchon.PausedToken(in[i].Slot) {
			return false
		}
		out[i] = anarchon.ClaimAnswer{Won: row.token == in[i].Token}
		return true
	})
}

// answerHeldRuns answers the lease claims in[todo[…]] whose slots' rows
// decide them without a write (ClaimRuns's doc): readOnlyOutcome, as
// claimRun answers them, at the server's clock of the read. A run its own
// token holds is renewed, in the transaction.
func (b *SQLBackend) answerHeldRuns(ctx context.Context, in []anarchon.RunClaim, todo []int, out []anarchon.RunClaimAnswer) ([]int, error) {
	return b.preRead(ctx, todo, func(i int) slotKey { return slotKey{in[i].Job, in[i].Slot} }, func(i int, row heldRow) bool {
		var o anarchon.ClaimOutcome
		if (row.state == anarchon.RunStateRunning && row.token == in[i].Token) || !readOnlyOutcome(row.runRow, row.now, &o) {
			return false
		}
		out[i] = anarchon.RunClaimAnswer{Outcome: o}
		return true
	})
}

// ClaimRuns implements [anarchon.RunBatchClaimer]: every lease claim of in
// is decided by RunStore.Claim's own transaction body (with Routines, its
// routine), all in one transaction. A claim's bad input, and a slot
// refused as early (which writes nothing), are that claim's Err, and the
// others are decided. Any other error rolls the whole batch back and is
// returned for all of it.
//
// The claims run grouped by job, in the batch's order within a job (SPEC
// §6's table applied to each in turn): jobs are locked in the order of
// their names, so that two batches never deadlock.
//
// Without a batch routine (SQLite, MySQL), one read outside the
// transaction first answers every claim whose slot's row decides it
// without a write, as RunStore.Claim would at that moment: a settled slot
// (done, missed, skipped, paused) and one another token holds with a live
// lease or a plain claim, judged by the server's clock read with the
// rows. The read is the claim's moment. The losing claims of a burst's
// later waves (SPEC §4, "Waves") then cost one SELECT per batch beside
// the writers, not the job's lock and three statements each under the
// database's write lock. Every other claim goes to the transaction. On
// SQLite a batch whose first slot has no row skips the read (preRead).
//
// Where write transactions run one at a time (SQLite), the transaction
// first wins together the claims that are their job's only one in it
// (the winning claims of a burst, each on its own job): one INSERT of
// their new slots with the single claim's checks (leaseClaims) and one
// UPDATE of their jobs' fences (takeFences), two statements per 500
// claims instead of five each (sqlitefile's TestBurstBatchRoundTrips
// counts 5 for 100 claims of 100 jobs); every claim those
// do not win is decided alone, as before.
func (s *RunStore) ClaimRuns(ctx context.Context, in []anarchon.RunClaim) ([]anarchon.RunClaimAnswer, error) {
	b := s.b()
	out := make([]anarchon.RunClaimAnswer, len(in))
	if len(in) == 0 {
		return out, nil
	}
	todo, err := batchTodo(ctx, b, "lease claim batch", in, checkRunClaim, func(i int, err error) { out[i].Err = b.errorf("lease claim", err) })
	if err != nil {
		return nil, err
	}
	if todo == nil { // every claim refused
		return out, nil
	}
	slices.SortStableFunc(todo, func(i, k int) int { return cmp.Compare(in[i].Job, in[k].Job) })
	if b.rt.ClaimRuns != "" && jsonSafe(in, todo, func(c anarchon.RunClaim) anarchon.ClaimInput { return c.ClaimInput }) {
		if err := b.claimRunsRoutine(ctx, in, todo, out); err != nil {
			return nil, b.errorf("lease claim batch", err)
		}
		return out, nil
	}
	if b.rt.ClaimRuns == "" {
		if todo, err = b.answerHeldRuns(ctx, in, todo, out); err != nil {
			return nil, b.errorf("lease claim batch", err)
		}
		if len(todo) == 0 {
			return out, nil
		}
	}
	err = b.cfg.Conn.Transaction(ctx, func(tx Querier) error {
		var won map[int]anarchon.ClaimOutcome
		if b.writesInTurn() && !b.d.NoReturning {
			var err error
			if won, err = b.claimNewRuns(ctx, tx, in, todo); err != nil {
				return err
			}
		}
		for _, i := range todo {
			out[i] = anarchon.RunClaimAnswer{}
			if o, ok := won[i]; ok {
				out[i].Outcome = o
				continue
			}
			var o anarchon.ClaimOutcome
			var err error
			if b.rt.Claim != "" {
				o, err = b.claimRoutine(ctx, tx, in[i])
			} else {
				o, err = b.claimRun(ctx, tx, in[i])
			}
			if err != nil {
				if isEarly(err) {
					out[i].Err = b.errorf("lease claim", err)
					continue
				}
				return err
			}
			out[i].Outcome = o
		}
		return nil
	})
	if err != nil {
		return nil, b.errorf("lease claim batch", err)
	}
	return out, nil
}

// claimNewRuns wins together, in tx, the lease claims in[todo…] that are
// their job's only claim in todo, with leaseClaims (heldChunk claims per
// statement) and takeFences, and returns their outcomes by index. It runs
// only where write transactions run one at a time (SQLite's BEGIN
// IMMEDIATE holds the database's write lock), so that nothing changes
// between its statements and the single claims after them; each job's
// claim is decided alone by claimRun otherwise, as is every claim it does
// not win (a row is there, the job has no row yet, or a check refuses it),
// and the claims of other jobs do not depend on these.
func (b *SQLBackend) claimNewRuns(ctx context.Context, tx Querier, in []anarchon.RunClaim, todo []int) (map[int]anarchon.ClaimOutcome, error) {
	alone, _ := loneJobs(todo, func(i int) string { return in[i].Job })
	won := make(map[int]anarchon.ClaimOutcome, len(alone))
	for chunk := range slices.Chunk(alone, heldChunk) {
		of := make(map[slotKey]int, len(chunk)) // the claims by slot: one per job
		for _, i := range chunk {
			of[slotKey{in[i].Job, in[i].Slot}] = i
		}
		q, args := b.unionKeys(b.q.leaseClaims, b.q.leaseClaimKey, len(chunk), func(n int) []any {
			c := in[chunk[n]]
			overlap := 0
			if c.AllowOverlap {
				overlap = 1
			}
			return []any{n, c.Job, c.Slot, c.Token, c.InstanceID, max(c.Lease.Milliseconds(), 1),
				max(c.MaxLate.Milliseconds(), 0), overlap, max(c.Limit, 1)}
		})
		args = append(args, anarchon.EarlyTolerance.Milliseconds())
		rows, err := b.all(ctx, tx, q, args...)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			continue
		}
		names := make([]string, 0, len(rows))
		for _, row := range rows {
			rd := reader(row)
			k := slotKey{rd.string(), rd.int64()}
			until := rd.int64()
			if err := rd.Err(); err != nil {
				return nil, err
			}
			i, ok := of[k]
			if !ok {
				return nil, fmt.Errorf("lease claim batch inserted %s slot %d, which it did not claim", quoteJob(k.job), k.slot)
			}
			won[i] = anarchon.ClaimOutcome{Kind: anarchon.OutcomeWon, Attempt: 1, Holder: in[i].InstanceID, LeaseUntil: time.UnixMilli(until).UTC()}
			names = append(names, k.job)
		}
		q, args = b.unionKeys(b.q.takeFences, b.q.jobKey, len(names), func(n int) []any { return []any{names[n]} })
		rows, err = b.all(ctx, tx, q, args...)
		if err != nil {
			return nil, err
		}
		fences := make(map[string]int64, len(rows))
		for _, row := range rows {
			rd := reader(row)
			job, fence := rd.string(), rd.int64()
			if err := rd.Err(); err != nil {
				return nil, err
			}
			fences[job] = fence
		}
		for _, i := range chunk {
			if o, ok := won[i]; ok {
				f, ok := fences[in[i].Job]
				if !ok || f <= 0 {
					return nil, fmt.Errorf("job %s: no fence after its won claim", quoteJob(in[i].Job))
				}
				o.Fence = uint64(f)
				won[i] = o
			}
		}
	}
	return won, nil
}

// writesInTurn reports whether the database's write transactions run one
// at a time, so that nothing another instance writes can come between two
// statements of one: no row locks (ForUpdate) and no lock statement
// (Serialize) to serialise claims, as on SQLite, whose BEGIN IMMEDIATE
// takes the database's write lock.
func (b *SQLBackend) writesInTurn() bool { return b.d.ForUpdate == "" && b.q.serialize == "" }

// batchTodo readies the backend for a batch (op names it in errors),
// checks each claim of in, records a refused claim's error with fail, and
// returns the indexes of the claims to decide, after the backend's Guard
// passed. ClaimBatch and ClaimRuns share it.
func batchTodo[C any](ctx context.Context, b *SQLBackend, op string, in []C, check func(C) error, fail func(i int, err error)) ([]int, error) {
	if err := b.ready(ctx, op); err != nil {
		return nil, err
	}
	var todo []int
	for i, c := range in {
		if err := check(c); err != nil {
			fail(i, err)
			continue
		}
		todo = append(todo, i)
	}
	if len(todo) == 0 {
		return nil, nil
	}
	if g := b.cfg.Guard; g != nil {
		if err := g(ctx); err != nil {
			return nil, err
		}
	}
	return todo, nil
}

func isEarly(err error) bool {
	var ee *anarchon.EarlyError
	return errors.As(err, &ee)
}

// jsonSafe reports whether the claims in[todo] survive a JSON encoding
// unchanged: encoding/json replaces bytes that are not UTF-8, which would
// claim another job's slot. A batch with such a name takes the
// transaction instead (where the database refuses it as it refuses the
// single claim).
func jsonSafe[C any](in []C, todo []int, base func(C) anarchon.ClaimInput) bool {
	for _, i := range todo {
		c := base(in[i])
		if !utf8.ValidString(c.Job) || !utf8.ValidString(c.Token) || !utf8.ValidString(c.InstanceID) {
			return false
		}
	}
	return true
}

type batchClaim struct {
	Job      string `json:"j"`
	Slot     int64  `json:"s"`
	Token    string `json:"t"`
	Instance string `json:"i"`
	// Lease claims only. Every field is sent, false and null included: a
	// missing "o" would read as NULL, which PL/pgSQL's IF takes as false.
	Lease       int64  `json:"l"`
	MaxLate     *int64 `json:"m"`
	Overlap     bool   `json:"o"`
	Limit       int64  `json:"n"` // the overlap limit, >= 1 (RunClaim.Limit)
	MaxAttempts int64  `json:"a"`
}

// claimBatchRoutine decides in[todo] with one call of Routines.ClaimBatch
// and stores the answers in out.
func (b *SQLBackend) claimBatchRoutine(ctx context.Context, in []anarchon.ClaimInput, todo []int, out []anarchon.ClaimAnswer) error {
	arg := make([]batchClaim, len(todo))
	for k, i := range todo {
		c := in[i]
		arg[k] = batchClaim{Job: c.Job, Slot: c.Slot, Token: c.Token, Instance: c.InstanceID}
	}
	data, err := json.Marshal(arg)
	if err != nil {
		return err
	}
	rows, err := b.all(ctx, b.cfg.Conn, b.rt.ClaimBatch, string(data))
	if err != nil {
		return err
	}
	if len(rows) != len(todo) {
		return fmt.Errorf("claim batch routine returned %d rows for %d claims", len(rows), len(todo))
	}
	for _, row := range rows {
		rd := reader(row)
		idx := rd.int64()
		kind := rd.string()
		now, _ := rd.nullInt64()
		if err := rd.Err(); err != nil {
			return err
		}
		if idx < 1 || idx > int64(len(todo)) {
			return fmt.Errorf("claim batch routine returned index %d of %d", idx, len(todo))
		}
		i := todo[idx-1]
		switch kind {
		case "won":
			out[i] = anarchon.ClaimAnswer{Won: true}
		case "early":
			out[i] = anarchon.ClaimAnswer{Err: &anarchon.EarlyError{Job: in[i].Job, Slot: in[i].Slot, StoreNow: now}}
		default:
			out[i] = anarchon.ClaimAnswer{}
		}
	}
	return nil
}

// claimRunsRoutine decides in[todo] with one call of Routines.ClaimRuns
// and stores the answers in out.
func (b *SQLBackend) claimRunsRoutine(ctx context.Context, in []anarchon.RunClaim, todo []int, out []anarchon.RunClaimAnswer) error {
	arg := make([]batchClaim, len(todo))
	for k, i := range todo {
		c := in[i]
		arg[k] = batchClaim{
			Job: c.Job, Slot: c.Slot, Token: c.Token, Instance: c.InstanceID,
			Lease: max(c.Lease.Milliseconds(), 1), Overlap: c.AllowOverlap, Limit: int64(max(c.Limit, 1)), MaxAttempts: int64(max(c.MaxAttempts, 1)),
		}
		if c.MaxLate > 0 {
			ml := c.MaxLate.Milliseconds()
			arg[k].MaxLate = &ml
		}
	}
	data, err := json.Marshal(arg)
	if err != nil {
		return err
	}
	rows, err := b.all(ctx, b.cfg.Conn, b.rt.ClaimRuns, string(data))
	if err != nil {
		return err
	}
	if len(rows) != len(todo) {
		return fmt.Errorf("lease claim batch routine returned %d rows for %d claims", len(rows), len(todo))
	}
	for _, row := range rows {
		if len(row) != 6 && len(row) != 7 {
			return fmt.Errorf("lease claim batch routine returned %d columns", len(row))
		}
		rd := reader(row[:1])
		idx := rd.int64()
		if err := rd.Err(); err != nil {
			return err
		}
		if idx < 1 || idx > int64(len(todo)) {
			return fmt.Errorf("lease claim batch routine returned index %d of %d", idx, len(todo))
		}
		i := todo[idx-1]
		o, err := routineOutcome(in[i], row[1:])
		if err != nil {
			out[i] = anarchon.RunClaimAnswer{Err: b.errorf("lease claim", err)}
			continue
		}
		out[i] = anarchon.RunClaimAnswer{Outcome: o}
	}
	return nil
}
