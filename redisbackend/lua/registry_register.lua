-- a script of redisbackend (registry.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local now = now_ms()
local exp = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode({info=ARGV[2], ttl=ARGV[3], seen=fmt(now), exp=fmt(exp), st='up'}))
redis.call('ZADD', KEYS[2], exp, ARGV[1])
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. fmt(now - tonumber(ARGV[4])), 'LIMIT', 0, 100)
for _, id in ipairs(old) do
  redis.call('HDEL', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
end
return 1
