-- library: defines functions that scripts prepended with it call (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

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
end