-- a script of redisbackend (registry.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local cur = redis.call('HGET', K[1], A[1])
if not cur then return 0 end
local r = cjson.decode(cur)
local now = now_ms()
r.st = 'stopped'
if tonumber(r.exp) > now then r.exp = fmt(now) end
redis.call('HSET', K[1], A[1], cjson.encode(r))
redis.call('ZADD', K[2], tonumber(r.exp), A[1])
return 1
