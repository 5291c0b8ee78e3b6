-- A stored function of pgbackend, created by Init if absent (routines.go).
-- {jobs}, {runs} and {results} are the qualified tables, {now} the clock in
-- Unix ms, {lock_job}, {claim}, … the qualified, versioned function names.
-- A change of the body below takes a new routineVersion.
--
-- release ends the token's running lease at once and notifies.
CREATE OR REPLACE FUNCTION {release}(p_job text, p_slot bigint, p_token text, p_channel text, OUT o_ok boolean)
LANGUAGE plpgsql VOLATILE AS $anarchon$
BEGIN
	UPDATE {runs} SET state = 'released', lease_until = {now}
		WHERE job = p_job AND slot = p_slot AND token = p_token AND state = 'running' AND lease_until IS NOT NULL;
	o_ok := FOUND;
	IF o_ok AND p_channel IS NOT NULL THEN
		PERFORM pg_notify(p_channel, '{released} ' || p_slot || ' ' || p_job);
	END IF;
END
$anarchon$
