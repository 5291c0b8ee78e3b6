-- A stored function of pgbackend, created by Init if absent (routines.go).
-- {jobs}, {runs}, {results} and {control} are the qualified tables, {now}
-- the clock in Unix ms, {early} anarchon.EarlyTolerance in ms.
-- A change of the body below takes a new routineVersion.
--
-- claim_batch decides a batch of plain claims (SPEC §4, batches) in one
-- call: p_claims is a JSON array of {"j": job, "s": slot, "t": token,
-- "i": instance}, in the order to decide them, and each is decided by the
-- statements of sqlbackend's plain claim (plainClaim, then selectToken
-- when it inserted nothing, and the paused record), so a claim in a batch
-- answers as one alone. One row per claim: its 1-based index, its kind
-- ("won", "lost", "early") and, for "early", the server's clock.
CREATE OR REPLACE FUNCTION {claim_batch}(p_claims jsonb)
RETURNS TABLE (o_idx integer, o_kind text, o_now bigint)
LANGUAGE plpgsql VOLATILE AS $anarchon$
DECLARE
	v_c jsonb;
	v_job text;
	v_slot bigint;
	v_token text;
	v_inst text;
	v_tok text;
	v_now bigint;
BEGIN
	FOR i IN 0 .. coalesce(jsonb_array_length(p_claims), 0) - 1 LOOP
		v_c := p_claims -> i;
		v_job := v_c ->> 'j';
		v_slot := (v_c ->> 's')::bigint;
		v_token := v_c ->> 't';
		v_inst := v_c ->> 'i';
		v_tok := NULL;
		o_idx := i + 1;
		o_now := NULL;
		INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
		SELECT v_job, v_slot,
			CASE WHEN p.paused = 1 THEN 'paused-' || v_slot ELSE v_token END,
			v_inst, 1,
			CASE WHEN p.paused = 1 THEN 'paused' ELSE 'running' END,
			CASE WHEN p.paused = 1 THEN 'paused' ELSE '' END, NULL, t.n
		FROM (SELECT {now} AS n) AS t,
			(SELECT COALESCE(MAX(paused), 0) AS paused FROM {control} WHERE job = v_job) AS p
		WHERE NOT EXISTS (SELECT 1 FROM {jobs} WHERE job = v_job AND watermark >= v_slot)
		AND v_slot <= t.n + {early}
		ON CONFLICT (job, slot) DO NOTHING
		RETURNING token INTO v_tok;
		IF v_tok IS NOT NULL AND v_tok = v_token THEN
			o_kind := 'won';
		ELSIF v_tok IS NOT NULL THEN
			-- the job is paused: the slot is settled; record it once
			INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
				SELECT v_job, v_tok, v_slot, v_inst, 1, 'paused', NULL, NULL, NULL,
					'job paused by ' || by_who || CASE WHEN reason <> '' THEN ': ' || reason ELSE '' END, '', 0, {now}
				FROM {control} WHERE job = v_job
				ON CONFLICT (job, token) DO NOTHING;
			o_kind := 'lost';
		ELSE
			SELECT r.token, t.n INTO v_tok, v_now FROM (SELECT {now} AS n) AS t
				LEFT JOIN {runs} AS r ON r.job = v_job AND r.slot = v_slot;
			IF v_tok IS NULL AND v_slot > v_now + {early} THEN
				o_kind := 'early';
				o_now := v_now;
			ELSIF v_tok IS NOT NULL AND v_tok = v_token THEN
				o_kind := 'won';
			ELSE
				o_kind := 'lost';
			END IF;
		END IF;
		RETURN NEXT;
	END LOOP;
END
$anarchon$
