-- a script of redisbackend (registry.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return 0 end
local r = cjson.decode(cur)
local now = now_ms()
r.st = 'stopped'
if tonumber(r.exp) > now then r.exp = fmt(now) end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
redis.call('ZADD', KEYS[2], tonumber(r.exp), ARGV[1])
return 1
