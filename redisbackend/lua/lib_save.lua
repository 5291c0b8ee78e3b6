-- library: defines functions that scripts prepended with it call (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local function save(slot, tok, result, size_arg, ttl_arg, now_arg)
local member = slot .. '/' .. tok
local now = now_arg or now_ms()
if tok ~= '' then
  redis.call('ZREM', K[3], slot .. '/')
  redis.call('ZREM', K[5], slot .. '/')
end
redis.call('ZADD', K[3], slot, member)
redis.call('ZADD', K[5], fmt(now), member)
redis.call('HSET', K[4], member, result)
local size, ttl = tonumber(size_arg), tonumber(ttl_arg)
local function drop(m)
  local s = slot_of(m)
  local t = string.sub(m, #s + 2)
  local cur = redis.call('HGET', K[1], s)
  local r = cur and cjson.decode(cur)
  local held = r and (r.st == 'running' or r.st == 'released')
  if held and r.tok == t then return false end
  redis.call('ZREM', K[3], m)
  redis.call('ZREM', K[5], m)
  redis.call('HDEL', K[4], m)
  if t ~= '' then redis.call('HDEL', K[2], t) end
  -- The run state goes with the record of its current claim, even while
  -- other records of the slot stay (else the claim would come back as an
  -- unindexed one), or, if it has no token (a settled slot), with the
  -- slot's last record. An unindexed claim sharing its slot with the
  -- dropped record keeps its state: it is trimmed as itself.
  if r and not held then
    local tok = type(r.tok) == 'string' and r.tok or ''
    if tok == t or (tok == '' and redis.call('ZCOUNT', K[3], s, s) == 0) then
      redis.call('HDEL', K[1], s)
      local mark = redis.call('HGET', K[1], 'mark')
      if not mark or tonumber(s) > tonumber(mark) then redis.call('HSET', K[1], 'mark', s) end
    end
  end
  return true
end
local function claimed_at(m)
  local s = slot_of(m)
  local t = string.sub(m, #s + 2)
  local c = t ~= '' and redis.call('HGET', K[2], t)
  if not c then
    -- the run state is the claim record of its current holder
    c = redis.call('HGET', K[1], s)
    if not c then return nil end
    c = cjson.decode(c)
    if c.tok ~= t then return nil end
    return tonumber(c.at)
  end
  return tonumber(cjson.decode(c).at)
end
local open = unindexed(K[1], K[2], K[3])
if ttl > 0 then
  local cutoff = now - ttl
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', K[5], '-inf', '(' .. fmt(cutoff))) do drop(m) end
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', K[3], '-inf', '(' .. fmt(cutoff))) do
    if not redis.call('ZSCORE', K[5], m) then
      local at = claimed_at(m)
      if not at or at < cutoff then drop(m) end
    end
  end
  local left = {}
  for _, u in ipairs(open) do
    if (u.at and u.at >= cutoff) or not drop(u.m) then left[#left + 1] = u end
  end
  open = left
end
if #open == 0 then
  -- Read only as many of the oldest members as may go: the first kept
  -- (live) members are skipped, dropped ones leave the set.
  local excess, kept = redis.call('ZCARD', K[3]) - size, 0
  while excess > 0 do
    local batch = redis.call('ZRANGE', K[3], kept, kept + excess - 1)
    if #batch == 0 then break end
    for _, m in ipairs(batch) do
      if drop(m) then excess = excess - 1 else kept = kept + 1 end
    end
  end
  return 1
end
-- With unindexed claims, the oldest of hist and of those go first.
local all = open
local hm = redis.call('ZRANGE', K[3], 0, -1, 'WITHSCORES')
for i = 1, #hm, 2 do all[#all + 1] = {s = tonumber(hm[i + 1]), m = hm[i]} end
table.sort(all, function(a, b) return a.s < b.s end)
local excess = #all - size
for _, e in ipairs(all) do
  if excess <= 0 then break end
  if drop(e.m) then excess = excess - 1 end
end
return 1
end

-- paused_result is the history record (JSON, as wireResult) of a slot
-- settled because its job is paused: ctl is the job's control state.
local function paused_result(slot, inst, ctl)
  local why = 'job paused by ' .. (ctl.by or '')
  if ctl.reason and ctl.reason ~= '' then why = why .. ': ' .. ctl.reason end
  return cjson.encode({slot=slot, tok='paused-' .. slot, inst=inst, att=1, stat='paused',
    start='0001-01-01T00:00:00Z', ['end']='0001-01-01T00:00:00Z', err=why})
end
