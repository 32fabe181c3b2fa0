-- rwmutex_rttl.lua: the time left of a read hold of an RWMutex (see
-- rwmutex_lib.lua for the keys).
--
-- KEYS[1]  R.
-- ARGV[1]  the token.
--
-- Reply, an integer: the milliseconds left (> 0), or 0 when the hold has
-- expired or is not there.
local s = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not s then return 0 end
local left = tonumber(s) - rw_now()
if left <= 0 then return 0 end
return left
