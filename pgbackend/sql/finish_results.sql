-- A stored function of pgbackend, created by Init if absent (routines.go).
-- {finish_result} is the qualified, versioned name of the function that
-- finishes one run with its result.
-- A change of the body below takes a new routineVersion.
--
-- finish_results finishes a batch of runs (SPEC §6) in one call:
-- p_results is the JSON array of save_results (this reads "j", "t", "s",
-- "i", "a", "st", "sa", "fa", "e", "o", "n" and "ttl"), in the order to
-- finish them, and each is finished by finish_result itself, so a run in
-- a batch is answered as one alone. One row per entry: its 1-based index
-- and finish_result's answer.
CREATE OR REPLACE FUNCTION {finish_results}(p_results jsonb, p_channel text)
RETURNS TABLE (o_idx integer, o_ok boolean)
LANGUAGE plpgsql VOLATILE AS $anarchon$
DECLARE
	v jsonb;
BEGIN
	FOR i IN 0 .. coalesce(jsonb_array_length(p_results), 0) - 1 LOOP
		v := p_results -> i;
		o_idx := i + 1;
		SELECT f.o_ok INTO o_ok FROM {finish_result}(v ->> 'j', (v ->> 's')::bigint, v ->> 't', v ->> 'i',
			(v ->> 'a')::bigint, v ->> 'st', (v ->> 'sa')::bigint, (v ->> 'fa')::bigint, v ->> 'e', v ->> 'o',
			(v ->> 'n')::bigint, (v ->> 'ttl')::bigint, p_channel) AS f;
		RETURN NEXT;
	END LOOP;
END
$anarchon$
