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
-- One read first takes the run rows of every slot of the batch. A claim
-- whose slot's row is another token's live lease, a plain claim, or a
-- settled slot (done, missed, skipped, paused) is answered from that row
-- as the claim function would answer it, without taking the job's lock
-- or the row's: such an answer writes nothing, and the read is the
-- claim's moment. This is most claims of a burst (the losing ones of the
-- instances that did not win, SPEC §4 "Waves"), which then cost no row
-- locks. Every other claim (no row, its own token, an expired or
-- released lease) goes to the claim function, which decides under the
-- locks.
CREATE OR REPLACE FUNCTION {claim_runs}(p_claims jsonb, p_channel text)
RETURNS TABLE (o_idx integer, o_kind text, o_attempt bigint, o_holder text, o_until bigint, o_status text, o_fence bigint)
LANGUAGE plpgsql VOLATILE AS $anarchon$
DECLARE
	v_now bigint := {now};
	v_c record;
	v record;
BEGIN
	FOR v_c IN
		SELECT x.ord, x.v, r.token, r.instance, r.attempt, r.state, r.status, r.lease_until
		FROM jsonb_array_elements(p_claims) WITH ORDINALITY AS x(v, ord)
		LEFT JOIN {runs} AS r ON r.job = x.v ->> 'j' AND r.slot = (x.v ->> 's')::bigint
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
		ELSIF v_c.state = 'running' AND v_c.token <> (v_c.v ->> 't')
				AND (v_c.lease_until IS NULL OR v_c.lease_until > v_now) THEN
			o_kind := 'running';
			o_attempt := v_c.attempt;
			o_holder := v_c.instance;
			o_until := v_c.lease_until;
		ELSE
			SELECT * INTO v FROM {claim}(v_c.v ->> 'j', (v_c.v ->> 's')::bigint, v_c.v ->> 't', v_c.v ->> 'i',
				(v_c.v ->> 'l')::bigint, (v_c.v ->> 'm')::bigint, (v_c.v ->> 'o')::boolean, (v_c.v ->> 'n')::bigint,
				(v_c.v ->> 'a')::bigint, p_channel);
			o_kind := v.o_kind;
			o_attempt := v.o_attempt;
			o_holder := v.o_holder;
			o_until := v.o_until;
			o_status := v.o_status;
			o_fence := v.o_fence;
		END IF;
		RETURN NEXT;
	END LOOP;
END
$anarchon$
