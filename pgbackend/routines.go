package pgbackend

import (
	"strconv"
	"strings"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlbackend"
)

// routineVersion ends the name of every stored function, so that two
// versions of anarchon sharing a database in a rolling deploy each call
// the body they were built with. A change of any body takes a new version.
const routineVersion = "_v2"

// ifAbsent wraps the CREATE of function fn (a qualified name) so that it
// runs only if no function of that name exists. A body never changes
// under one name (see routineVersion), and a role that does not own an
// existing function could not replace it: creating only what is missing
// lets instances running as different roles share the functions.
func ifAbsent(fn, create string) string {
	return "DO $create$ BEGIN IF to_regproc('" + fn + "') IS NULL THEN EXECUTE $body$" + create +
		"$body$; END IF; END $create$"
}

// routines returns the PL/pgSQL functions that make the lease claim,
// Finish, Release and FinishResult one statement each (one round trip),
// and the statements that call them. channel is the NOTIFY channel, ""
// for none. The functions decide exactly as sqlbackend's transactions do:
// the job row is locked first (FOR UPDATE; a missing row is created under
// the job's advisory lock), then the run row, and the clock
// (clock_timestamp()) is read after the locks. A PL/pgSQL function that
// is VOLATILE takes a new snapshot for each statement under READ
// COMMITTED, so what it reads after waiting for a lock is what the
// previous holder committed. NOTIFY is sent inside the same implicit
// transaction, so a watcher hears of a change only once it is committed.
func routines(channel string) func(qualify func(string) string) sqlbackend.Routines {
	return func(qualify func(string) string) sqlbackend.Routines {
		lockJob := qualify("lock_job" + routineVersion)
		claim := qualify("claim" + routineVersion)
		finish := qualify("finish" + routineVersion)
		release := qualify("release" + routineVersion)
		finishResult := qualify("finish_result" + routineVersion)
		ch := "NULL::text"
		if channel != "" {
			// channel is made of the validated schema and prefix
			// ([A-Za-z0-9_.]), so it is safe as a literal.
			ch = "'" + channel + "'"
		}
		r := strings.NewReplacer(
			"{jobs}", qualify("jobs"), "{runs}", qualify("runs"), "{results}", qualify("results"),
			"{now}", Dialect.NowMs, "{class}", strconv.Itoa(lockClass),
			"{lock_job}", lockJob, "{claim}", claim, "{finish}", finish,
			"{release}", release, "{finish_result}", finishResult,
			"{released}", strconv.Itoa(int(anarchon.RunReleased)),
			"{finished}", strconv.Itoa(int(anarchon.RunFinished)),
		)
		q := r.Replace
		return sqlbackend.Routines{
			DDL: []string{
				// lock_job locks the job's row, creating it if absent, and
				// returns its watermark (NULL if none).
				ifAbsent(lockJob, q(`CREATE OR REPLACE FUNCTION {lock_job}(p_job text, OUT o_wm bigint)
LANGUAGE plpgsql VOLATILE AS $anarchon$
BEGIN
	SELECT watermark INTO o_wm FROM {jobs} WHERE job = p_job FOR UPDATE;
	IF NOT FOUND THEN
		PERFORM pg_advisory_xact_lock({class}, hashtext(p_job));
		INSERT INTO {jobs} (job, watermark, created_at) VALUES (p_job, NULL, {now}) ON CONFLICT (job) DO NOTHING;
		SELECT watermark INTO o_wm FROM {jobs} WHERE job = p_job FOR UPDATE;
	END IF;
END
$anarchon$`)),
				// claim decides SPEC §6's table, first match wins.
				ifAbsent(claim, q(`CREATE OR REPLACE FUNCTION {claim}(p_job text, p_slot bigint, p_token text, p_instance text,
	p_lease bigint, p_max_late bigint, p_overlap boolean, p_max_attempts bigint, p_channel text,
	OUT o_kind text, OUT o_attempt bigint, OUT o_holder text, OUT o_until bigint, OUT o_status text)
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
	SELECT token, instance, attempt, state, status, lease_until, claimed_at INTO v_run
		FROM {runs} WHERE job = p_job AND slot = p_slot FOR UPDATE;
	IF NOT FOUND THEN
		IF v_wm IS NOT NULL AND p_slot <= v_wm THEN
			o_kind := 'done';
		ELSIF p_max_late IS NOT NULL AND v_now > p_slot + p_max_late THEN
			INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
				VALUES (p_job, p_slot, p_token, p_instance, 1, 'missed', 'missed', NULL, v_now);
			o_kind := 'late';
		ELSIF NOT p_overlap AND EXISTS (SELECT 1 FROM {runs} WHERE job = p_job AND slot <> p_slot
				AND state = 'running' AND lease_until IS NOT NULL AND lease_until > v_now) THEN
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
		END IF;
		RETURN;
	END IF;
	IF v_run.state = 'running' AND v_run.token = p_token THEN
		UPDATE {runs} SET lease_until = v_now + p_lease WHERE job = p_job AND slot = p_slot;
		o_kind := 'won';
		o_attempt := v_run.attempt;
		o_holder := v_run.instance;
		o_until := v_now + p_lease;
	ELSIF v_run.state = 'done' THEN
		o_kind := 'done';
		o_attempt := v_run.attempt;
		o_status := v_run.status;
	ELSIF v_run.state IN ('missed', 'skipped') THEN
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
		END IF;
	ELSE
		-- a state written by a newer version: settled
		o_kind := 'done';
		o_status := v_run.status;
	END IF;
END
$anarchon$`)),
				ifAbsent(finish, q(`CREATE OR REPLACE FUNCTION {finish}(p_job text, p_slot bigint, p_token text, p_status text, p_channel text, OUT o_ok boolean)
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
$anarchon$`)),
				ifAbsent(release, q(`CREATE OR REPLACE FUNCTION {release}(p_job text, p_slot bigint, p_token text, p_channel text, OUT o_ok boolean)
LANGUAGE plpgsql VOLATILE AS $anarchon$
BEGIN
	UPDATE {runs} SET state = 'released', lease_until = {now}
		WHERE job = p_job AND slot = p_slot AND token = p_token AND state = 'running' AND lease_until IS NOT NULL;
	o_ok := FOUND;
	IF o_ok AND p_channel IS NOT NULL THEN
		PERFORM pg_notify(p_channel, '{released} ' || p_slot || ' ' || p_job);
	END IF;
END
$anarchon$`)),
				// finish_result: the job's lock first (as a claim takes it),
				// then Finish, the result, and trimming as SaveResult does.
				ifAbsent(finishResult, q(`CREATE OR REPLACE FUNCTION {finish_result}(p_job text, p_slot bigint, p_token text, p_instance text,
	p_attempt bigint, p_status text, p_started bigint, p_finished bigint, p_error text, p_output text,
	p_size bigint, p_ttl bigint, p_channel text, OUT o_ok boolean)
LANGUAGE plpgsql VOLATILE AS $anarchon$
DECLARE
	v_status text := p_status;
	v_top bigint;
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
	DELETE FROM {results} WHERE job = p_job AND (
		slot < (SELECT r.slot FROM {results} r WHERE r.job = p_job ORDER BY r.slot DESC LIMIT 1 OFFSET p_size - 1)
		OR (p_ttl > 0 AND saved_at < {now} - p_ttl));
	WITH d AS (
		DELETE FROM {runs} WHERE job = p_job AND (
			slot < (SELECT r.slot FROM {runs} r WHERE r.job = p_job ORDER BY r.slot DESC LIMIT 1 OFFSET p_size - 1)
			OR (p_ttl > 0 AND claimed_at < {now} - p_ttl))
		AND (state IN ('done', 'missed', 'skipped') OR lease_until IS NULL)
		RETURNING slot)
	SELECT max(slot) INTO v_top FROM d;
	IF v_top IS NOT NULL THEN
		UPDATE {jobs} SET watermark = v_top WHERE job = p_job AND (watermark IS NULL OR watermark < v_top);
	END IF;
END
$anarchon$`)),
			},
			Claim:        q(`SELECT o_kind, o_attempt, o_holder, o_until, o_status FROM {claim}(?, ?, ?, ?, ?, ?, ?, ?, ` + ch + `)`),
			Finish:       q(`SELECT o_ok FROM {finish}(?, ?, ?, ?, ` + ch + `)`),
			Release:      q(`SELECT o_ok FROM {release}(?, ?, ?, ` + ch + `)`),
			FinishResult: q(`SELECT o_ok FROM {finish_result}(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ` + ch + `)`),
		}
	}
}
