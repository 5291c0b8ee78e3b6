-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local slot, tok = A[1], A[2]
local cur = redis.call('HGET', K[1], slot)
if not cur then return 0 end
local r = cjson.decode(cur)
if r.tok ~= tok then return 0 end
if r.st == 'released' then return 1 end
if r.st ~= 'running' then return 0 end
r.st, r.lu = 'released', fmt(now_ms())
redis.call('HSET', K[1], slot, cjson.encode(r))
redis.call('PUBLISH', A[3], cjson.encode({job=A[4], slot=slot, kind='released'}))
return 1
