-- A stored function of pgbackend, created by Init if absent (routines.go).
-- {claim} is the qualified, versioned name of the lease claim function.
-- A change of the body below takes a new routineVersion.
--
-- claim_runs decides a batch of lease claims (SPEC §6) in one call:
-- p_claims is a JSON array of {"j": job, "s": slot, "t": token, "i":
-- instance, "l": lease ms, "m": max-late ms or null, "o": allow overlap,
-- "n": the overlap limit, "a": max attempts}, in the order to decide them, and each is decided by
-- the lease claim function itself, so a claim in a batch answers as one
-- alone. One row per claim: its 1-based index and the claim function's
-- row.
--
-- The claims are read from p_claims into typed columns in one pass
-- (jsonb_to_recordset) wherever a statement needs them, not field by field
-- per claim. One read first takes the run rows of every slot of the batch. A claim
-- whose slot's row is another token's live lease, a plain claim, or a
-- settled slot (done, missed, skipped, paused) is answered from that row
-- as the claim function would answer it, without taking the job's lock
-- or the row's: such an answer writes nothing, and the read is the
-- claim's moment. This is most claims of a burst (the losing ones of the
-- instances that did not win, SPEC §4 "Waves"), which then cost no row
-- locks. Every other claim (no row, its own token, an expired or
-- released lease) writes, under its job's lock: the rows of those jobs
-- are locked next, in one statement, in the order Go sorts the claims
-- (job by bytes), so that two batches never wait for each other in a
-- cycle; the jobs are looked up by key (IN, not = ANY of the array, which
-- the planner reads as a scan of every job, matched against the array).
--
-- A claim of a new slot (no row at the read) that is its job's only claim
-- in the batch, of a job that has a row, is then decided with
-- the others like it in one INSERT and one UPDATE of the fences, when it
-- is won as the claim function would win it: the slot is above the
-- watermark, not ahead of the server's clock, the job is not paused, the
-- slot is not past its max-late, and the overlap limit leaves room (the
-- job's live runs are counted through the index runs_live). This
-- is the winning claim of a burst; it costs no function call and no
-- statement of its own. Every claim this does not win (a conflict, or one
-- of those checks) goes, like every other claim that writes, to the
-- claim function, in the batch's order, which decides it under the
-- locks.
CREATE OR REPLACE FUNCTION {claim_runs}(p_claims jsonb, p_channel text)
RETURNS TABLE (o_idx integer, o_kind text, o_attempt bigint, o_holder text, o_until bigint, o_status text, o_fence bigint)
LANGUAGE plpgsql VOLATILE AS $anarchon$
DECLARE
	v_now bigint := {now};
	v_c record;
	v jsonb;
	v_todo integer[] := '{}';  -- the claims that write, in the batch's order
	v_jobs text[] := '{}';     -- their jobs
	v_set boolean[];           -- by claim: a new slot the set may win
	v_any boolean := false;    -- v_set holds one
	v_won boolean[];           -- by claim: won by the set
BEGIN
	v_set := array_fill(false, ARRAY[coalesce(jsonb_array_length(p_claims), 0)]);
	v_won := v_set;
	FOR v_c IN
		SELECT x.ord::integer AS ord, x.j, x.t, count(*) OVER (PARTITION BY x.j) AS per_job,
			r.token, r.instance, r.attempt, r.state, r.status, r.lease_until
		FROM ROWS FROM (jsonb_to_recordset(p_claims) AS (j text, s bigint, t text)) WITH ORDINALITY AS x(j, s, t, ord)
		LEFT JOIN {runs} AS r ON r.job = x.j AND r.slot = x.s
		ORDER BY x.ord
	LOOP
		o_idx := v_c.ord;
		o_holder := '';
		o_status := '';
		o_fence := 0;
		o_attempt := NULL;
		o_until := NULL;
		IF v_c.state = 'done' THEN
			o_kind := 'done';
			o_attempt := v_c.attempt;
			o_status := v_c.status;
		ELSIF v_c.state IN ('missed', 'skipped', 'paused') THEN
			o_kind := 'none';
			o_status := v_c.status;
		ELSIF v_c.state = 'running' AND v_c.token <> v_c.t
				AND (v_c.lease_until IS NULL OR v_c.lease_until > v_now) THEN
			o_kind := 'running';
			o_attempt := v_c.attempt;
			o_holder := v_c.instance;
			o_until := v_c.lease_until;
		ELSE
			v_todo := v_todo || v_c.ord;
			v_jobs := v_jobs || v_c.j;
			IF v_c.state IS NULL AND v_c.per_job = 1 THEN
				v_set[v_c.ord] := true;
				v_any := true;
			END IF;
			CONTINUE;
		END IF;
		RETURN NEXT;
	END LOOP;
	IF cardinality(v_todo) = 0 THEN
		RETURN;
	END IF;
	PERFORM 1 FROM {jobs} WHERE job IN (SELECT unnest(v_jobs)) ORDER BY job COLLATE "C" FOR UPDATE;
	IF v_any THEN
		v_now := {now};
		FOR v_c IN
			WITH c AS (
				SELECT x.* FROM ROWS FROM (jsonb_to_recordset(p_claims) AS (j text, s bigint, t text, i text, l bigint, m bigint, o boolean, n bigint))
					WITH ORDINALITY AS x(job, slot, token, inst, lease, max_late, overlap, lim, ord)
				WHERE v_set[x.ord]
			), ins AS (
				INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
				SELECT c.job, c.slot, c.token, c.inst, 1, 'running', '', v_now + c.lease, v_now
				FROM c JOIN {jobs} AS w ON w.job = c.job
				WHERE (w.watermark IS NULL OR c.slot > w.watermark)
				AND c.slot <= v_now + {early}
				AND NOT EXISTS (SELECT 1 FROM {control} AS k WHERE k.job = c.job AND k.paused = 1)
				AND (c.max_late IS NULL OR v_now <= c.slot + c.max_late)
				AND (c.overlap OR (SELECT count(*) FROM (SELECT 1 FROM {runs} AS r WHERE r.job = c.job AND r.slot <> c.slot
					AND r.state = 'running' AND r.lease_until IS NOT NULL AND r.lease_until > v_now LIMIT c.lim) AS o) < c.lim)
				ORDER BY c.job COLLATE "C"
				ON CONFLICT (job, slot) DO NOTHING
				RETURNING job, instance, lease_until
			)
			UPDATE {jobs} AS w SET fence = w.fence + 1 FROM ins JOIN c ON c.job = ins.job WHERE w.job = ins.job
			RETURNING c.ord, w.fence, ins.instance, ins.lease_until
		LOOP
			o_idx := v_c.ord;
			o_kind := 'won';
			o_attempt := 1;
			o_holder := v_c.instance;
			o_until := v_c.lease_until;
			o_status := '';
			o_fence := v_c.fence;
			v_won[o_idx] := true;
			RETURN NEXT;
		END LOOP;
	END IF;
	FOREACH o_idx IN ARRAY v_todo LOOP
		CONTINUE WHEN v_won[o_idx];
		v := p_claims -> (o_idx - 1);
		SELECT * INTO v_c FROM {claim}(v ->> 'j', (v ->> 's')::bigint, v ->> 't', v ->> 'i',
			(v ->> 'l')::bigint, (v ->> 'm')::bigint, (v ->> 'o')::boolean, (v ->> 'n')::bigint,
			(v ->> 'a')::bigint, p_channel);
		o_kind := v_c.o_kind;
		o_attempt := v_c.o_attempt;
		o_holder := v_c.o_holder;
		o_until := v_c.o_until;
		o_status := v_c.o_status;
		o_fence := v_c.o_fence;
		RETURN NEXT;
	END LOOP;
END
$anarchon$
