-- a script of redisbackend (registry.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local now = now_ms()
local exp = now + tonumber(A[3])
redis.call('HSET', K[1], A[1], cjson.encode({info=A[2], ttl=A[3], seen=fmt(now), exp=fmt(exp), st='up'}))
redis.call('ZADD', K[2], exp, A[1])
local old = redis.call('ZRANGEBYSCORE', K[2], '-inf', '(' .. fmt(now - tonumber(A[4])), 'LIMIT', 0, 100)
for _, id in ipairs(old) do
  redis.call('HDEL', K[1], id)
  redis.call('ZREM', K[2], id)
end
return 1
