-- A stored function of pgbackend, created by Init if absent (routines.go).
-- {jobs}, {runs} and {results} are the qualified tables, {now} the clock in
-- Unix ms, {lock_job}, {claim}, … the qualified, versioned function names.
-- A change of the body below takes a new routineVersion.
--
-- save_result: SaveResult's transaction in one call. The job's lock
-- first (as a claim takes it), then the result (its claim time from the
-- run row of p_claim_token), a plain claim's run row marked done
-- (p_plain), and trimming (trim_history).
CREATE OR REPLACE FUNCTION {save_result}(p_job text, p_token text, p_slot bigint, p_instance text,
	p_attempt bigint, p_status text, p_claim_token text, p_started bigint, p_finished bigint,
	p_error text, p_output text, p_manual bigint, p_plain boolean, p_size bigint, p_ttl bigint, OUT o_ok boolean)
LANGUAGE plpgsql VOLATILE AS $anarchon$
BEGIN
	PERFORM {lock_job}(p_job);
	INSERT INTO {results} AS r (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
		VALUES (p_job, p_token, p_slot, p_instance, p_attempt, p_status,
			(SELECT c.claimed_at FROM {runs} c WHERE c.job = p_job AND c.slot = p_slot AND c.token = p_claim_token),
			p_started, p_finished, p_error, p_output, p_manual, {now})
		ON CONFLICT (job, token) DO UPDATE SET slot = excluded.slot, instance = excluded.instance,
			attempt = GREATEST(excluded.attempt, r.attempt), status = excluded.status,
			claimed_at = COALESCE(excluded.claimed_at, r.claimed_at), started_at = excluded.started_at,
			finished_at = excluded.finished_at, error = excluded.error, output = excluded.output,
			manual = excluded.manual, saved_at = excluded.saved_at;
	IF p_plain THEN
		UPDATE {runs} SET state = 'done', status = p_status
			WHERE job = p_job AND slot = p_slot AND token = p_token AND state = 'running' AND lease_until IS NULL;
	END IF;
	PERFORM {trim_history}(p_job, p_size, p_ttl);
	o_ok := true;
END
$anarchon$
