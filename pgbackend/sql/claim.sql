-- A stored function of pgbackend, created by Init if absent (routines.go).
-- {jobs}, {runs} and {results} are the qualified tables, {now} the clock in
-- Unix ms, {lock_job}, {claim}, … the qualified, versioned function names.
-- A change of the body below takes a new routineVersion.
--
-- claim decides SPEC §6's table, first match wins. Each win takes the
-- job's next fencing token (o_fence; SPEC §6, "Fencing") from the fence
-- column of the job row {lock_job} locked; other answers give 0.
CREATE OR REPLACE FUNCTION {claim}(p_job text, p_slot bigint, p_token text, p_instance text,
	p_lease bigint, p_max_late bigint, p_overlap boolean, p_limit bigint, p_max_attempts bigint, p_channel text,
	OUT o_kind text, OUT o_attempt bigint, OUT o_holder text, OUT o_until bigint, OUT o_status text, OUT o_fence bigint)
LANGUAGE plpgsql VOLATILE AS $anarchon$
DECLARE
	v_wm bigint;
	v_now bigint;
	v_run record;
BEGIN
	v_wm := {lock_job}(p_job);
	v_now := {now};
	o_holder := '';
	o_status := '';
	o_fence := 0;
	SELECT token, instance, attempt, state, status, lease_until, claimed_at INTO v_run
		FROM {runs} WHERE job = p_job AND slot = p_slot FOR UPDATE;
	IF NOT FOUND THEN
		IF v_wm IS NOT NULL AND p_slot <= v_wm THEN
			o_kind := 'done';
		ELSIF p_slot > v_now + {early} THEN
			-- never early: a slot ahead of the server's clock is refused
			o_kind := 'early';
			o_until := v_now;
		ELSIF EXISTS (SELECT 1 FROM {control} WHERE job = p_job AND paused = 1) THEN
			-- paused (SPEC §12): settled under anarchon.PausedToken, recorded once
			INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
				VALUES (p_job, p_slot, 'paused-' || p_slot, p_instance, 1, 'paused', 'paused', NULL, v_now);
			INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
				SELECT p_job, 'paused-' || p_slot, p_slot, p_instance, 1, 'paused', NULL, NULL, NULL,
					'job paused by ' || by_who || CASE WHEN reason <> '' THEN ': ' || reason ELSE '' END, '', 0, v_now
				FROM {control} WHERE job = p_job
				ON CONFLICT (job, token) DO NOTHING;
			o_kind := 'paused';
		ELSIF p_max_late IS NOT NULL AND v_now > p_slot + p_max_late THEN
			INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
				VALUES (p_job, p_slot, p_token, p_instance, 1, 'missed', 'missed', NULL, v_now);
			o_kind := 'late';
		ELSIF NOT p_overlap AND (SELECT count(*) FROM (SELECT 1 FROM {runs} WHERE job = p_job AND slot <> p_slot
				AND state = 'running' AND lease_until IS NOT NULL AND lease_until > v_now LIMIT p_limit) AS o) >= p_limit THEN
			-- p_limit (>= 1) other live runs refuse the slot (the overlap limit)
			INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
				VALUES (p_job, p_slot, p_token, p_instance, 1, 'skipped', 'skipped', NULL, v_now);
			o_kind := 'overlap';
		ELSE
			INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
				VALUES (p_job, p_slot, p_token, p_instance, 1, 'running', '', v_now + p_lease, v_now);
			o_kind := 'won';
			o_attempt := 1;
			o_holder := p_instance;
			o_until := v_now + p_lease;
			UPDATE {jobs} SET fence = fence + 1 WHERE job = p_job RETURNING fence INTO o_fence;
		END IF;
		RETURN;
	END IF;
	IF v_run.state = 'running' AND v_run.token = p_token THEN
		UPDATE {runs} SET lease_until = v_now + p_lease WHERE job = p_job AND slot = p_slot;
		o_kind := 'won';
		o_attempt := v_run.attempt;
		o_holder := v_run.instance;
		o_until := v_now + p_lease;
		UPDATE {jobs} SET fence = fence + 1 WHERE job = p_job RETURNING fence INTO o_fence;
	ELSIF v_run.state = 'done' THEN
		o_kind := 'done';
		o_attempt := v_run.attempt;
		o_status := v_run.status;
	ELSIF v_run.state IN ('missed', 'skipped', 'paused') THEN
		o_kind := 'none';
		o_status := v_run.status;
	ELSIF v_run.state = 'running' AND (v_run.lease_until IS NULL OR v_run.lease_until > v_now) THEN
		-- a plain claim (no lease) never expires
		o_kind := 'running';
		o_attempt := v_run.attempt;
		o_holder := v_run.instance;
		o_until := v_run.lease_until;
	ELSIF v_run.state IN ('running', 'released') THEN
		-- the previous holder's attempt ends: its record, unless it saved one
		INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
			VALUES (p_job, v_run.token, p_slot, v_run.instance, v_run.attempt,
				CASE WHEN v_run.state = 'released' THEN 'handed_over' ELSE 'lease_lost' END,
				v_run.claimed_at, NULL, NULL, '', '', 0, v_now)
			ON CONFLICT (job, token) DO NOTHING;
		IF v_run.attempt >= p_max_attempts THEN
			UPDATE {runs} SET token = 'abandoned-' || p_slot, instance = p_instance, state = 'done',
				status = 'abandoned', lease_until = NULL
				WHERE job = p_job AND slot = p_slot;
			INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
				VALUES (p_job, 'abandoned-' || p_slot, p_slot, p_instance, v_run.attempt, 'abandoned',
					NULL, NULL, NULL, '', '', 0, v_now)
				ON CONFLICT (job, token) DO NOTHING;
			IF p_channel IS NOT NULL THEN
				PERFORM pg_notify(p_channel, '{finished} ' || p_slot || ' ' || p_job);
			END IF;
			o_kind := 'done';
			o_attempt := v_run.attempt;
			o_status := 'abandoned';
		ELSE
			UPDATE {runs} SET token = p_token, instance = p_instance, attempt = v_run.attempt + 1,
				state = 'running', status = '', lease_until = v_now + p_lease, claimed_at = v_now
				WHERE job = p_job AND slot = p_slot;
			o_kind := 'won';
			o_attempt := v_run.attempt + 1;
			o_holder := p_instance;
			o_until := v_now + p_lease;
			UPDATE {jobs} SET fence = fence + 1 WHERE job = p_job RETURNING fence INTO o_fence;
		END IF;
	ELSE
		-- a state written by a newer version: settled
		o_kind := 'done';
		o_status := v_run.status;
	END IF;
END
$anarchon$
