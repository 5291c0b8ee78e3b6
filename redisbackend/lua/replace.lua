-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local slot, tok = A[1], A[2]
local cur = redis.call('HGET', K[1], slot)
if not cur then return {0} end
local me = cjson.decode(cur)
if me.tok ~= tok or me.st ~= 'running' then return {0} end
local now = now_ms()
local out = {1, fmt(now)}
local n = tonumber(slot)
for _, s in ipairs(redis.call('ZRANGE', K[6], 0, -1)) do
  local raw = tonumber(s) < n and redis.call('HGET', K[1], s)
  if raw then
    local r = cjson.decode(raw)
    if r.st == 'running' or r.st == 'released' then
      out[#out + 1] = s
      out[#out + 1] = raw
      -- settled with its token kept: its holder's heartbeat fails, no
      -- claim takes it over, and its history record says replaced
      r.st, r.stat = 'done', 'replaced'
      redis.call('HSET', K[1], s, cjson.encode(r))
      redis.call('ZREM', K[6], s)
      local t = type(r.tok) == 'string' and r.tok or ''
      if redis.call('HEXISTS', K[4], s .. '/' .. t) == 0 then
        save(s, t, cjson.encode({slot=s, tok=t, inst=r.inst, att=tonumber(r.att) or 1, stat='replaced',
          start='0001-01-01T00:00:00Z', ['end']='0001-01-01T00:00:00Z'}), A[5], A[6], now)
      end
      redis.call('PUBLISH', A[3], cjson.encode({job=A[4], slot=s, kind='finished'}))
    end
  end
end
return out
