-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local cur = redis.call('HGET', K[1], A[1])
if not cur then return {0, '0'} end
local r = cjson.decode(cur)
if r.st ~= 'running' or r.tok ~= A[2] then return {0, '0'} end
r.lu = fmt(now_ms() + tonumber(A[3]))
redis.call('HSET', K[1], A[1], cjson.encode(r))
return {1, r.lu}
