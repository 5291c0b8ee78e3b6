-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

-- Runs body, one script's text, once per call of a batch. ARGV[1] and
-- ARGV[2] are the number of keys and of arguments of each call; the rest
-- of KEYS and ARGV are the calls' keys and arguments one call after the
-- other. Each call sees its own in K and A, as a script of its own does.
-- The reply has one element per call: its reply, or its error as an error
-- element (a call's error ends that call alone, as its own script would).
local nk, na = tonumber(ARGV[1]), tonumber(ARGV[2])
local keys, args = KEYS, ARGV
local out = {}
for i = 0, (#args - 2) / na - 1 do
  local k, a = {}, {}
  for j = 1, nk do k[j] = keys[i * nk + j] end
  for j = 1, na do a[j] = args[2 + i * na + j] end
  K, A = k, a
  local ok, r = pcall(body)
  if not ok then
    if type(r) == 'table' and r.err then r = {err = r.err} else r = {err = tostring(r)} end
  elseif r == nil then
    r = false
  end
  out[i + 1] = r
end
return out
