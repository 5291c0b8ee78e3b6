-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local ok = finish(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
local result = ARGV[6]
if ok == 0 then result = ARGV[7] end
save(ARGV[1], ARGV[2], result, ARGV[8], ARGV[9])
return ok
