-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then return {0, cur} end
local rec = cjson.encode({job=ARGV[3], key=ARGV[1], by=ARGV[2], at=fmt(now_ms()), st='pending'})
redis.call('HSET', KEYS[1], ARGV[1], rec)
return {1, rec}
