-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local slot, tok = A[1], A[2]
local cur = redis.call('HGET', K[1], slot)
if not cur then return 0 end
local r = cjson.decode(cur)
if r.tok ~= tok then return 0 end
if r.st == 'claimed' then
  -- a plain claim: only its run state exists until its result is saved
  redis.call('HDEL', K[1], slot)
  return 1
end
if r.st ~= 'running' then return 0 end
if (tonumber(r.att) or 1) <= 1 then
  -- a first attempt: the slot becomes absent again, so a claim after its
  -- MaxLate is answered late, not won
  redis.call('HDEL', K[1], slot)
  redis.call('ZREM', K[2], slot .. '/' .. tok)
  redis.call('ZREM', K[3], slot)
else
  -- a takeover: the earlier holder's record has moved to the claims hash;
  -- the run is released, so the next claim is the next attempt
  r.st, r.lu = 'released', fmt(now_ms())
  redis.call('HSET', K[1], slot, cjson.encode(r))
end
redis.call('PUBLISH', A[3], cjson.encode({job=A[4], slot=slot, kind='released'}))
return 1
