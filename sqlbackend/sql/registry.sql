-- Statements of package sqlbackend, read by queries.go. Each begins with a
-- "-- name: <name>" line; other comment lines are dropped. {instances} is
-- the qualified registry table, {big} the dialect's 64-bit integer type,
-- {now} its clock in Unix ms. Values are always bound to `?` placeholders.

-- The instance registry (SPEC §10, registry.go).

-- name: createInstances
CREATE TABLE IF NOT EXISTS {instances} (
	id {key 1024} NOT NULL PRIMARY KEY,
	info {text} NOT NULL,
	ttl_ms {big} NOT NULL,
	last_seen {big} NOT NULL,
	expires_at {big} NOT NULL,
	stopped {big} NOT NULL
)

-- name: registerInstance
-- The server's clock is read once, so that expires_at is exactly
-- last_seen + ttl. WHERE true lets SQLite parse ON CONFLICT after a SELECT.
INSERT INTO {instances} (id, info, ttl_ms, last_seen, expires_at, stopped)
SELECT CAST(? AS {tcast}), CAST(? AS {tcast}), CAST(? AS {bcast}), t.n, t.n + CAST(? AS {bcast}), 0
FROM (SELECT {now} AS n) AS t WHERE true
{upsert id} info = {new info}, ttl_ms = {new ttl_ms},
	last_seen = {new last_seen}, expires_at = {new expires_at}, stopped = 0

-- name: pruneInstances
DELETE FROM {instances} WHERE expires_at < {now} - CAST(? AS {bcast})

-- name: deregisterInstance
UPDATE {instances} SET stopped = 1,
	expires_at = CASE WHEN expires_at > {now} THEN {now} ELSE expires_at END
WHERE id = ?

-- name: listInstances
SELECT i.id, i.info, i.ttl_ms, i.last_seen, i.expires_at, i.stopped, t.n
FROM {instances} AS i CROSS JOIN (SELECT {now} AS n) AS t
WHERE i.expires_at >= t.n - CAST(? AS {bcast})
