-- A stored function of pgbackend, created by Init if absent (routines.go).
-- {save_result} is the qualified, versioned name of the result function.
-- A change of the body below takes a new routineVersion.
--
-- save_results saves a batch of results (SPEC §4, batches) in one call:
-- p_results is a JSON array of save_result's arguments ({"j": job, "t":
-- token, "s": slot, "i": instance, "a": attempt, "st": status, "c": claim
-- token, "sa", "fa": started and finished ms or null, "e": error, "o":
-- output, "m": manual, "p": plain, "n": history size, "ttl": history TTL
-- ms}), in the order to save them, and each is saved by save_result
-- itself, so a result in a batch is stored as one alone. It returns the
-- number of results saved.
CREATE OR REPLACE FUNCTION {save_results}(p_results jsonb, OUT o_n integer)
LANGUAGE plpgsql VOLATILE AS $anarchon$
DECLARE
	v jsonb;
BEGIN
	o_n := 0;
	FOR i IN 0 .. coalesce(jsonb_array_length(p_results), 0) - 1 LOOP
		v := p_results -> i;
		PERFORM {save_result}(v ->> 'j', v ->> 't', (v ->> 's')::bigint, v ->> 'i', (v ->> 'a')::bigint,
			v ->> 'st', v ->> 'c', (v ->> 'sa')::bigint, (v ->> 'fa')::bigint, v ->> 'e', v ->> 'o',
			(v ->> 'm')::bigint, (v ->> 'p')::boolean, (v ->> 'n')::bigint, (v ->> 'ttl')::bigint);
		o_n := o_n + 1;
	END LOOP;
END
$anarchon$
