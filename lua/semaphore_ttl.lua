-- semaphore_ttl.lua: the time left to one permit. It writes nothing.
--
-- KEYS[1]   the semaphore key (sorted set, see semaphore_acquire.lua).
-- ARGV[1]   the token.
--
-- Reply, an integer: the milliseconds until the permit expires, or 0 when
-- it is not live.
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local score = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then
  return 0
end
return tonumber(score) - now
