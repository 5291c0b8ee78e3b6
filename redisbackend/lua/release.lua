-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local slot, tok = ARGV[1], ARGV[2]
local cur = redis.call('HGET', KEYS[1], slot)
if not cur then return 0 end
local r = cjson.decode(cur)
if r.tok ~= tok then return 0 end
if r.st == 'released' then return 1 end
if r.st ~= 'running' then return 0 end
r.st, r.lu = 'released', fmt(now_ms())
redis.call('HSET', KEYS[1], slot, cjson.encode(r))
redis.call('PUBLISH', ARGV[3], cjson.encode({job=ARGV[4], slot=slot, kind='released'}))
return 1
