-- Statements of package sqlbackend, read by queries.go. Each begins with a
-- "-- name: <name>" line; other comment lines are dropped. {jobs}, {runs}
-- and {results} are the qualified table names, {big} the dialect's 64-bit
-- integer type, {now} its clock in Unix ms, {fu} its row-lock suffix;
-- the other {…} pieces come from the dialect too (queries.go). Values are
-- always bound to `?` placeholders.

-- Plain claims (SPEC §4) and manual runs.

-- name: plainClaim
-- The plain claim: one statement. The WHERE keeps trimmed slots
-- closed and (the last line, "never early") refuses a slot later than
-- the server's now plus anarchon.EarlyTolerance (the last argument, ms);
-- the key (ignore) makes exactly one insert win. The one-row derived
-- table t gives the SELECT a FROM, which MySQL needs for WHERE.
INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
SELECT CAST(? AS {tcast}), CAST(? AS {bcast}), CAST(? AS {tcast}), CAST(? AS {tcast}), 1, 'running', '', NULL, t.n
FROM (SELECT {now} AS n) AS t
WHERE NOT EXISTS (SELECT 1 FROM {jobs} WHERE job = ? AND watermark >= ?)
AND CAST(? AS {bcast}) <= t.n + CAST(? AS {bcast})
{ignore job, slot}
RETURNING token

-- name: selectToken
SELECT token FROM {runs} WHERE job = ? AND slot = ?

-- name: insertManual
INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
VALUES (?, ?, ?, ?, 1, 'running', {now}, NULL, NULL, '', '', 1, {now}) {ignore job, token}
