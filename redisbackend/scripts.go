package redisbackend

import "github.com/redis/go-redis/v9"

// script is a Lua script run with EVALSHA, falling back to EVAL when the
// server's script cache does not have it (go-redis Script.Run). src is kept
// for the WAIT pipeline, which issues EVAL itself.
type script struct {
	*redis.Script
	src string
}

// newBareScript is newScript without luaPrelude, for a script that needs
// none of its helpers.
func newBareScript(src string) *script {
	return &script{Script: redis.NewScript(src), src: src}
}

func newScript(body string) *script {
	src := luaPrelude + body
	return &script{Script: redis.NewScript(src), src: src}
}

// Every script touches only keys passed in KEYS, all with one job's hash
// tag, so it runs on one cluster slot. The clock is the server's TIME,
// read inside the script: since Redis 5 scripts replicate their effects
// (the written values), not the script, so replicas and the AOF store the
// same times the primary computed.
//
// Numbers: slots and times are Unix ms, well below 2^53, exact in Lua's
// doubles; they are written back as decimal strings with string.format('%d').
const luaPrelude = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function fmt(n) return string.format('%d', n) end
local function slot_of(member) return string.match(member, '^([^/]*)/') end
`

// The run state of a slot doubles as the claim record of its current
// holder (fields tok, inst, att, at), so a claim writes one record. The
// claims hash keeps the records of earlier holders (moved there on a
// takeover) and of manual runs.
//
// A plain claim writes only its record in the run hash (state "claimed"):
// it enters the history index (hist) with its result, in save. Until then
// it is an unindexed claim, which History and trimming find in the run
// hash. This keeps the claim, the hot path, to one hash write.

// scriptClaim is the plain claim (SPEC §4). It is written without the
// shared prelude and encodes its record by hand (the fields are those of
// cjson.encode, the strings escaped by cjson) to keep its Lua work small.
// KEYS: run. ARGV: slot, token, instance.
// Returns 1 (won, or won before with this token) or 0.
var scriptClaim = newBareScript(`
local slot, tok = ARGV[1], ARGV[2]
local got = redis.call('HMGET', KEYS[1], slot, 'mark')
if got[1] then
  if cjson.decode(got[1]).tok == tok then return 1 end
  return 0
end
if got[2] and tonumber(slot) <= tonumber(got[2]) then return 0 end
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
redis.call('HSET', KEYS[1], slot, '{"tok":' .. cjson.encode(tok) .. ',"inst":' .. cjson.encode(ARGV[3]) ..
  ',"att":"1","st":"claimed","lu":"0","at":"' .. now .. '"}')
return 1
`)

// scriptManual records a RunNow run (no deduplication).
// KEYS: claims, hist. ARGV: slot, token, instance.
var scriptManual = newScript(`
local slot, tok = ARGV[1], ARGV[2]
local now = fmt(now_ms())
redis.call('HSET', KEYS[1], tok, cjson.encode({inst=ARGV[3], at=now, att='1', man='1'}))
redis.call('ZADD', KEYS[2], slot, slot .. '/' .. tok)
return 1
`)

// scriptLeaseClaim decides a lease claim per the table of SPEC §6, first
// match wins.
// KEYS: run, claims, hist, active.
// ARGV: slot, token, instance, lease ms, max-late ms (0 = none),
// allow overlap ('1'/'0'), max attempts, channel, job.
// Returns {kind, attempt, holder, lease until ms (string), status}; kind as
// anarchon.OutcomeKind: 1 won, 2 running, 3 done, 4 overlap, 5 none, 6 late.
var scriptLeaseClaim = newScript(`
local slot, tok, inst = ARGV[1], ARGV[2], ARGV[3]
local lease, maxlate = tonumber(ARGV[4]), tonumber(ARGV[5])
local overlap, maxatt = ARGV[6] == '1', tonumber(ARGV[7])
local now = now_ms()
local function win(att, prev)
  local lu = fmt(now + lease)
  if prev then
    redis.call('HSET', KEYS[2], prev.tok, cjson.encode({inst=prev.inst, at=prev.at, att=prev.att}))
  end
  redis.call('HSET', KEYS[1], slot, cjson.encode({tok=tok, inst=inst, att=fmt(att), st='running', lu=lu, at=fmt(now)}))
  redis.call('ZADD', KEYS[3], slot, slot .. '/' .. tok)
  redis.call('ZADD', KEYS[4], slot, slot)
  return {1, att, inst, lu, ''}
end
local cur = redis.call('HGET', KEYS[1], slot)
if cur then
  local r = cjson.decode(cur)
  local att, lu = tonumber(r.att) or 1, tonumber(r.lu) or 0
  if r.st == 'running' and r.tok == tok then
    r.lu = fmt(now + lease)
    redis.call('HSET', KEYS[1], slot, cjson.encode(r))
    return {1, att, r.inst, r.lu, ''}
  end
  if r.st == 'missed' or r.st == 'skipped' then
    return {5, 0, '', '0', r.st}
  end
  if r.st == 'running' and lu > now then
    return {2, att, r.inst, r.lu, ''}
  end
  if r.st == 'running' or r.st == 'released' then
    if att < maxatt then return win(att + 1, r) end
    r.st, r.stat = 'done', 'abandoned'
    redis.call('HSET', KEYS[1], slot, cjson.encode(r))
    redis.call('ZREM', KEYS[4], slot)
    redis.call('PUBLISH', ARGV[8], cjson.encode({job=ARGV[9], slot=slot, kind='finished'}))
    return {3, att, r.inst, '0', 'abandoned'}
  end
  return {3, att, r.inst or '', '0', r.stat or ''}
end
local mark = redis.call('HGET', KEYS[1], 'mark')
if mark and tonumber(slot) <= tonumber(mark) then
  return {3, 0, '', '0', ''}
end
if maxlate > 0 and now > tonumber(slot) + maxlate then
  redis.call('HSET', KEYS[1], slot, cjson.encode({tok='', inst=inst, att='0', st='missed', lu='0', at=fmt(now)}))
  redis.call('ZADD', KEYS[3], slot, slot .. '/')
  return {6, 0, '', '0', 'missed'}
end
if not overlap then
  for _, s in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    if s ~= slot then
      local o = redis.call('HGET', KEYS[1], s)
      if o then o = cjson.decode(o) end
      if not o or (o.st ~= 'running' and o.st ~= 'released') then
        redis.call('ZREM', KEYS[4], s)
      elseif o.st == 'running' and (tonumber(o.lu) or 0) > now then
        redis.call('HSET', KEYS[1], slot, cjson.encode({tok='', inst=inst, att='0', st='skipped', lu='0', at=fmt(now)}))
        redis.call('ZADD', KEYS[3], slot, slot .. '/')
        return {4, tonumber(o.att) or 1, o.inst, o.lu, 'skipped'}
      end
    end
  end
end
return win(1, nil)
`)

// scriptHeartbeat extends a running lease held by the token.
// KEYS: run. ARGV: slot, token, lease ms. Returns {1|0, lease until ms}.
var scriptHeartbeat = newScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return {0, '0'} end
local r = cjson.decode(cur)
if r.st ~= 'running' or r.tok ~= ARGV[2] then return {0, '0'} end
r.lu = fmt(now_ms() + tonumber(ARGV[3]))
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
return {1, r.lu}
`)

// luaFinish defines finish(slot, token, status, channel, job): it marks
// the token's run done with a status and publishes a finished event.
// Repeating it after it succeeded answers 1 again and keeps the first
// status; the last holder of an abandoned slot gets 0. Keys: KEYS[1] run, KEYS[6] active.
const luaFinish = `
local function finish(slot, tok, status, channel, job)
  local cur = redis.call('HGET', KEYS[1], slot)
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
  redis.call('HSET', KEYS[1], slot, cjson.encode(r))
  redis.call('ZREM', KEYS[6], slot)
  redis.call('PUBLISH', channel, cjson.encode({job=job, slot=slot, kind='finished'}))
  return 1
end
`

// scriptFinish is RunStore.Finish.
// KEYS: run, claims, hist, results, age, active (the layout of
// scriptFinishResult; it touches run and active). ARGV: slot, token, status,
// channel, job. Returns 1 or 0.
var scriptFinish = newScript(luaFinish + `
return finish(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
`)

// scriptRelease ends the token's running lease at once. Repeating it after
// it succeeded answers 1 again.
// KEYS: run. ARGV: slot, token, channel, job.
var scriptRelease = newScript(`
local slot, tok = ARGV[1], ARGV[2]
local cur = redis.call('HGET', KEYS[1], slot)
if not cur then return 0 end
local r = cjson.decode(cur)
if r.tok ~= tok then return 0 end
if r.st == 'released' then return 1 end
if r.st ~= 'running' then return 0 end
r.st, r.lu = 'released', fmt(now_ms())
redis.call('HSET', KEYS[1], slot, cjson.encode(r))
redis.call('PUBLISH', ARGV[3], cjson.encode({job=ARGV[4], slot=slot, kind='released'}))
return 1
`)

// scriptActive lists unfinished runs, oldest slot first.
// KEYS: run, active. Returns {now ms, slot1, run1, slot2, run2, ...}.
var scriptActive = newScript(`
local out = {fmt(now_ms())}
for _, s in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local r = redis.call('HGET', KEYS[1], s)
  if r then
    out[#out + 1] = s
    out[#out + 1] = r
  end
end
return out
`)

// luaUnindexed defines unindexed(run, claims, hist): the runs whose
// current claim (a non-empty token) is not in the history index (plain
// claims without a result yet, see scriptClaim) as {s = slot number, m =
// member, at = claim time ms or nil}, oldest slot first.
//
// It reads the whole run hash only when the run states plus the claims
// hash (the records of manual runs and earlier lease holders, each a
// member of hist without a run state of its own) outnumber the members of
// hist: without unindexed claims they never do, since every other run
// state has its member in hist, or (a slot settled under a token) a member
// that stands for it. So saves and History of a job with no claim waiting
// for its result pay three counts, not a scan. Members of neither kind (a
// slot recorded as abandoned under its own token, which only leased jobs
// have) can hide as many unindexed claims until they are trimmed
// themselves; unindexed claims come from plain claims, so only a job
// switched between the two modes can meet both.
const luaUnindexed = `
local function unindexed(run, claims, hist)
  local out = {}
  local states = redis.call('HLEN', run) - redis.call('HEXISTS', run, 'mark')
  if states + redis.call('HLEN', claims) <= redis.call('ZCARD', hist) then return out end
  local all = redis.call('HGETALL', run)
  for i = 1, #all, 2 do
    local s = all[i]
    local r = s ~= 'mark' and cjson.decode(all[i + 1])
    -- A state without a token (a slot settled as missed or skipped) is no
    -- claim: its record is the one saved under the settling token.
    if r and type(r.tok) == 'string' and r.tok ~= '' then
      local m = s .. '/' .. r.tok
      if not redis.call('ZSCORE', hist, m) then
        out[#out + 1] = {s = tonumber(s), m = m, at = tonumber(r.at)}
      end
    end
  end
  table.sort(out, function(a, b) return a.s < b.s end)
  return out
end`

// luaSave defines save(slot, token, result JSON, history size, history TTL
// ms (0 = none)): it stores a result and trims the history.
// Keys: KEYS[1] run, [2] claims, [3] hist, [4] results, [5] age.
//
// A history member is "slot/token" ("slot/" for a slot settled without a
// token). A member's age is the server time its result was saved ("age"
// scores members that have a result) or, without a result, its claim time
// (field "at" of its claim record). Claims do not write "age", which keeps
// a claim to one sorted-set write. Since a slot is claimed at or after its
// time, a member claimed before the cutoff has a slot before it, so the
// claim-only members to check are found by slot. Trimming drops the members
// older than the TTL, then the oldest members (by slot) beyond the size,
// with their claim and result records. When the member of a slot's current
// claim goes (or, for a state without a token, the slot's last member),
// the slot's run state goes too and the slot becomes the watermark (if
// newer), so a later claim for it loses. The members of a running or
// released run are kept.
const luaSave = `
local function save(slot, tok, result, size_arg, ttl_arg)
local member = slot .. '/' .. tok
local now = now_ms()
if tok ~= '' then
  redis.call('ZREM', KEYS[3], slot .. '/')
  redis.call('ZREM', KEYS[5], slot .. '/')
end
redis.call('ZADD', KEYS[3], slot, member)
redis.call('ZADD', KEYS[5], fmt(now), member)
redis.call('HSET', KEYS[4], member, result)
local size, ttl = tonumber(size_arg), tonumber(ttl_arg)
local function drop(m)
  local s = slot_of(m)
  local t = string.sub(m, #s + 2)
  local cur = redis.call('HGET', KEYS[1], s)
  local r = cur and cjson.decode(cur)
  local held = r and (r.st == 'running' or r.st == 'released')
  if held and r.tok == t then return false end
  redis.call('ZREM', KEYS[3], m)
  redis.call('ZREM', KEYS[5], m)
  redis.call('HDEL', KEYS[4], m)
  if t ~= '' then redis.call('HDEL', KEYS[2], t) end
  -- The run state goes with the record of its current claim, even while
  -- other records of the slot stay (else the claim would come back as an
  -- unindexed one), or, if it has no token (a settled slot), with the
  -- slot's last record. An unindexed claim sharing its slot with the
  -- dropped record keeps its state: it is trimmed as itself.
  if r and not held then
    local tok = type(r.tok) == 'string' and r.tok or ''
    if tok == t or (tok == '' and redis.call('ZCOUNT', KEYS[3], s, s) == 0) then
      redis.call('HDEL', KEYS[1], s)
      local mark = redis.call('HGET', KEYS[1], 'mark')
      if not mark or tonumber(s) > tonumber(mark) then redis.call('HSET', KEYS[1], 'mark', s) end
    end
  end
  return true
end
local function claimed_at(m)
  local s = slot_of(m)
  local t = string.sub(m, #s + 2)
  local c = false
  if t ~= '' then c = redis.call('HGET', KEYS[2], t) end
  if not c then
    c = redis.call('HGET', KEYS[1], s)
    if c and cjson.decode(c).tok ~= t then c = false end
  end
  if not c then return nil end
  return tonumber(cjson.decode(c).at)
end
local open = unindexed(KEYS[1], KEYS[2], KEYS[3])
if ttl > 0 then
  local cutoff = now - ttl
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', '(' .. fmt(cutoff))) do drop(m) end
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. fmt(cutoff))) do
    if not redis.call('ZSCORE', KEYS[5], m) then
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
  local excess, kept = redis.call('ZCARD', KEYS[3]) - size, 0
  while excess > 0 do
    local batch = redis.call('ZRANGE', KEYS[3], kept, kept + excess - 1)
    if #batch == 0 then break end
    for _, m in ipairs(batch) do
      if drop(m) then excess = excess - 1 else kept = kept + 1 end
    end
  end
  return 1
end
-- With unindexed claims, the oldest of hist and of those go first.
local all = open
local hm = redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES')
for i = 1, #hm, 2 do all[#all + 1] = {s = tonumber(hm[i + 1]), m = hm[i]} end
table.sort(all, function(a, b) return a.s < b.s end)
local excess = #all - size
for _, e in ipairs(all) do
  if excess <= 0 then break end
  if drop(e.m) then excess = excess - 1 end
end
return 1
end
`

// scriptSave is Backend.SaveResult.
// KEYS: run, claims, hist, results, age.
// ARGV: slot, token, result JSON, history size, history TTL ms.
var scriptSave = newScript(luaUnindexed + luaSave + `
return save(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
`)

// scriptFinishResult is RunStore.FinishResult: finish, then save the
// result, or, if the token no longer holds the run, save it as lease_lost.
// KEYS: run, claims, hist, results, age, active.
// ARGV: slot, token, status, channel, job, result JSON, lease-lost result
// JSON, history size, history TTL ms. Returns 1 or 0 as finish.
var scriptFinishResult = newScript(luaFinish + luaUnindexed + luaSave + `
local ok = finish(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
local result = ARGV[6]
if ok == 0 then result = ARGV[7] end
save(ARGV[1], ARGV[2], result, ARGV[8], ARGV[9])
return ok
`)

// scriptHistory reads a job's history in one snapshot, newest first.
// KEYS: claims, hist, results, run. ARGV: limit (0 = all).
// Returns {member1, claim1, result1, ...}; a missing record is "". With a
// limit, every member sharing the oldest returned slot is included, so
// ordering within a slot is left to anarchon.BuildHistory. Unindexed plain
// claims (read from the run hash) are merged in by slot.
var scriptHistory = newScript(luaUnindexed + `
local limit = tonumber(ARGV[1])
local members
if limit > 0 then
  members = redis.call('ZREVRANGE', KEYS[2], 0, limit - 1)
  if #members == limit then
    local s = slot_of(members[#members])
    local seen = {}
    for _, m in ipairs(members) do seen[m] = true end
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], s, s)) do
      if not seen[m] then members[#members + 1] = m end
    end
  end
else
  members = redis.call('ZREVRANGE', KEYS[2], 0, -1)
end
local open = unindexed(KEYS[4], KEYS[1], KEYS[2])
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
    c = redis.call('HGET', KEYS[1], t)
    if not c then
      c = redis.call('HGET', KEYS[4], s)
      if not c or cjson.decode(c).tok ~= t then c = '' end
    end
  end
  out[#out + 1] = m
  out[#out + 1] = c
  out[#out + 1] = redis.call('HGET', KEYS[3], m) or ''
end
return out
`)

var allScripts = []*script{
	scriptClaim, scriptManual, scriptLeaseClaim, scriptHeartbeat,
	scriptFinish, scriptRelease, scriptActive, scriptSave, scriptHistory,
	scriptFinishResult,
}
