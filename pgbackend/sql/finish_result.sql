-- A stored function of pgbackend, created by Init if absent (routines.go).
-- {jobs}, {runs} and {results} are the qualified tables, {now} the clock in
-- Unix ms, {lock_job}, {claim}, … the qualified, versioned function names.
-- A change of the body below takes a new routineVersion.
--
-- finish_result: the job's lock first (as a claim takes it), then
-- Finish, the result, and trimming (trim_history).
CREATE OR REPLACE FUNCTION {finish_result}(p_job text, p_slot bigint, p_token text, p_instance text,
	p_attempt bigint, p_status text, p_started bigint, p_finished bigint, p_error text, p_output text,
	p_size bigint, p_ttl bigint, p_channel text, OUT o_ok boolean)
LANGUAGE plpgsql VOLATILE AS $anarchon$
DECLARE
	v_status text := p_status;
BEGIN
	PERFORM {lock_job}(p_job);
	UPDATE {runs} SET state = 'done', status = p_status, lease_until = NULL
		WHERE job = p_job AND slot = p_slot AND token = p_token
		AND (state IN ('running', 'released') OR (state = 'done' AND status = p_status));
	o_ok := FOUND;
	IF NOT o_ok THEN
		v_status := 'lease_lost';
	ELSIF p_channel IS NOT NULL THEN
		PERFORM pg_notify(p_channel, '{finished} ' || p_slot || ' ' || p_job);
	END IF;
	INSERT INTO {results} AS r (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
		VALUES (p_job, p_token, p_slot, p_instance, p_attempt, v_status,
			(SELECT c.claimed_at FROM {runs} c WHERE c.job = p_job AND c.slot = p_slot AND c.token = p_token),
			p_started, p_finished, p_error, p_output, 0, {now})
		ON CONFLICT (job, token) DO UPDATE SET slot = excluded.slot, instance = excluded.instance,
			attempt = GREATEST(excluded.attempt, r.attempt), status = excluded.status,
			claimed_at = COALESCE(excluded.claimed_at, r.claimed_at), started_at = excluded.started_at,
			finished_at = excluded.finished_at, error = excluded.error, output = excluded.output,
			manual = excluded.manual, saved_at = excluded.saved_at;
	PERFORM {trim_history}(p_job, p_size, p_ttl);
END
$anarchon$
