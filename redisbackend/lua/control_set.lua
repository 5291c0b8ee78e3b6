-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local st = cjson.encode({job=A[1], paused=(A[2] == '1'), by=A[3], reason=A[4], at=fmt(now_ms())})
redis.call('SET', K[1], st)
return st
