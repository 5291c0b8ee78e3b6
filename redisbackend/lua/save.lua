-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

return save(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
