-- library: defines functions that scripts prepended with it call (scripts.go documents its KEYS, ARGV and result).
-- This header is dropped when the file is read; the rest is sent as is.

local now_ms = server_ms
local function fmt(n) return string.format('%d', n) end
local function slot_of(member) return string.match(member, '^([^/]*)/') end
