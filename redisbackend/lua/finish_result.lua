-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local ok = finish(A[1], A[2], A[3], A[4], A[5])
local result = A[6]
if ok == 0 then result = A[7] end
save(A[1], A[2], result, A[8], A[9])
return ok
