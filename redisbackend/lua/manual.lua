-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local slot, tok = ARGV[1], ARGV[2]
local now = fmt(now_ms())
redis.call('HSET', KEYS[1], tok, cjson.encode({inst=ARGV[3], at=now, att='1', man='1'}))
redis.call('ZADD', KEYS[2], slot, slot .. '/' .. tok)
return 1
