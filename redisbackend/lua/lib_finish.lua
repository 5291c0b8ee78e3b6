-- library: defines functions that scripts prepended with it call (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local function finish(slot, tok, status, channel, job)
  local cur = redis.call('HGET', K[1], slot)
  if not cur then return 0 end
  local r = cjson.decode(cur)
  if r.tok ~= tok then return 0 end
  if r.st == 'done' then
    -- an abandoned slot keeps its last holder's token, which no longer holds it
    if r.stat == 'abandoned' then return 0 end
    return 1
  end
  if r.st ~= 'running' and r.st ~= 'released' and r.st ~= 'claimed' then return 0 end
  r.st, r.stat = 'done', status
  redis.call('HSET', K[1], slot, cjson.encode(r))
  redis.call('ZREM', K[6], slot)
  redis.call('PUBLISH', channel, cjson.encode({job=job, slot=slot, kind='finished'}))
  return 1
end
