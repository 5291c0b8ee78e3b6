-- Statements of package sqlbackend, read by queries.go. Each begins with a
-- "-- name: <name>" line; other comment lines are dropped. {jobs}, {runs}
-- and {results} are the qualified table names, {big} the dialect's 64-bit
-- integer type, {now} its clock in Unix ms, {fu} its row-lock suffix;
-- the other {…} pieces come from the dialect too (queries.go). Values are
-- always bound to `?` placeholders.

-- Leases (SPEC §6): the run rows of lease claims, heartbeats, finishes and releases.

-- name: selectRun
SELECT token, instance, attempt, state, status, lease_until, claimed_at FROM {runs} WHERE job = ? AND slot = ?{fu}

-- name: insertRun
INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?)

-- name: renewRun
UPDATE {runs} SET lease_until = ? WHERE job = ? AND slot = ?

-- name: takeOverRun
UPDATE {runs} SET token = ?, instance = ?, attempt = ?, state = 'running', status = '', lease_until = ?, claimed_at = ? WHERE job = ? AND slot = ?

-- name: abandonRun
-- An abandoned run row takes anarchon.AbandonedToken and the
-- instance that settled it, like the history record of the
-- abandonment; the last holder's token no longer holds it.
UPDATE {runs} SET token = ?, instance = ?, state = 'done', status = 'abandoned', lease_until = NULL WHERE job = ? AND slot = ?

-- name: insertStoreResult
-- The store's own history records, written by a lease claim: the
-- previous holder's at a takeover or abandonment, and the
-- abandonment itself. A result saved for the token wins.
INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, '', '', 0, {now}) {ignore job, token}

-- name: earlierRuns
-- The runs an overlap replace settles: running or released, on a slot
-- before the replacing one.
SELECT slot, token, instance, attempt, state, lease_until, claimed_at FROM {runs}
WHERE job = ? AND slot < ? AND state IN ('running', 'released') AND lease_until IS NOT NULL ORDER BY slot{fu}

-- name: replaceRun
UPDATE {runs} SET state = 'done', status = 'replaced', lease_until = NULL WHERE job = ? AND slot = ?

-- name: leaseClaims
-- The lease claims of a batch that can be won together (ClaimRuns on a
-- database whose write transactions run one at a time, SQLite): each
-- claim of {keys} is its job's only claim to write in the batch, and its
-- new slot is inserted running when the job's row exists and the single
-- claim would win it: above the watermark, not early (the last argument,
-- anarchon.EarlyTolerance in ms), the job not paused, not past its
-- max-late (maxlate, ms; 0: none), and fewer than lim other live runs
-- unless overlap is 1. {keys} is one "SELECT CAST(? AS …) AS ord, … AS
-- job, … AS slot, … AS token, … AS inst, … AS lease, … AS maxlate, … AS
-- overlap, … AS lim" per claim, joined with UNION ALL. It returns the
-- rows it inserted; every other claim is decided alone.
INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
SELECT k.job, k.slot, k.token, k.inst, 1, 'running', '', t.n + k.lease, t.n
FROM (SELECT {now} AS n) AS t, ({keys}) AS k, {jobs} AS w
WHERE w.job = k.job AND w.fence >= 0
AND (w.watermark IS NULL OR k.slot > w.watermark)
AND k.slot <= t.n + CAST(? AS {bcast})
AND NOT EXISTS (SELECT 1 FROM {control} AS p WHERE p.job = k.job AND p.paused = 1)
AND (k.maxlate <= 0 OR t.n <= k.slot + k.maxlate)
AND (k.overlap = 1 OR (SELECT COUNT(*) FROM {runs} AS r WHERE r.job = k.job AND r.slot <> k.slot
	AND r.state = 'running' AND r.lease_until IS NOT NULL AND r.lease_until > t.n) < k.lim)
ORDER BY k.ord
{ignore job, slot}
RETURNING job, slot, lease_until

-- name: takeFences
-- The fencing tokens of the jobs whose slots leaseClaims won, one each;
-- {keys} is one "SELECT CAST(? AS …) AS job" per job, joined with UNION
-- ALL (or their JSON form, as heldSlots's).
UPDATE {jobs} SET fence = fence + 1 WHERE job IN ({keys})
RETURNING job, fence

-- name: liveOtherRun
-- Up to the overlap limit's number of other live runs: the claim is refused
-- when it finds that many.
SELECT slot FROM {runs} WHERE job = ? AND slot <> ? AND state = 'running'
AND lease_until IS NOT NULL AND lease_until > ? LIMIT ?

-- The statements that return the rows they change (heartbeat, finish,
-- release) each have a *Read twin: a locking SELECT of the same WHERE,
-- run before them by a dialect without RETURNING (NoReturning).

-- name: heartbeat
UPDATE {runs} SET lease_until = {now} + ?
WHERE job = ? AND slot = ? AND token = ? AND state = 'running' AND lease_until IS NOT NULL
RETURNING lease_until

-- name: heartbeatRead
SELECT lease_until FROM {runs}
WHERE job = ? AND slot = ? AND token = ? AND state = 'running' AND lease_until IS NOT NULL{fu}

-- name: finish
UPDATE {runs} SET state = 'done', status = ?, lease_until = NULL
WHERE job = ? AND slot = ? AND token = ? AND (state IN ('running', 'released') OR (state = 'done' AND status = ?))
RETURNING attempt

-- name: finishRead
SELECT attempt FROM {runs}
WHERE job = ? AND slot = ? AND token = ? AND (state IN ('running', 'released') OR (state = 'done' AND status = ?)){fu}

-- name: release
UPDATE {runs} SET state = 'released', lease_until = {now}
WHERE job = ? AND slot = ? AND token = ? AND state = 'running' AND lease_until IS NOT NULL
RETURNING attempt

-- name: releaseRead
SELECT attempt FROM {runs}
WHERE job = ? AND slot = ? AND token = ? AND state = 'running' AND lease_until IS NOT NULL{fu}

-- name: active
SELECT slot, token, instance, attempt, state, lease_until, {now} FROM {runs}
WHERE job = ? AND state IN ('running', 'released') AND lease_until IS NOT NULL ORDER BY slot

-- name: finishRuns
-- finish for every run of {keys} ("SELECT CAST(? AS …) AS job, … AS
-- slot, … AS token, … AS status" per run, each its job's only one), as
-- FinishResults writes a batch where write transactions run one at a
-- time (results.sql, upsertResults). It returns the job of every run it
-- finished.
UPDATE {runs} AS r SET state = 'done', status = k.status, lease_until = NULL
FROM ({keys}) AS k
WHERE r.job = k.job AND r.slot = k.slot AND r.token = k.token
AND (r.state IN ('running', 'released') OR (r.state = 'done' AND r.status = k.status))
RETURNING job
