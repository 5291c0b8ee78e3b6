-- a script of redisbackend (registry.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

return {fmt(now_ms()), redis.call('HGETALL', K[1])}
