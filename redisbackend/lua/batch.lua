-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

-- Runs body, one script's text, once per call of a batch, each call with
-- its own keys and arguments in K and A, as a script of its own sees
-- them. The batch sends what its calls share once (packArgs in batch.go):
-- ARGV holds the number of keys nk and of arguments na per call, then
-- '1' when KEYS holds every key of every call (through a cluster client),
-- or '0' when it holds each call's first key only, followed by the nk
-- suffixes of the calls' keys after their hash tag (the first key's
-- first): a call's other keys are then its tag followed by their
-- suffixes, built when the call first reads them. Then a mask with one
-- letter per argument ('s' shared by every call, 'v' varying), the
-- shared arguments in order, then each call's varying arguments, call
-- after call.
-- The reply has one element per call: its reply, or its error as an error
-- element (a call's error ends that call alone, as its own script would).
-- An error that is the node's state, not the call's (this node is a
-- replica now, is loading, has too few replicas, is out of memory, or the
-- cluster is down), ends the whole batch with that error instead: the
-- client then treats the connection as it treats one script's such error
-- (go-redis drops a connection that answered READONLY, so that the next
-- one reaches the new primary), and every call of the batch fails, as
-- each would have alone. Redis 7 refuses a script that may write on a
-- replica, or short of memory or replicas, before it runs, so there the
-- error is the whole reply anyway; Redis 5 and 6 raise it at the write.
local node_errors = {'READONLY', 'LOADING', 'NOREPLICAS', 'OOM', 'MASTERDOWN', 'CLUSTERDOWN', 'MOVED', 'ASK', 'TRYAGAIN', 'BUSY'}
local function node_error(msg)
  for _, p in ipairs(node_errors) do
    if string.sub(msg, 1, #p + 1) == p .. ' ' then return true end
  end
  return false
end
local nk, na = tonumber(ARGV[1]), tonumber(ARGV[2])
local full = ARGV[3] == '1'
local suffix, p = {}, 4
if not full then
  suffix = {unpack(ARGV, 4, 3 + nk)}
  p = 4 + nk
end
local mask = ARGV[p]
p = p + 1
-- one table of arguments for every call: the shared ones stay, each
-- call's varying ones are written over the last call's
local args, vary = {}, {}
for j = 1, na do
  if string.sub(mask, j, j) == 's' then
    args[j] = ARGV[p]
    p = p + 1
  else
    vary[#vary + 1] = j
  end
end
local nv, tag = #vary, ''
local cut = full and 0 or #suffix[1]
-- a call's keys past the first: its tag and their suffix, made once read
local lazy = {__index = function(t, j)
  local s = suffix[j]
  if s == nil then return nil end
  local key = tag .. s
  rawset(t, j, key)
  return key
end}
local calls = full and #KEYS / nk or #KEYS
local out = {}
-- one clock reading for every call (luaArgs in scripts.go says why)
batch_now = server_ms()
for i = 1, calls do
  if full then
    K = {unpack(KEYS, (i - 1) * nk + 1, i * nk)}
  else
    local first = KEYS[i]
    tag = string.sub(first, 1, #first - cut)
    K = setmetatable({first}, lazy)
  end
  for v = 1, nv do
    args[vary[v]] = ARGV[p]
    p = p + 1
  end
  A = args
  local ok, r = pcall(body)
  if not ok then
    if type(r) == 'table' and r.err then r = {err = r.err} else r = {err = tostring(r)} end
    if node_error(r.err) then return r end
  elseif r == nil then
    r = false
  end
  out[i] = r
end
return out
