-- Statements of package sqlbackend, read by queries.go. Each begins with a
-- "-- name: <name>" line; other comment lines are dropped. {jobs}, {runs}
-- and {results} are the qualified table names, {big} the dialect's 64-bit
-- integer type, {now} its clock in Unix ms, {fu} its row-lock suffix;
-- the other {…} pieces come from the dialect too (queries.go). Values are
-- always bound to `?` placeholders.

-- Plain claims (SPEC §4) and manual runs.

-- name: plainClaim
-- The plain claim: one statement. The WHERE keeps trimmed slots
-- closed, a paused job's slot is inserted settled under
-- anarchon.PausedToken (the third argument) in the same statement, so no
-- claim after the pause wins, and (the last line, "never early") a slot
-- later than the server's now plus anarchon.EarlyTolerance (the last
-- argument, ms) is refused; the key (ignore) makes exactly one insert
-- win. The one-row derived tables give the SELECT a FROM, which MySQL
-- needs for WHERE: t the server's clock, p the job's pause flag.
INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
SELECT CAST(? AS {tcast}), CAST(? AS {bcast}),
	CASE WHEN p.paused = 1 THEN CAST(? AS {tcast}) ELSE CAST(? AS {tcast}) END,
	CAST(? AS {tcast}), 1,
	CASE WHEN p.paused = 1 THEN 'paused' ELSE 'running' END,
	CASE WHEN p.paused = 1 THEN 'paused' ELSE '' END, NULL, t.n
FROM (SELECT {now} AS n) AS t,
	(SELECT COALESCE(MAX(paused), 0) AS paused FROM {control} WHERE job = ?) AS p
WHERE NOT EXISTS (SELECT 1 FROM {jobs} WHERE job = ? AND watermark >= ?)
AND CAST(? AS {bcast}) <= t.n + CAST(? AS {bcast})
{ignore job, slot}
RETURNING token

-- name: selectToken
-- Read after a plain claim's INSERT: the slot's token and instance, NULL
-- if there is no row (trimmed, or early), and the server's clock, in one
-- row, so that an early claim costs no third round trip.
SELECT r.token, r.instance, t.n FROM (SELECT {now} AS n) AS t
LEFT JOIN {runs} AS r ON r.job = ? AND r.slot = ?

-- name: heldSlots
-- A batch's read of the slots that already have a run row (the pre-read
-- of ClaimBatch and ClaimRuns), with the server's clock. {keys} is one
-- "SELECT CAST(? AS …) AS job, CAST(? AS …) AS slot" per slot, joined
-- with UNION ALL, which every SQL database reads. SQLite spends less on
-- it than on the same slots as a chain of "(job = ? AND slot = ?)" joined
-- with OR: 4.7–5.6 µs per lost claim of a batch of 256 against 5.6–7.0
-- (BENCHMARKS.md §1, BenchmarkClaimBatch). With SQLDialect.JSONKeys
-- (SQLite) {keys} is instead one SELECT of the same columns from
-- json_each of a JSON array of the slots (unionKeys, jsonKeys), here and
-- in plainClaims, leaseClaims and takeFences.
SELECT r.job, r.slot, r.token, r.instance, r.attempt, r.state, r.status, r.lease_until, {now}
FROM ({keys}) AS k JOIN {runs} AS r ON r.job = k.job AND r.slot = k.slot

-- name: plainClaims
-- The plain claims of a batch's new slots (ClaimBatch, a dialect with
-- RETURNING and no batch routine): plainClaim's INSERT for every slot of
-- {keys} at once, in the batch's order (ord), so that the first of two
-- claims of one slot decides it, as in turn. {keys} is one "SELECT
-- CAST(? AS …) AS ord, … AS job, … AS slot, … AS token, … AS inst, … AS
-- ptok" per claim (ptok: anarchon.PausedToken of the slot), joined with
-- UNION ALL; the last argument is anarchon.EarlyTolerance in ms. It
-- returns the rows it inserted: a claim whose slot is absent from them
-- goes to plainClaim and selectToken, which answer it as a single claim.
INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
SELECT k.job, k.slot,
	CASE WHEN k.paused = 1 THEN k.ptok ELSE k.token END,
	k.inst, 1,
	CASE WHEN k.paused = 1 THEN 'paused' ELSE 'running' END,
	CASE WHEN k.paused = 1 THEN 'paused' ELSE '' END, NULL, t.n
FROM (SELECT {now} AS n) AS t,
	(SELECT c.ord, c.job, c.slot, c.token, c.inst, c.ptok,
		(SELECT COALESCE(MAX(paused), 0) FROM {control} WHERE job = c.job) AS paused
	FROM ({keys}) AS c) AS k
WHERE NOT EXISTS (SELECT 1 FROM {jobs} WHERE job = k.job AND watermark >= k.slot)
AND k.slot <= t.n + CAST(? AS {bcast})
ORDER BY k.ord
{ignore job, slot}
RETURNING job, slot, token

-- name: insertManual
INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
VALUES (?, ?, ?, ?, 1, 'running', {now}, NULL, NULL, '', '', 1, {now}) {ignore job, token}

-- Job control (SPEC §12).

-- name: pausedResult
-- The history record of a slot settled by a pause, under
-- anarchon.PausedToken; its error (the fifth argument) names who paused
-- and why, read from the control row by the caller, since the databases
-- differ in how they join strings.
INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
VALUES (?, ?, ?, ?, 1, 'paused', NULL, NULL, NULL, ?, '', 0, {now})
{ignore job, token}

-- name: selectPaused
SELECT paused FROM {control} WHERE job = ? AND paused = 1

-- name: setPaused
-- setPaused's RETURNING is its last line; a dialect without RETURNING
-- reads the row with jobState in the same transaction.
INSERT INTO {control} (job, paused, by_who, reason, set_at) VALUES (?, ?, ?, ?, {now})
{upsert job} paused = {new paused}, by_who = {new by_who},
	reason = {new reason}, set_at = {new set_at}
RETURNING job, paused, by_who, reason, set_at

-- name: jobState
SELECT job, paused, by_who, reason, set_at FROM {control} WHERE job = ?

-- name: jobStates
SELECT job, paused, by_who, reason, set_at FROM {control} ORDER BY job

-- Triggers (SPEC §12).

-- name: requestTrigger
INSERT INTO {triggers} (job, tkey, by_who, requested_at, state, instance, token, slot, claimed_at, finished_at, status, error)
VALUES (?, ?, ?, {now}, 'pending', '', '', 0, NULL, NULL, '', '')
{ignore job, tkey}

-- name: selectTrigger
SELECT job, tkey, by_who, requested_at, state, instance, token, slot, claimed_at, finished_at, status, error
FROM {triggers} WHERE job = ? AND tkey = ?

-- name: pendingTriggers
SELECT job, tkey, by_who, requested_at, state, instance, token, slot, claimed_at, finished_at, status, error
FROM {triggers} WHERE state = 'pending' ORDER BY requested_at, job, tkey

-- name: claimTrigger
-- claimTriggerRead is the same WHERE, for a dialect without RETURNING
-- (SQLDialect.NoReturning).
UPDATE {triggers} SET state = 'running', token = ?, instance = ?, claimed_at = {now}
WHERE job = ? AND tkey = ? AND state = 'pending'
RETURNING token

-- name: claimTriggerRead
SELECT token FROM {triggers} WHERE job = ? AND tkey = ? AND state = 'pending'{fu}

-- name: cancelTrigger
UPDATE {triggers} SET state = 'done', status = 'canceled', error = ?, finished_at = {now}
WHERE job = ? AND tkey = ? AND state = 'pending'

-- name: finishTrigger
UPDATE {triggers} SET state = 'done', slot = ?, status = ?, error = ?, finished_at = {now}
WHERE job = ? AND tkey = ? AND token = ? AND state = 'running'
