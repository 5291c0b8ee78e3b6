-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local out = {fmt(now_ms())}
for _, s in ipairs(redis.call('ZRANGE', K[2], 0, -1)) do
  local r = redis.call('HGET', K[1], s)
  if r then
    out[#out + 1] = s
    out[#out + 1] = r
  end
end
return out
