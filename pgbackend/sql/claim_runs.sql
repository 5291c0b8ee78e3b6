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
CREATE OR REPLACE FUNCTION {claim_runs}(p_claims jsonb, p_channel text)
RETURNS TABLE (o_idx integer, o_kind text, o_attempt bigint, o_holder text, o_until bigint, o_status text, o_fence bigint)
LANGUAGE plpgsql VOLATILE AS $anarchon$
DECLARE
	v_c jsonb;
	v record;
BEGIN
	FOR i IN 0 .. coalesce(jsonb_array_length(p_claims), 0) - 1 LOOP
		v_c := p_claims -> i;
		SELECT * INTO v FROM {claim}(v_c ->> 'j', (v_c ->> 's')::bigint, v_c ->> 't', v_c ->> 'i',
			(v_c ->> 'l')::bigint, (v_c ->> 'm')::bigint, (v_c ->> 'o')::boolean, (v_c ->> 'n')::bigint, (v_c ->> 'a')::bigint, p_channel);
		o_idx := i + 1;
		o_kind := v.o_kind;
		o_attempt := v.o_attempt;
		o_holder := v.o_holder;
		o_until := v.o_until;
		o_status := v.o_status;
		o_fence := v.o_fence;
		RETURN NEXT;
	END LOOP;
END
$anarchon$
