-- A stored function of pgbackend, created by Init if absent (routines.go).
-- {jobs}, {runs} and {results} are the qualified tables, {now} the clock in
-- Unix ms, {lock_job}, {claim}, … the qualified, versioned function names.
-- A change of the body below takes a new routineVersion.
--
-- finish marks the run done with a status if the token holds it, and
-- notifies.
CREATE OR REPLACE FUNCTION {finish}(p_job text, p_slot bigint, p_token text, p_status text, p_channel text, OUT o_ok boolean)
LANGUAGE plpgsql VOLATILE AS $anarchon$
BEGIN
	UPDATE {runs} SET state = 'done', status = p_status, lease_until = NULL
		WHERE job = p_job AND slot = p_slot AND token = p_token
		AND (state IN ('running', 'released') OR (state = 'done' AND status = p_status));
	o_ok := FOUND;
	IF o_ok AND p_channel IS NOT NULL THEN
		PERFORM pg_notify(p_channel, '{finished} ' || p_slot || ' ' || p_job);
	END IF;
END
$anarchon$
