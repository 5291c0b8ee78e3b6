-- Statements of package sqlbackend, read by queries.go. Each begins with a
-- "-- name: <name>" line; other comment lines are dropped. {jobs}, {runs}
-- and {results} are the qualified table names, {big} the dialect's 64-bit
-- integer type, {now} its clock in Unix ms, {fu} its row-lock suffix;
-- the other {…} pieces come from the dialect too (queries.go). Values are
-- always bound to `?` placeholders.

-- The tables, created by Init in one migration transaction, in this order.

-- name: createJobs
-- fence is the last fencing token a won lease claim of the job took
-- (ClaimOutcome.Fence); a database made before it had none gets it from
-- addJobsFence.
CREATE TABLE IF NOT EXISTS {jobs} (
	job {key 1024} NOT NULL PRIMARY KEY,
	watermark {big},
	created_at {big} NOT NULL,
	fence {big} NOT NULL DEFAULT 0
)

-- name: addJobsFence
-- Run by Init only when the jobs table has no fence column
-- (SQLDialect.HasColumn): a database made by an older version.
ALTER TABLE {jobs} ADD COLUMN fence {big} NOT NULL DEFAULT 0

-- name: createRuns
-- Stored states are anarchon.RunState values; plain claims are stored as
-- state 'running' with a NULL lease_until (no lease, never expires).
CREATE TABLE IF NOT EXISTS {runs} (
	job {key 1024} NOT NULL,
	slot {big} NOT NULL,
	token {text} NOT NULL,
	instance {text} NOT NULL,
	attempt {big} NOT NULL,
	state {text} NOT NULL,
	status {text} NOT NULL,
	lease_until {big},
	claimed_at {big} NOT NULL,
	PRIMARY KEY (job, slot)
)

-- name: createRunsLive
-- The runs that hold a lease, by job (SQLDialect.PartialIndexes): a lease
-- claim's overlap check (SPEC §6) counts the job's live runs through it,
-- so it reads those alone and not every run the job's history keeps (up
-- to HistorySize, 100 by default). Plain claims (no lease) and settled
-- runs are not in it.
CREATE INDEX IF NOT EXISTS {runs_live} ON {runs} (job) WHERE state = 'running' AND lease_until IS NOT NULL

-- name: createResults
CREATE TABLE IF NOT EXISTS {results} (
	job {key 1024} NOT NULL,
	token {key 512} NOT NULL,
	slot {big} NOT NULL,
	instance {text} NOT NULL,
	attempt {big} NOT NULL,
	status {text} NOT NULL,
	claimed_at {big},
	started_at {big},
	finished_at {big},
	error {text} NOT NULL,
	output {text} NOT NULL,
	manual {big} NOT NULL,
	saved_at {big} NOT NULL,
	PRIMARY KEY (job, token){inline_index}
)

-- name: createResultsSlot
CREATE INDEX IF NOT EXISTS {results_slot} ON {results} (job, slot)

-- name: createControl
-- Job control (SPEC §12): one row per job ever paused or resumed.
CREATE TABLE IF NOT EXISTS {control} (
	job {key 1024} NOT NULL PRIMARY KEY,
	paused {big} NOT NULL,
	by_who {text} NOT NULL,
	reason {text} NOT NULL,
	set_at {big} NOT NULL
)

-- name: createTriggers
-- Trigger requests (SPEC §12): one row per (job, key).
CREATE TABLE IF NOT EXISTS {triggers} (
	job {key 1024} NOT NULL,
	tkey {key 1024} NOT NULL,
	by_who {text} NOT NULL,
	requested_at {big} NOT NULL,
	state {text} NOT NULL,
	instance {text} NOT NULL,
	token {text} NOT NULL,
	slot {big} NOT NULL,
	claimed_at {big},
	finished_at {big},
	status {text} NOT NULL,
	error {text} NOT NULL,
	PRIMARY KEY (job, tkey)
)
