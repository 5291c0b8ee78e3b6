-- Statements of package sqlbackend, read by queries.go. Each begins with a
-- "-- name: <name>" line; other comment lines are dropped. {jobs}, {runs}
-- and {results} are the qualified table names, {big} the dialect's 64-bit
-- integer type, {now} its clock in Unix ms, {fu} its row-lock suffix.
-- Values are always bound to `?` placeholders.

-- The jobs table: one row per job, holding its trimming watermark.

-- name: insertJob
INSERT INTO {jobs} (job, watermark, created_at) VALUES (?, NULL, {now}) ON CONFLICT (job) DO NOTHING

-- name: selectJob
SELECT watermark, {now} FROM {jobs} WHERE job = ?{fu}

-- name: raiseWatermark
UPDATE {jobs} SET watermark = ? WHERE job = ? AND (watermark IS NULL OR watermark < ?)
