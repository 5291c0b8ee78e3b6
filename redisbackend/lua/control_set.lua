-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local st = cjson.encode({job=ARGV[1], paused=(ARGV[2] == '1'), by=ARGV[3], reason=ARGV[4], at=fmt(now_ms())})
redis.call('SET', KEYS[1], st)
return st
