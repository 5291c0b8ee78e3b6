-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local slot, tok = A[1], A[2]
local now = fmt(now_ms())
redis.call('HSET', K[1], tok, cjson.encode({inst=A[3], at=now, att='1', man='1'}))
redis.call('ZADD', K[2], slot, slot .. '/' .. tok)
return 1
