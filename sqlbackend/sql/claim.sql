-- Statements of package sqlbackend, read by queries.go. Each begins with a
-- "-- name: <name>" line; other comment lines are dropped. {jobs}, {runs}
-- and {results} are the qualified table names, {big} the dialect's 64-bit
-- integer type, {now} its clock in Unix ms, {fu} its row-lock suffix.
-- Values are always bound to `?` placeholders.

-- Plain claims (SPEC §4) and manual runs.

-- name: plainClaim
-- The plain claim: one statement. The WHERE keeps trimmed slots
-- closed, a paused job's slot is inserted settled under
-- anarchon.PausedToken (the third argument) in the same statement, so no
-- claim after the pause wins, and (the last line, "never early") a slot
-- later than the server's now plus anarchon.EarlyTolerance (the last
-- argument, ms) is refused; ON CONFLICT makes exactly one insert win.
INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
SELECT CAST(? AS TEXT), CAST(? AS {big}),
	CASE WHEN p.paused = 1 THEN CAST(? AS TEXT) ELSE CAST(? AS TEXT) END,
	CAST(? AS TEXT), 1,
	CASE WHEN p.paused = 1 THEN 'paused' ELSE 'running' END,
	CASE WHEN p.paused = 1 THEN 'paused' ELSE '' END, NULL, {now}
FROM (SELECT COALESCE(MAX(paused), 0) AS paused FROM {control} WHERE job = ?) AS p
WHERE NOT EXISTS (SELECT 1 FROM {jobs} WHERE job = ? AND watermark >= ?)
AND CAST(? AS {big}) <= {now} + CAST(? AS {big})
ON CONFLICT (job, slot) DO NOTHING RETURNING token

-- name: selectToken
SELECT token FROM {runs} WHERE job = ? AND slot = ?

-- name: insertManual
INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
VALUES (?, ?, ?, ?, 1, 'running', {now}, NULL, NULL, '', '', 1, {now}) ON CONFLICT (job, token) DO NOTHING

-- Job control (SPEC §12).

-- name: pausedResult
-- The history record of a slot settled by a pause, under
-- anarchon.PausedToken, naming who paused and why.
INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
SELECT job, ?, ?, ?, 1, 'paused', NULL, NULL, NULL,
	'job paused by ' || by_who || CASE WHEN reason <> '' THEN ': ' || reason ELSE '' END, '', 0, {now}
FROM {control} WHERE job = ?
ON CONFLICT (job, token) DO NOTHING

-- name: selectPaused
SELECT paused FROM {control} WHERE job = ? AND paused = 1

-- name: setPaused
INSERT INTO {control} (job, paused, by_who, reason, set_at) VALUES (?, ?, ?, ?, {now})
ON CONFLICT (job) DO UPDATE SET paused = excluded.paused, by_who = excluded.by_who,
	reason = excluded.reason, set_at = excluded.set_at
RETURNING job, paused, by_who, reason, set_at

-- name: jobState
SELECT job, paused, by_who, reason, set_at FROM {control} WHERE job = ?

-- name: jobStates
SELECT job, paused, by_who, reason, set_at FROM {control} ORDER BY job

-- Triggers (SPEC §12).

-- name: requestTrigger
INSERT INTO {triggers} (job, tkey, by_who, requested_at, state, instance, token, slot, claimed_at, finished_at, status, error)
VALUES (?, ?, ?, {now}, 'pending', '', '', 0, NULL, NULL, '', '')
ON CONFLICT (job, tkey) DO NOTHING

-- name: selectTrigger
SELECT job, tkey, by_who, requested_at, state, instance, token, slot, claimed_at, finished_at, status, error
FROM {triggers} WHERE job = ? AND tkey = ?

-- name: pendingTriggers
SELECT job, tkey, by_who, requested_at, state, instance, token, slot, claimed_at, finished_at, status, error
FROM {triggers} WHERE state = 'pending' ORDER BY requested_at, job, tkey

-- name: claimTrigger
UPDATE {triggers} SET state = 'running', token = ?, instance = ?, claimed_at = {now}
WHERE job = ? AND tkey = ? AND state = 'pending' RETURNING token

-- name: finishTrigger
UPDATE {triggers} SET state = 'done', slot = ?, status = ?, error = ?, finished_at = {now}
WHERE job = ? AND tkey = ? AND token = ? AND state = 'running'
