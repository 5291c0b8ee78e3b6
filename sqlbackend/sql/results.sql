-- Statements of package sqlbackend, read by queries.go. Each begins with a
-- "-- name: <name>" line; other comment lines are dropped. {jobs}, {runs}
-- and {results} are the qualified table names, {big} the dialect's 64-bit
-- integer type, {now} its clock in Unix ms, {fu} its row-lock suffix;
-- the other {…} pieces come from the dialect too (queries.go). Values are
-- always bound to `?` placeholders.

-- Stored results and history trimming.

-- name: upsertResult
-- A result takes its claim time from the run row its token still
-- holds, or keeps the one stored before (a record the store wrote
-- at a takeover, a manual run's). One token is one attempt, so
-- the stored attempt never goes down.
-- Each assignment reads only its own column of the existing row, as
-- MySQL assigns left to right and later ones would see earlier ones.
INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
VALUES (?, ?, ?, ?, ?, ?, (SELECT claimed_at FROM {runs} WHERE job = ? AND slot = ? AND token = ?), ?, ?, ?, ?, ?, {now})
{upsert job, token} slot = {new slot}, instance = {new instance},
	attempt = CASE WHEN {new attempt} > {results}.attempt THEN {new attempt} ELSE {results}.attempt END,
	status = {new status}, claimed_at = COALESCE({new claimed_at}, {results}.claimed_at),
	started_at = {new started_at}, finished_at = {new finished_at}, error = {new error},
	output = {new output}, manual = {new manual}, saved_at = {new saved_at}

-- name: finishPlain
UPDATE {runs} SET state = 'done', status = ?
WHERE job = ? AND slot = ? AND token = ? AND state = 'running' AND lease_until IS NULL

-- name: trimResults
-- Trimming: two bounds per table, the historySize-th newest slot
-- (older slots go; a NULL bound when there are fewer rows keeps
-- everything) and, with a TTL (the last two arguments, ms; 0 means
-- none), rows saved or claimed before the server's now minus it.
-- Equal slots at the cutoff are all kept: a few extra records at
-- most. The cutoff's subquery reads a derived table (cut), which MySQL
-- materialises, as it refuses a DELETE whose subquery reads its table.
DELETE FROM {results} WHERE job = ? AND (
	slot < (SELECT cut.slot FROM (SELECT slot FROM {results} WHERE job = ? ORDER BY slot DESC LIMIT 1 OFFSET ?) AS cut)
	OR (CAST(? AS {bcast}) > 0 AND saved_at < {now} - CAST(? AS {bcast})))

-- name: trimRuns
-- Only settled rows and plain claims go; leased runs still running
-- or released stay until they settle. trimRunsRead is the same WHERE,
-- for a dialect without RETURNING (SQLDialect.NoReturning).
DELETE FROM {runs} WHERE job = ? AND (
	slot < (SELECT cut.slot FROM (SELECT slot FROM {runs} WHERE job = ? ORDER BY slot DESC LIMIT 1 OFFSET ?) AS cut)
	OR (CAST(? AS {bcast}) > 0 AND claimed_at < {now} - CAST(? AS {bcast})))
AND (state IN ('done', 'missed', 'skipped') OR lease_until IS NULL)
RETURNING slot

-- name: trimRunsRead
SELECT slot FROM {runs} WHERE job = ? AND (
	slot < (SELECT cut.slot FROM (SELECT slot FROM {runs} WHERE job = ? ORDER BY slot DESC LIMIT 1 OFFSET ?) AS cut)
	OR (CAST(? AS {bcast}) > 0 AND claimed_at < {now} - CAST(? AS {bcast})))
AND (state IN ('done', 'missed', 'skipped') OR lease_until IS NULL){fu}
