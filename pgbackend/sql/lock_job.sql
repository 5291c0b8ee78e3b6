-- A stored function of pgbackend, created by Init if absent (routines.go).
-- {jobs}, {runs} and {results} are the qualified tables, {now} the clock in
-- Unix ms, {lock_job}, {claim}, … the qualified, versioned function names.
-- A change of the body below takes a new routineVersion.
--
-- lock_job locks the job's row, creating it if absent, and returns its
-- watermark (NULL if none).
CREATE OR REPLACE FUNCTION {lock_job}(p_job text, OUT o_wm bigint)
LANGUAGE plpgsql VOLATILE AS $anarchon$
BEGIN
	SELECT watermark INTO o_wm FROM {jobs} WHERE job = p_job FOR UPDATE;
	IF NOT FOUND THEN
		PERFORM pg_advisory_xact_lock({class}, hashtext(p_job));
		INSERT INTO {jobs} (job, watermark, created_at) VALUES (p_job, NULL, {now}) ON CONFLICT (job) DO NOTHING;
		SELECT watermark INTO o_wm FROM {jobs} WHERE job = p_job FOR UPDATE;
	END IF;
END
$anarchon$
