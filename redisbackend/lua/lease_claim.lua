-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local slot, tok, inst = ARGV[1], ARGV[2], ARGV[3]
local lease, maxlate = tonumber(ARGV[4]), tonumber(ARGV[5])
local overlap, maxatt = ARGV[6] == '1', tonumber(ARGV[7])
local limit = math.max(tonumber(ARGV[13]) or 1, 1)
local now = now_ms()
-- every win of the job takes the next value of its fence counter (KEYS[8]),
-- written with the claim: SPEC §6, "Fencing"
local function fence()
  return redis.call('INCR', KEYS[8])
end
local function win(att, prev)
  local lu = fmt(now + lease)
  if prev then
    redis.call('HSET', KEYS[2], prev.tok, cjson.encode({inst=prev.inst, at=prev.at, att=prev.att}))
  end
  redis.call('HSET', KEYS[1], slot, cjson.encode({tok=tok, inst=inst, att=fmt(att), st='running', lu=lu, at=fmt(now)}))
  redis.call('ZADD', KEYS[3], slot, slot .. '/' .. tok)
  redis.call('ZADD', KEYS[6], slot, slot)
  return {1, att, inst, lu, '', fence()}
end
local cur = redis.call('HGET', KEYS[1], slot)
if cur then
  local r = cjson.decode(cur)
  local att, lu = tonumber(r.att) or 1, tonumber(r.lu) or 0
  if r.st == 'running' and r.tok == tok then
    r.lu = fmt(now + lease)
    redis.call('HSET', KEYS[1], slot, cjson.encode(r))
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
    redis.call('HSET', KEYS[1], slot, cjson.encode(r))
    redis.call('ZREM', KEYS[6], slot)
    redis.call('PUBLISH', ARGV[8], cjson.encode({job=ARGV[9], slot=slot, kind='finished'}))
    return {3, att, r.inst, '0', 'abandoned'}
  end
  return {3, att, r.inst or '', '0', r.stat or ''}
end
local mark = redis.call('HGET', KEYS[1], 'mark')
if mark and tonumber(slot) <= tonumber(mark) then
  return {3, 0, '', '0', ''}
end
-- never early: a slot ahead of the server's clock is refused
if tonumber(slot) > now + tonumber(ARGV[10]) then
  return {-1, 0, '', fmt(now), 'early'}
end
local ctl = redis.call('GET', KEYS[7])
if ctl then
  ctl = cjson.decode(ctl)
  if ctl.paused then
    -- paused (SPEC §12): settled under the paused token, with its history record
    local ptok = 'paused-' .. slot
    redis.call('HSET', KEYS[1], slot, cjson.encode({tok=ptok, inst=inst, att='1', st='paused', lu='0', at=fmt(now)}))
    save(slot, ptok, paused_result(slot, inst, ctl), ARGV[11], ARGV[12], now)
    return {7, 0, '', '0', ''}
  end
end
if maxlate > 0 and now > tonumber(slot) + maxlate then
  redis.call('HSET', KEYS[1], slot, cjson.encode({tok='', inst=inst, att='0', st='missed', lu='0', at=fmt(now)}))
  redis.call('ZADD', KEYS[3], slot, slot .. '/')
  return {6, 0, '', '0', 'missed'}
end
if not overlap then
  -- refused once limit other runs hold live leases (the overlap limit)
  local live = 0
  for _, s in ipairs(redis.call('ZRANGE', KEYS[6], 0, -1)) do
    if s ~= slot then
      local o = redis.call('HGET', KEYS[1], s)
      if o then o = cjson.decode(o) end
      if not o or (o.st ~= 'running' and o.st ~= 'released') then
        redis.call('ZREM', KEYS[6], s)
      elseif o.st == 'running' and (tonumber(o.lu) or 0) > now then
        live = live + 1
        if live >= limit then
          redis.call('HSET', KEYS[1], slot, cjson.encode({tok='', inst=inst, att='0', st='skipped', lu='0', at=fmt(now)}))
          redis.call('ZADD', KEYS[3], slot, slot .. '/')
          return {4, tonumber(o.att) or 1, o.inst, o.lu, 'skipped'}
        end
      end
    end
  end
end
return win(1, nil)
