-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return {0, '0'} end
local r = cjson.decode(cur)
if r.st ~= 'running' or r.tok ~= ARGV[2] then return {0, '0'} end
r.lu = fmt(now_ms() + tonumber(ARGV[3]))
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
return {1, r.lu}
