-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

-- Runs body, one script's text, once per call of a batch. ARGV[1] and
-- ARGV[2] are the number of keys and of arguments of each call; the rest
-- of KEYS and ARGV are the calls' keys and arguments one call after the
-- other. Each call sees its own in K and A, as a script of its own does.
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
local keys, args = KEYS, ARGV
local out = {}
-- one clock reading for every call (luaArgs in scripts.go says why)
batch_now = server_ms()
for i = 0, (#args - 2) / na - 1 do
  -- unpack copies a call's keys and arguments in one step, not one by one
  K = {unpack(keys, i * nk + 1, i * nk + nk)}
  A = {unpack(args, 2 + i * na + 1, 2 + i * na + na)}
  local ok, r = pcall(body)
  if not ok then
    if type(r) == 'table' and r.err then r = {err = r.err} else r = {err = tostring(r)} end
    if node_error(r.err) then return r end
  elseif r == nil then
    r = false
  end
  out[i + 1] = r
end
return out
