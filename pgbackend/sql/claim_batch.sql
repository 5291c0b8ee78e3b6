-- A stored function of pgbackend, created by Init if absent (routines.go).
-- {jobs}, {runs}, {results} and {control} are the qualified tables, {now}
-- the clock in Unix ms, {early} anarchon.EarlyTolerance in ms.
-- A change of the body below takes a new routineVersion.
--
-- claim_batch decides a batch of plain claims (SPEC §4, batches) in one
-- call: p_claims is a JSON array of {"j": job, "s": slot, "t": token,
-- "i": instance}, in the order to decide them. One row per claim: its
-- 1-based index, its kind ("won", "lost", "early") and, for "early", the
-- server's clock.
--
-- It takes two statements for the whole batch instead of two per claim,
-- and answers as sqlbackend's plain claim does for each claim alone:
--   1. One INSERT of every claim's run row, in the batch's order (the
--      order in which the rows are locked), where the job's watermark is
--      below the slot and the slot is not early; a paused job's row is
--      the settled paused record, written with its history record. ON
--      CONFLICT DO NOTHING skips a slot that has a row; when that row is
--      not yet committed, the INSERT waits for its transaction, as a
--      single claim's does. Two claims of one slot in a batch: the first
--      inserts, the second is skipped.
--   2. One SELECT, with a new snapshot (a VOLATILE function under READ
--      COMMITTED), that reads each slot's row: the claim's own token is
--      "won" (this call's insert, or a repeat of an earlier claim),
--      another token "lost", and no row "early" when the slot is past
--      the clock's tolerance, else "lost" (the slot is below the
--      watermark: settled and trimmed).
CREATE OR REPLACE FUNCTION {claim_batch}(p_claims jsonb)
RETURNS TABLE (o_idx integer, o_kind text, o_now bigint)
LANGUAGE plpgsql VOLATILE AS $anarchon$
DECLARE
	v_now bigint := {now};
BEGIN
	WITH c AS (
		SELECT x.ord, x.v ->> 'j' AS job, (x.v ->> 's')::bigint AS slot, x.v ->> 't' AS token, x.v ->> 'i' AS inst
		FROM jsonb_array_elements(p_claims) WITH ORDINALITY AS x(v, ord)
	), ins AS (
		INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
		SELECT c.job, c.slot,
			CASE WHEN p.paused = 1 THEN 'paused-' || c.slot ELSE c.token END,
			c.inst, 1,
			CASE WHEN p.paused = 1 THEN 'paused' ELSE 'running' END,
			CASE WHEN p.paused = 1 THEN 'paused' ELSE '' END, NULL, v_now
		FROM c CROSS JOIN LATERAL (SELECT COALESCE(MAX(k.paused), 0) AS paused FROM {control} AS k WHERE k.job = c.job) AS p
		WHERE c.slot <= v_now + {early}
		AND NOT EXISTS (SELECT 1 FROM {jobs} AS w WHERE w.job = c.job AND w.watermark >= c.slot)
		ORDER BY c.ord
		ON CONFLICT (job, slot) DO NOTHING
		RETURNING job, slot, token, instance
	)
	-- the job is paused: the slot is settled; record it once
	INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
		SELECT i.job, i.token, i.slot, i.instance, 1, 'paused', NULL, NULL, NULL,
			'job paused by ' || k.by_who || CASE WHEN k.reason <> '' THEN ': ' || k.reason ELSE '' END, '', 0, v_now
		FROM ins AS i JOIN {control} AS k ON k.job = i.job AND k.paused = 1
		WHERE i.token = 'paused-' || i.slot
		ON CONFLICT (job, token) DO NOTHING;
	v_now := {now};
	RETURN QUERY
		SELECT x.ord::integer,
			CASE WHEN r.token IS NOT NULL AND r.token = x.v ->> 't' THEN 'won'
				WHEN r.token IS NULL AND (x.v ->> 's')::bigint > v_now + {early} THEN 'early'
				ELSE 'lost' END,
			CASE WHEN r.token IS NULL AND (x.v ->> 's')::bigint > v_now + {early} THEN v_now END
		FROM jsonb_array_elements(p_claims) WITH ORDINALITY AS x(v, ord)
		LEFT JOIN {runs} AS r ON r.job = x.v ->> 'j' AND r.slot = (x.v ->> 's')::bigint
		ORDER BY x.ord;
END
$anarchon$
