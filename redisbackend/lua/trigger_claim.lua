-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local cur = redis.call('HGET', K[1], A[1])
if not cur then return 0 end
local r = cjson.decode(cur)
if r.st ~= 'pending' then
  if r.tok == A[2] then return 1 end
  return 0
end
r.st, r.tok, r.inst, r.cat = 'running', A[2], A[3], fmt(now_ms())
redis.call('HSET', K[1], A[1], cjson.encode(r))
return 1
