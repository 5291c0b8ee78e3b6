-- Statements of package sqlbackend, read by queries.go. Each begins with a
-- "-- name: <name>" line; other comment lines are dropped. {jobs}, {runs}
-- and {results} are the qualified table names, {big} the dialect's 64-bit
-- integer type, {now} its clock in Unix ms, {fu} its row-lock suffix;
-- the other {…} pieces come from the dialect too (queries.go). Values are
-- always bound to `?` placeholders.

-- History reads: run rows (claims) and stored results of one job.

-- name: historyRuns
SELECT slot, token, instance, attempt, state, status, claimed_at FROM {runs} WHERE job = ? ORDER BY slot DESC LIMIT ?

-- name: historyRunsAll
SELECT slot, token, instance, attempt, state, status, claimed_at FROM {runs} WHERE job = ? ORDER BY slot DESC

-- name: historyResults
-- A limited history reads every result of the limit newest slots
-- that have results: one slot may hold several (takeovers, manual
-- runs), and a limit on rows would cut them in an order that
-- depends on the database (PostgreSQL sorts a NULL started_at
-- first), dropping the finished run's result. The limit newest
-- records of the job lie in the limit newest slots of each table.
SELECT slot, token, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual FROM {results} WHERE job = ?
AND slot >= (SELECT MIN(slot) FROM (SELECT DISTINCT slot FROM {results} WHERE job = ? ORDER BY slot DESC LIMIT ?) AS newest)

-- name: historyResultsAll
SELECT slot, token, instance, attempt, status, claimed_at, started_at, finished_at, error, output, manual FROM {results} WHERE job = ?
