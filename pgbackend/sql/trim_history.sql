-- A stored function of pgbackend, created by Init if absent (routines.go).
-- {jobs}, {runs} and {results} are the qualified tables, {now} the clock in
-- Unix ms.
-- A change of the body below takes a new routineVersion.
--
-- trim_history: a job's history trimming after a result is saved
-- (save_result, finish_result), as sqlbackend's trim statements do: the
-- results beyond the p_size newest slots or older than p_ttl ms (0: no
-- limit) go; so do settled run rows beyond the same bounds, and the job's
-- watermark rises to the newest run row removed, so that no claim can
-- win its slot again. The caller holds the job's lock.
--
-- Each bound is found first and the deletes take only the bounds that
-- apply, so that they are range scans of the (job, slot) key: a job with
-- fewer than p_size slots and no TTL deletes nothing and scans nothing
-- but the p_size newest keys.
CREATE OR REPLACE FUNCTION {trim_history}(p_job text, p_size bigint, p_ttl bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $anarchon$
DECLARE
	v_cut bigint;
	v_top bigint;
BEGIN
	v_cut := (SELECT r.slot FROM {results} r WHERE r.job = p_job ORDER BY r.slot DESC LIMIT 1 OFFSET p_size - 1);
	IF v_cut IS NOT NULL THEN
		DELETE FROM {results} WHERE job = p_job AND slot < v_cut;
	END IF;
	IF p_ttl > 0 THEN
		DELETE FROM {results} WHERE job = p_job AND saved_at < {now} - p_ttl;
	END IF;
	v_cut := (SELECT r.slot FROM {runs} r WHERE r.job = p_job ORDER BY r.slot DESC LIMIT 1 OFFSET p_size - 1);
	IF v_cut IS NOT NULL THEN
		WITH d AS (
			DELETE FROM {runs} WHERE job = p_job AND slot < v_cut
			AND (state IN ('done', 'missed', 'skipped') OR lease_until IS NULL)
			RETURNING slot)
		SELECT max(slot) INTO v_top FROM d;
	END IF;
	IF p_ttl > 0 THEN
		WITH d AS (
			DELETE FROM {runs} WHERE job = p_job AND claimed_at < {now} - p_ttl
			AND (state IN ('done', 'missed', 'skipped') OR lease_until IS NULL)
			RETURNING slot)
		SELECT greatest(max(slot), v_top) INTO v_top FROM d;
	END IF;
	IF v_top IS NOT NULL THEN
		UPDATE {jobs} SET watermark = v_top WHERE job = p_job AND (watermark IS NULL OR watermark < v_top);
	END IF;
END
$anarchon$
