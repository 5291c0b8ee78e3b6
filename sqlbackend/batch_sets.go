package sqlbackend

import (
	"context"
	"slices"

	"github.com/anarchon/anarchon"
)

// setsWrite reports whether the results and finishes of a batch whose
// jobs are each alone in it are written one step at a time for all of
// them (writeSets), each step one statement per heldChunk entries: where
// write transactions run one at a time (SQLite's BEGIN IMMEDIATE holds the
// database's write lock), so that nothing another instance writes comes
// between a job's steps, which the single call's job lock keeps out
// elsewhere, and with RETURNING, which tells the finished runs and the
// trimmed slots.
func (b *SQLBackend) setsWrite() bool { return b.writesInTurn() && !b.d.NoReturning }

// loneJobs parts todo into the entries whose job no other entry of todo
// has (job(i) is entry i's) and the others, keeping todo's order in both:
// the entries a batch writes together (writeSets; claimNewRuns's lease
// claims).
func loneJobs(todo []int, job func(i int) string) (lone, rest []int) {
	count := make(map[string]int, len(todo))
	for _, i := range todo {
		count[job(i)]++
	}
	for _, i := range todo {
		if count[job(i)] == 1 {
			lone = append(lone, i)
		} else {
			rest = append(rest, i)
		}
	}
	return lone, rest
}

// writeSets stores, in tx, the results srs[todo…], each its job's only
// one in the batch, with the single call's steps taken for all of them
// at once: the jobs' rows made sure of (insertJobs, lockJob's insert),
// with finish (out not nil: FinishResults) the runs finished
// (finishRuns, finish) and out's answers set, then the results stored
// (upsertResults), plain claims' runs settled (finishPlains, SaveResults
// only), and the history trimmed with the watermarks raised over the
// deleted runs (trimSets). A burst's batch of results or finishes, its
// jobs of one history size and without a TTL, is then 5 statements per
// chunk where the single calls' are 5 per entry (sqlitefile's
// TestBurstBatchRoundTrips and TestBatchBeyondOneChunk count them).
func (b *SQLBackend) writeSets(ctx context.Context, tx Querier, srs []saved, todo []int, out []anarchon.HeldAnswer) error {
	for chunk := range slices.Chunk(todo, heldChunk) {
		q, args := b.unionKeys(b.q.insertJobs, b.q.jobKey, len(chunk), func(n int) []any { return []any{srs[chunk[n]].job} })
		if _, err := b.all(ctx, tx, q, args...); err != nil {
			return err
		}
		recs := make([]saved, len(chunk))
		for n, i := range chunk {
			recs[n] = srs[i]
		}
		if out != nil {
			if err := b.finishSets(ctx, tx, recs, chunk, out); err != nil {
				return err
			}
		}
		row := func(n int) []any {
			sr := recs[n]
			r := sr.r
			plain := int64(0)
			if out == nil && sr.plain() {
				plain = 1
			}
			return []any{sr.job, r.Token, r.Slot, r.InstanceID, int64(r.Attempt), string(r.Status), sr.claimToken(),
				msOrNil(r.StartedAt), msOrNil(r.FinishedAt), anarchon.EscapeText(r.Error), anarchon.EscapeText(r.Output), sr.manual(), plain}
		}
		q, args = b.unionKeys(b.q.upsertResults, b.q.resultKey, len(recs), row)
		if _, err := b.all(ctx, tx, q, args...); err != nil {
			return err
		}
		if out == nil && slices.ContainsFunc(recs, saved.plain) {
			q, args = b.unionKeys(b.q.finishPlains, b.q.resultKey, len(recs), row)
			if _, err := b.all(ctx, tx, q, args...); err != nil {
				return err
			}
		}
		if err := b.trimSets(ctx, tx, recs); err != nil {
			return err
		}
	}
	return nil
}

// finishSets finishes the runs of recs (entries chunk of the batch) with
// one finishRuns, sets each entry's answer in out, notifies the watchers
// of every run it finished, and gives every other entry's record the
// status anarchon.StatusLeaseLost, as finishResult does.
func (b *SQLBackend) finishSets(ctx context.Context, tx Querier, recs []saved, chunk []int, out []anarchon.HeldAnswer) error {
	q, args := b.unionKeys(b.q.finishRuns, b.q.finishKey, len(recs), func(n int) []any {
		r := recs[n].r
		return []any{recs[n].job, r.Slot, r.Token, string(r.Status)}
	})
	rows, err := b.all(ctx, tx, q, args...)
	if err != nil {
		return err
	}
	finished := make(map[string]bool, len(rows))
	for _, row := range rows {
		rd := reader(row)
		job := rd.string()
		if err := rd.Err(); err != nil {
			return err
		}
		finished[job] = true
	}
	for n, i := range chunk {
		sr := &recs[n]
		out[i] = anarchon.HeldAnswer{Held: finished[sr.job]}
		if !finished[sr.job] {
			sr.r.Status = anarchon.StatusLeaseLost
			continue
		}
		if err := b.notify(ctx, tx, sr.job, sr.r.Slot, anarchon.RunFinished); err != nil {
			return err
		}
	}
	return nil
}

// trimSets trims the history of the jobs of recs, each to its entry's
// size and TTL, as trim does for one, and raises each job's watermark
// over its deleted runs. Each table is trimmed in turn, results then
// runs: first the cutoffs, one statement for the jobs of each history
// size (a burst's jobs mostly share one), then the TTLs, one statement
// for the jobs that have one.
func (b *SQLBackend) trimSets(ctx context.Context, tx Querier, recs []saved) error {
	bySize := make(map[int64][]string)
	var sizes []int64
	var aged []saved
	for _, sr := range recs {
		if _, ok := bySize[sr.size]; !ok {
			sizes = append(sizes, sr.size)
		}
		bySize[sr.size] = append(bySize[sr.size], sr.job)
		if sr.ttlMs > 0 {
			aged = append(aged, sr)
		}
	}
	agedRow := func(n int) []any { return []any{aged[n].job, aged[n].ttlMs} }
	var deleted [][]any // (job, slot) of the runs deleted
	for _, table := range []struct{ of, aged string }{{b.q.trimResultsOf, b.q.trimResultsAged}, {b.q.trimRunsOf, b.q.trimRunsAged}} {
		runs := table.of == b.q.trimRunsOf
		for _, size := range sizes {
			jobs := bySize[size]
			q, args := b.unionKeys(table.of, b.q.jobKey, len(jobs), func(n int) []any { return []any{jobs[n]} })
			rows, err := b.all(ctx, tx, q, append(args, size-1)...)
			if err != nil {
				return err
			}
			if runs {
				deleted = append(deleted, rows...)
			}
		}
		if len(aged) > 0 {
			q, args := b.unionKeys(table.aged, b.q.agedKey, len(aged), agedRow)
			rows, err := b.all(ctx, tx, q, args...)
			if err != nil {
				return err
			}
			if runs {
				deleted = append(deleted, rows...)
			}
		}
	}
	if len(deleted) == 0 {
		return nil
	}
	top := make(map[string]int64, len(deleted))
	var jobs []string
	for _, row := range deleted {
		rd := reader(row)
		job, slot := rd.string(), rd.int64()
		if err := rd.Err(); err != nil {
			return err
		}
		if t, ok := top[job]; !ok {
			jobs = append(jobs, job)
			top[job] = slot
		} else if slot > t {
			top[job] = slot
		}
	}
	q, args := b.unionKeys(b.q.raiseWatermarks, b.q.watermarkKey, len(jobs), func(n int) []any { return []any{jobs[n], top[jobs[n]]} })
	_, err := b.all(ctx, tx, q, args...)
	return err
}
