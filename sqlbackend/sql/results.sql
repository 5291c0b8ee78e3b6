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

-- The statements below write a batch of results (SaveResults,
-- FinishResults) one step at a time for every entry of {keys}, on a
-- database whose write transactions run one at a time (SQLite) and so
-- need no job lock between the steps. Each entry of {keys} is its job's
-- only one in the batch, so that the steps of one job run in the order
-- of the single call's (upsertResult, finishPlain, trimResults,
-- trimRuns, raiseWatermark).

-- name: insertJobs
-- insertJob for every job of {keys} ("SELECT CAST(? AS …) AS job" per
-- job); SQLite needs the WHERE to read ON CONFLICT as the upsert's.
INSERT INTO {jobs} (job, watermark, created_at)
SELECT k.job, NULL, {now} FROM ({keys}) AS k WHERE 1 = 1 {ignore job}

-- name: upsertResults
-- upsertResult for every result of {keys}: one "SELECT CAST(? AS …) AS
-- job, … AS token, … AS slot, … AS inst, … AS attempt, … AS status, …
-- AS ctok, … AS started, … AS finished, … AS err, … AS output, … AS
-- manual, … AS plain" per result (ctok: the token whose run row holds
-- the claim time; plain: 1 when finishPlains settles its run row). The
-- assignments are upsertResult's.
INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
SELECT k.job, k.token, k.slot, k.inst, k.attempt, k.status,
	(SELECT r.claimed_at FROM {runs} AS r WHERE r.job = k.job AND r.slot = k.slot AND r.token = k.ctok),
	k.started, k.finished, k.err, k.output, k.manual, {now}
FROM ({keys}) AS k WHERE 1 = 1
{upsert job, token} slot = {new slot}, instance = {new instance},
	attempt = CASE WHEN {new attempt} > {results}.attempt THEN {new attempt} ELSE {results}.attempt END,
	status = {new status}, claimed_at = COALESCE({new claimed_at}, {results}.claimed_at),
	started_at = {new started_at}, finished_at = {new finished_at}, error = {new error},
	output = {new output}, manual = {new manual}, saved_at = {new saved_at}

-- name: finishPlains
-- finishPlain for every result of upsertResults's {keys} whose plain is 1.
UPDATE {runs} AS r SET state = 'done', status = k.status
FROM ({keys}) AS k
WHERE r.job = k.job AND r.slot = k.slot AND r.token = k.token AND k.plain = 1
AND r.state = 'running' AND r.lease_until IS NULL

-- name: trimResultsOf
-- trimResults's cutoff for every job of {keys} ("SELECT CAST(? AS …) AS
-- job" per job) whose history size is the last argument's plus one:
-- each job's rows below the slot that many rows below its newest go.
-- The cutoff, read once per job, bounds the range of the job's slots
-- the statement deletes, and each job is read through its index
-- (job, slot) alone.
DELETE FROM {results} WHERE (job, token) IN (
	SELECT r.job, r.token FROM ({keys}) AS k JOIN {results} AS r ON r.job = k.job
	AND r.slot < (SELECT c.slot FROM {results} AS c WHERE c.job = k.job ORDER BY c.slot DESC LIMIT 1 OFFSET ?))

-- name: trimResultsAged
-- trimResults's TTL for every job of {keys} ("SELECT CAST(? AS …) AS
-- job, … AS ttl" per job, ttl > 0 in ms), after trimResultsOf, whose
-- cutoff counts the rows this one deletes, as trimResults's does.
DELETE FROM {results} WHERE (job, token) IN (
	SELECT r.job, r.token FROM ({keys}) AS k JOIN {results} AS r ON r.job = k.job
	WHERE r.saved_at < {now} - k.ttl)

-- name: trimRunsOf
-- trimRuns's cutoff for every job of {keys}, as trimResultsOf; it
-- returns the job and slot of every row it deletes, for
-- raiseWatermarks.
DELETE FROM {runs} WHERE (job, slot) IN (
	SELECT r.job, r.slot FROM ({keys}) AS k JOIN {runs} AS r ON r.job = k.job
	AND r.slot < (SELECT c.slot FROM {runs} AS c WHERE c.job = k.job ORDER BY c.slot DESC LIMIT 1 OFFSET ?)
	WHERE r.state IN ('done', 'missed', 'skipped') OR r.lease_until IS NULL)
RETURNING job, slot

-- name: trimRunsAged
-- trimRuns's TTL for every job of {keys}, as trimResultsAged, after
-- trimRunsOf; it returns what it deletes, as trimRunsOf.
DELETE FROM {runs} WHERE (job, slot) IN (
	SELECT r.job, r.slot FROM ({keys}) AS k JOIN {runs} AS r ON r.job = k.job
	WHERE r.claimed_at < {now} - k.ttl
	AND (r.state IN ('done', 'missed', 'skipped') OR r.lease_until IS NULL))
RETURNING job, slot

-- name: raiseWatermarks
-- raiseWatermark for every job of {keys} ("SELECT CAST(? AS …) AS job,
-- … AS top" per job).
UPDATE {jobs} AS w SET watermark = k.top
FROM ({keys}) AS k
WHERE w.job = k.job AND (w.watermark IS NULL OR w.watermark < k.top)
