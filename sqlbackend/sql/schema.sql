-- Statements of package sqlbackend, read by queries.go. Each begins with a
-- "-- name: <name>" line; other comment lines are dropped. {jobs}, {runs}
-- and {results} are the qualified table names, {big} the dialect's 64-bit
-- integer type, {now} its clock in Unix ms, {fu} its row-lock suffix.
-- Values are always bound to `?` placeholders.

-- The tables, created by Init in one migration transaction, in this order.

-- name: createJobs
CREATE TABLE IF NOT EXISTS {jobs} (
	job TEXT NOT NULL PRIMARY KEY,
	watermark {big},
	created_at {big} NOT NULL
)

-- name: createRuns
-- Stored states are anarchon.RunState values; plain claims are stored as
-- state 'running' with a NULL lease_until (no lease, never expires).
CREATE TABLE IF NOT EXISTS {runs} (
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
)

-- name: createResults
CREATE TABLE IF NOT EXISTS {results} (
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
)

-- name: createResultsSlot
CREATE INDEX IF NOT EXISTS {results_slot} ON {results} (job, slot)

-- name: createControl
-- Job control (SPEC §12): one row per job ever paused or resumed.
CREATE TABLE IF NOT EXISTS {control} (
	job TEXT NOT NULL PRIMARY KEY,
	paused {big} NOT NULL,
	by_who TEXT NOT NULL,
	reason TEXT NOT NULL,
	set_at {big} NOT NULL
)

-- name: createTriggers
-- Trigger requests (SPEC §12): one row per (job, key).
CREATE TABLE IF NOT EXISTS {triggers} (
	job TEXT NOT NULL,
	tkey TEXT NOT NULL,
	by_who TEXT NOT NULL,
	requested_at {big} NOT NULL,
	state TEXT NOT NULL,
	instance TEXT NOT NULL,
	token TEXT NOT NULL,
	slot {big} NOT NULL,
	claimed_at {big},
	finished_at {big},
	status TEXT NOT NULL,
	error TEXT NOT NULL,
	PRIMARY KEY (job, tkey)
)
