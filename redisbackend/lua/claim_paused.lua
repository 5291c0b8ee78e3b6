-- a script of redisbackend (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

return claim(KEYS[6], function(slot, now, ctl)
  -- paused (SPEC §12): the slot is settled under the paused token, with
  -- its history record
  local tok = 'paused-' .. slot
  redis.call('HSET', KEYS[1], slot, cjson.encode({tok=tok, inst=ARGV[3], att='1', st='paused', lu='0', at=now}))
  save(slot, tok, paused_result(slot, ARGV[3], ctl), ARGV[5], ARGV[6], tonumber(now))
  return 0
end)
