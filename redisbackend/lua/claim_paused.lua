-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

return claim(K[6], function(slot, now, ctl)
  -- paused (SPEC §12): the slot is settled under the paused token, with
  -- its history record
  local tok = 'paused-' .. slot
  redis.call('HSET', K[1], slot, cjson.encode({tok=tok, inst=A[3], att='1', st='paused', lu='0', at=now}))
  save(slot, tok, paused_result(slot, A[3], ctl), A[5], A[6], tonumber(now))
  return 0
end)
