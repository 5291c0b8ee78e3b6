-- Statements of package sqlbackend, read by queries.go. Each begins with a
-- "-- name: <name>" line; other comment lines are dropped. {jobs}, {runs}
-- and {results} are the qualified table names, {big} the dialect's 64-bit
-- integer type, {now} its clock in Unix ms, {fu} its row-lock suffix;
-- the other {…} pieces come from the dialect too (queries.go). Values are
-- always bound to `?` placeholders.

-- The jobs table: one row per job, holding its trimming watermark and its
-- last fencing token.

-- name: insertJob
INSERT INTO {jobs} (job, watermark, created_at) VALUES (?, NULL, {now}) {ignore job}

-- name: selectJob
-- The clock is read outside the locking SELECT: PostgreSQL computes a
-- SELECT's columns before FOR UPDATE waits for the row, and keeps them
-- when the holder did not change it, so {now} read there could be older
-- than the lock. Read from the locked row, it is the time after the wait.
SELECT l.watermark, l.fence, {now} FROM (SELECT watermark, fence FROM {jobs} WHERE job = ?{fu}) AS l

-- name: setFence
-- A won lease claim's fencing token, written under the job's lock that
-- selectJob took, in the claim's transaction.
UPDATE {jobs} SET fence = ? WHERE job = ?

-- name: raiseWatermark
UPDATE {jobs} SET watermark = ? WHERE job = ? AND (watermark IS NULL OR watermark < ?)
