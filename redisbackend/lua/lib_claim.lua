-- library: defines functions that scripts prepended with it call (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local function claim(ctlkey, paused)
  local slot, tok = A[1], A[2]
  local got = redis.call('HMGET', K[1], slot, 'mark')
  if got[1] then
    if cjson.decode(got[1]).tok == tok then return 1 end
    return 0
  end
  if got[2] and tonumber(slot) <= tonumber(got[2]) then return 0 end
  local nowms = server_ms()
  local now = string.format('%d', nowms)
  -- never early: a slot ahead of the server's clock is refused
  if tonumber(slot) > nowms + tonumber(A[4]) then return {-1, now} end
  local ctl = redis.call('GET', ctlkey)
  if ctl then
    ctl = cjson.decode(ctl)
    if ctl.paused then return paused(slot, now, ctl) end
  end
  redis.call('HSET', K[1], slot, '{"tok":' .. cjson.encode(tok) .. ',"inst":' .. cjson.encode(A[3]) ..
    ',"att":"1","st":"claimed","lu":"0","at":"' .. now .. '"}')
  return 1
end
