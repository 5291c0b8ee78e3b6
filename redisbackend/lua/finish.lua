-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

return finish(A[1], A[2], A[3], A[4], A[5])
