-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local limit = tonumber(A[1])
local members
if limit > 0 then
  members = redis.call('ZREVRANGE', K[2], 0, limit - 1)
  if #members == limit then
    local s = slot_of(members[#members])
    local seen = {}
    for _, m in ipairs(members) do seen[m] = true end
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', K[2], s, s)) do
      if not seen[m] then members[#members + 1] = m end
    end
  end
else
  members = redis.call('ZREVRANGE', K[2], 0, -1)
end
local open = unindexed(K[4], K[1], K[2])
if #open > 0 then
  -- Merge the unindexed plain claims in, newest first, and cut again.
  local all = open
  for _, m in ipairs(members) do all[#all + 1] = {s = tonumber(slot_of(m)), m = m} end
  table.sort(all, function(a, b) return a.s > b.s end)
  members = {}
  for i, e in ipairs(all) do
    if limit > 0 and i > limit and e.s ~= all[limit].s then break end
    members[#members + 1] = e.m
  end
end
local out = {}
for _, m in ipairs(members) do
  local s = slot_of(m)
  local t = string.sub(m, #s + 2)
  local c = ''
  if t ~= '' then
    c = redis.call('HGET', K[1], t)
    if not c then
      -- the run state is the claim record of its current holder, and of
      -- the claim that settled the slot missed or skipped (a state with no
      -- token, whose record is the one saved under the settling token)
      c = redis.call('HGET', K[4], s)
      local r = c and cjson.decode(c)
      if not r or (r.tok ~= t and not (r.tok == '' and (r.st == 'missed' or r.st == 'skipped'))) then c = '' end
    end
  end
  out[#out + 1] = m
  out[#out + 1] = c
  out[#out + 1] = redis.call('HGET', K[3], m) or ''
end
return out
