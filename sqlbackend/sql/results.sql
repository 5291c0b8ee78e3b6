-- Statements of package sqlbackend, read by queries.go. Each begins with a
-- "-- name: <name>" line; other comment lines are dropped. {jobs}, {runs}
-- and {results} are the qualified table names, {big} the dialect's 64-bit
-- integer type, {now} its clock in Unix ms, {fu} its row-lock suffix.
-- Values are always bound to `?` placeholders.

-- Stored results and history trimming.

-- name: upsertResult
-- A result takes its claim time from the run row its token still
-- holds, or keeps the one stored before (a record the store wrote
-- at a takeover, a manual run's). One token is one attempt, so
-- the stored attempt never goes down.
INSERT INTO {results} AS r (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
VALUES (?, ?, ?, ?, ?, ?, (SELECT claimed_at FROM {runs} WHERE job = ? AND slot = ? AND token = ?), ?, ?, ?, ?, ?, {now})
ON CONFLICT (job, token) DO UPDATE SET slot = excluded.slot, instance = excluded.instance,
	attempt = CASE WHEN excluded.attempt > r.attempt THEN excluded.attempt ELSE r.attempt END,
	status = excluded.status, claimed_at = COALESCE(excluded.claimed_at, r.claimed_at),
	started_at = excluded.started_at, finished_at = excluded.finished_at, error = excluded.error,
	output = excluded.output, manual = excluded.manual, saved_at = excluded.saved_at

-- name: finishPlain
UPDATE {runs} SET state = 'done', status = ?
WHERE job = ? AND slot = ? AND token = ? AND state = 'running' AND lease_until IS NULL

-- name: trimResults
-- Trimming: two bounds per table, the historySize-th newest slot
-- (older slots go; a NULL bound when there are fewer rows keeps
-- everything) and, with a TTL (the last two arguments, ms; 0 means
-- none), rows saved or claimed before the server's now minus it.
-- Equal slots at the cutoff are all kept: a few extra records at
-- most.
DELETE FROM {results} WHERE job = ? AND (
	slot < (SELECT slot FROM {results} WHERE job = ? ORDER BY slot DESC LIMIT 1 OFFSET ?)
	OR (CAST(? AS {big}) > 0 AND saved_at < {now} - CAST(? AS {big})))

-- name: trimRuns
-- Only settled rows and plain claims go; leased runs still running
-- or released stay until they settle.
DELETE FROM {runs} WHERE job = ? AND (
	slot < (SELECT slot FROM {runs} WHERE job = ? ORDER BY slot DESC LIMIT 1 OFFSET ?)
	OR (CAST(? AS {big}) > 0 AND claimed_at < {now} - CAST(? AS {big})))
AND (state IN ('done', 'missed', 'skipped') OR lease_until IS NULL) RETURNING slot
