package sqlbackend

import "strings"

// queries holds every statement, built once per backend from the table
// names and the dialect. Statements use `?`; values are always bound.
type queries struct {
	ddl []string

	insertJob, selectJob, raiseWatermark string

	plainClaim, selectToken, insertManual string
	upsertResult, finishPlain             string
	trimResults, trimRuns                 string

	historyRuns, historyResults       string
	historyRunsAll, historyResultsAll string

	selectRun, insertRun, renewRun, takeOverRun, abandonRun string
	insertStoreResult                                       string
	liveOtherRun                                            string
	heartbeat, finish, release, active                      string
}

// Stored states are anarchon.RunState values; plain claims are stored as
// state "running" with a NULL lease_until (no lease, never expires).
func buildQueries(qualify func(string) string, d SQLDialect) queries {
	jobs, runs, results := qualify("jobs"), qualify("runs"), qualify("results")
	big, now := d.BigInt, d.NowMs
	r := strings.NewReplacer(
		"{jobs}", jobs, "{runs}", runs, "{results}", results,
		"{big}", big, "{now}", now, "{fu}", d.ForUpdate,
		"{results_slot}", qualifyIndex(qualify, "results_slot"),
	)
	q := func(s string) string { return r.Replace(s) }
	return queries{
		ddl: []string{
			q(`CREATE TABLE IF NOT EXISTS {jobs} (
	job TEXT NOT NULL PRIMARY KEY,
	watermark {big},
	created_at {big} NOT NULL
)`),
			q(`CREATE TABLE IF NOT EXISTS {runs} (
	job TEXT NOT NULL,
	slot {big} NOT NULL,
	token TEXT NOT NULL,
	instance TEXT NOT NULL,
	attempt {big} NOT NULL,
	state TEXT NOT NULL,
	status TEXT NOT NULL,
	lease_until {big},
	claimed_at {big} NOT NULL,
	PRIMARY KEY (job, slot)
)`),
			q(`CREATE TABLE IF NOT EXISTS {results} (
	job TEXT NOT NULL,
	token TEXT NOT NULL,
	slot {big} NOT NULL,
	instance TEXT NOT NULL,
	attempt {big} NOT NULL,
	status TEXT NOT NULL,
	claimed_at {big},
	started_at {big},
	finished_at {big},
	error TEXT NOT NULL,
	output TEXT NOT NULL,
	manual {big} NOT NULL,
	saved_at {big} NOT NULL,
	PRIMARY KEY (job, token)
)`),
			q(`CREATE INDEX IF NOT EXISTS {results_slot} ON {results} (job, slot)`),
		},

		insertJob:      q(`INSERT INTO {jobs} (job, watermark, created_at) VALUES (?, NULL, {now}) ON CONFLICT (job) DO NOTHING`),
		selectJob:      q(`SELECT watermark, {now} FROM {jobs} WHERE job = ?{fu}`),
		raiseWatermark: q(`UPDATE {jobs} SET watermark = ? WHERE job = ? AND (watermark IS NULL OR watermark < ?)`),

		// The plain claim: one statement. The WHERE keeps trimmed slots
		// closed; ON CONFLICT makes exactly one insert win.
		plainClaim: q(`INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
SELECT CAST(? AS TEXT), CAST(? AS {big}), CAST(? AS TEXT), CAST(? AS TEXT), 1, 'running', '', NULL, {now}
WHERE NOT EXISTS (SELECT 1 FROM {jobs} WHERE job = ? AND watermark >= ?)
ON CONFLICT (job, slot) DO NOTHING RETURNING token`),
		selectToken: q(`SELECT token FROM {runs} WHERE job = ? AND slot = ?`),
		insertManual: q(`INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
VALUES (?, ?, ?, ?, 1, 'running', {now}, NULL, NULL, '', '', 1, {now}) ON CONFLICT (job, token) DO NOTHING`),
		// A result takes its claim time from the run row its token still
		// holds, or keeps the one stored before (a record the store wrote
		// at a takeover, a manual run's). One token is one attempt, so
		// the stored attempt never goes down.
		upsertResult: q(`INSERT INTO {results} AS r (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
VALUES (?, ?, ?, ?, ?, ?, (SELECT claimed_at FROM {runs} WHERE job = ? AND slot = ? AND token = ?), ?, ?, ?, ?, ?, {now})
ON CONFLICT (job, token) DO UPDATE SET slot = excluded.slot, instance = excluded.instance,
	attempt = CASE WHEN excluded.attempt > r.attempt THEN excluded.attempt ELSE r.attempt END,
	status = excluded.status, claimed_at = COALESCE(excluded.claimed_at, r.claimed_at),
	started_at = excluded.started_at, finished_at = excluded.finished_at, error = excluded.error,
	output = excluded.output, manual = excluded.manual, saved_at = excluded.saved_at`),
		finishPlain: q(`UPDATE {runs} SET state = 'done', status = ?
WHERE job = ? AND slot = ? AND token = ? AND state = 'running' AND lease_until IS NULL`),
		// Trimming: two bounds per table, the historySize-th newest slot
		// (older slots go; a NULL bound when there are fewer rows keeps
		// everything) and, with a TTL (the last two arguments, ms; 0 means
		// none), rows saved or claimed before the server's now minus it.
		// Equal slots at the cutoff are all kept: a few extra records at
		// most.
		trimResults: q(`DELETE FROM {results} WHERE job = ? AND (
	slot < (SELECT slot FROM {results} WHERE job = ? ORDER BY slot DESC LIMIT 1 OFFSET ?)
	OR (CAST(? AS {big}) > 0 AND saved_at < {now} - CAST(? AS {big})))`),
		// Only settled rows and plain claims go; leased runs still running
		// or released stay until they settle.
		trimRuns: q(`DELETE FROM {runs} WHERE job = ? AND (
	slot < (SELECT slot FROM {runs} WHERE job = ? ORDER BY slot DESC LIMIT 1 OFFSET ?)
	OR (CAST(? AS {big}) > 0 AND claimed_at < {now} - CAST(? AS {big})))
AND (state IN ('done', 'missed', 'skipped') OR lease_until IS NULL) RETURNING slot`),

		historyRuns:    q(`SELECT slot, token, instance, attempt, state, status, claimed_at FROM {runs} WHERE job = ? ORDER BY slot DESC LIMIT ?`),
		historyRunsAll: q(`SELECT slot, token, instance, attempt, state, status, claimed_at FROM {runs} WHERE job = ? ORDER BY slot DESC`),
		// A limited history reads every result of the limit newest slots
		// that have results: one slot may hold several (takeovers, manual
		// runs), and a limit on rows would cut them in an order that
		// depends on the database (PostgreSQL sorts a NULL started_at
		// first), dropping the finished run's result. The limit newest
		// records of the job lie in the limit newest slots of each table.
		historyResults: q(`SELECT slot, token, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual FROM {results} WHERE job = ?
AND slot >= (SELECT MIN(slot) FROM (SELECT DISTINCT slot FROM {results} WHERE job = ? ORDER BY slot DESC LIMIT ?) AS newest)`),
		historyResultsAll: q(`SELECT slot, token, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual FROM {results} WHERE job = ?`),

		selectRun: q(`SELECT token, instance, attempt, state, status, lease_until, claimed_at FROM {runs} WHERE job = ? AND slot = ?{fu}`),
		insertRun: q(`INSERT INTO {runs} (job, slot, token, instance, attempt, state, status, lease_until, claimed_at)
VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?)`),
		renewRun:    q(`UPDATE {runs} SET lease_until = ? WHERE job = ? AND slot = ?`),
		takeOverRun: q(`UPDATE {runs} SET token = ?, instance = ?, attempt = ?, state = 'running', status = '', lease_until = ?, claimed_at = ? WHERE job = ? AND slot = ?`),
		// An abandoned run row takes anarchon.AbandonedToken and the
		// instance that settled it, like the history record of the
		// abandonment; the last holder's token no longer holds it.
		abandonRun: q(`UPDATE {runs} SET token = ?, instance = ?, state = 'done', status = 'abandoned', lease_until = NULL WHERE job = ? AND slot = ?`),
		// The store's own history records, written by a lease claim: the
		// previous holder's at a takeover or abandonment, and the
		// abandonment itself. A result saved for the token wins.
		insertStoreResult: q(`INSERT INTO {results} (job, token, slot, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual, saved_at)
VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, '', '', 0, {now}) ON CONFLICT (job, token) DO NOTHING`),
		liveOtherRun: q(`SELECT slot FROM {runs} WHERE job = ? AND slot <> ? AND state = 'running'
AND lease_until IS NOT NULL AND lease_until > ? LIMIT 1`),

		heartbeat: q(`UPDATE {runs} SET lease_until = {now} + ?
WHERE job = ? AND slot = ? AND token = ? AND state = 'running' AND lease_until IS NOT NULL RETURNING lease_until`),
		finish: q(`UPDATE {runs} SET state = 'done', status = ?, lease_until = NULL
WHERE job = ? AND slot = ? AND token = ? AND (state IN ('running', 'released') OR (state = 'done' AND status = ?)) RETURNING attempt`),
		release: q(`UPDATE {runs} SET state = 'released', lease_until = {now}
WHERE job = ? AND slot = ? AND token = ? AND state = 'running' AND lease_until IS NOT NULL RETURNING attempt`),
		active: q(`SELECT slot, token, instance, attempt, state, lease_until, {now} FROM {runs}
WHERE job = ? AND state IN ('running', 'released') AND lease_until IS NOT NULL ORDER BY slot`),
	}
}

// qualifyIndex names an index after its table prefix. An index lives in
// its table's schema, and CREATE INDEX takes an unqualified name on
// PostgreSQL, so only the last part of the qualified name is kept.
func qualifyIndex(qualify func(string) string, name string) string {
	full := qualify(name)
	if i := strings.LastIndex(full, `."`); i >= 0 {
		return full[i+1:]
	}
	return full
}
