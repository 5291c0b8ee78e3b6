-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local cur = redis.call('HGET', K[1], A[1])
if cur then return {0, cur} end
local rec = cjson.encode({job=A[3], key=A[1], by=A[2], at=fmt(now_ms()), st='pending'})
redis.call('HSET', K[1], A[1], rec)
return {1, rec}
