-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

-- a pending request becomes done, canceled; any other is left as it is.
-- The reply is the record after the script, or false for none.
local cur = redis.call('HGET', K[1], A[1])
if not cur then return false end
local r = cjson.decode(cur)
if r.st ~= 'pending' then return cur end
r.st, r.stat, r.err, r.fat = 'done', 'canceled', A[2], fmt(now_ms())
cur = cjson.encode(r)
redis.call('HSET', K[1], A[1], cur)
return cur
