-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local slot, tok, inst = A[1], A[2], A[3]
local lease, maxlate = tonumber(A[4]), tonumber(A[5])
local overlap, maxatt = A[6] == '1', tonumber(A[7])
local limit = math.max(tonumber(A[13]) or 1, 1)
local now = now_ms()
-- every win of the job takes the next value of its fence counter (K[8]),
-- written with the claim: SPEC §6, "Fencing"
local function fence()
  return redis.call('INCR', K[8])
end
local function win(att, prev)
  local lu = fmt(now + lease)
  if prev then
    redis.call('HSET', K[2], prev.tok, cjson.encode({inst=prev.inst, at=prev.at, att=prev.att}))
  end
  -- the fields of cjson.encode, written by hand as lib_claim's record is
  redis.call('HSET', K[1], slot, '{"tok":' .. cjson.encode(tok) .. ',"inst":' .. cjson.encode(inst) ..
    ',"att":"' .. fmt(att) .. '","st":"running","lu":"' .. lu .. '","at":"' .. fmt(now) .. '"}')
  redis.call('ZADD', K[3], slot, slot .. '/' .. tok)
  redis.call('ZADD', K[6], slot, slot)
  return {1, att, inst, lu, '', fence()}
end
-- the run and the job's watermark in one read: a new slot needs both
local got = redis.call('HMGET', K[1], slot, 'mark')
local cur, mark = got[1], got[2]
if cur then
  local r = cjson.decode(cur)
  local att, lu = tonumber(r.att) or 1, tonumber(r.lu) or 0
  if r.st == 'running' and r.tok == tok then
    r.lu = fmt(now + lease)
    redis.call('HSET', K[1], slot, cjson.encode(r))
    return {1, att, r.inst, r.lu, '', fence()}
  end
  if r.st == 'missed' or r.st == 'skipped' or r.st == 'paused' then
    return {5, 0, '', '0', r.st}
  end
  if r.st == 'running' and lu > now then
    return {2, att, r.inst, r.lu, ''}
  end
  if r.st == 'running' or r.st == 'released' then
    if att < maxatt then return win(att + 1, r) end
    r.st, r.stat = 'done', 'abandoned'
    redis.call('HSET', K[1], slot, cjson.encode(r))
    redis.call('ZREM', K[6], slot)
    redis.call('PUBLISH', A[8], cjson.encode({job=A[9], slot=slot, kind='finished'}))
    return {3, att, r.inst, '0', 'abandoned'}
  end
  return {3, att, r.inst or '', '0', r.stat or ''}
end
if mark and tonumber(slot) <= tonumber(mark) then
  return {3, 0, '', '0', ''}
end
-- never early: a slot ahead of the server's clock is refused
if tonumber(slot) > now + tonumber(A[10]) then
  return {-1, 0, '', fmt(now), 'early'}
end
local ctl = redis.call('GET', K[7])
if ctl then
  ctl = cjson.decode(ctl)
  if ctl.paused then
    -- paused (SPEC §12): settled under the paused token, with its history record
    local ptok = 'paused-' .. slot
    redis.call('HSET', K[1], slot, cjson.encode({tok=ptok, inst=inst, att='1', st='paused', lu='0', at=fmt(now)}))
    save(slot, ptok, paused_result(slot, inst, ctl), A[11], A[12], now)
    return {7, 0, '', '0', ''}
  end
end
if maxlate > 0 and now > tonumber(slot) + maxlate then
  redis.call('HSET', K[1], slot, cjson.encode({tok='', inst=inst, att='0', st='missed', lu='0', at=fmt(now)}))
  redis.call('ZADD', K[3], slot, slot .. '/')
  return {6, 0, '', '0', 'missed'}
end
if not overlap then
  -- refused once limit other runs hold live leases (the overlap limit)
  local live = 0
  for _, s in ipairs(redis.call('ZRANGE', K[6], 0, -1)) do
    if s ~= slot then
      local o = redis.call('HGET', K[1], s)
      if o then o = cjson.decode(o) end
      if not o or (o.st ~= 'running' and o.st ~= 'released') then
        redis.call('ZREM', K[6], s)
      elseif o.st == 'running' and (tonumber(o.lu) or 0) > now then
        live = live + 1
        if live >= limit then
          redis.call('HSET', K[1], slot, cjson.encode({tok='', inst=inst, att='0', st='skipped', lu='0', at=fmt(now)}))
          redis.call('ZADD', K[3], slot, slot .. '/')
          return {4, tonumber(o.att) or 1, o.inst, o.lu, 'skipped'}
        end
      end
    end
  end
end
return win(1, nil)
