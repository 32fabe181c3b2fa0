-- semaphore_release.lua: give one permit back.
--
-- KEYS[1]   the semaphore key (sorted set, see semaphore_acquire.lua).
-- KEYS[2]   its permit hash.
-- ARGV[1]   the token.
--
-- The token's member and hash field are removed whether the permit was
-- live or had expired (an expired one no longer counts; removing it only
-- prunes it early). No other permit is touched. O(log n).
--
-- Reply, an integer:
--   1   the permit was live and is released.
--   0   it had expired, or was released before.
local token = ARGV[1]
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local score = redis.call("ZSCORE", KEYS[1], token)
if not score then
  return 0
end
redis.call("ZREM", KEYS[1], token)
redis.call("HDEL", KEYS[2], token)
if tonumber(score) > now then
  return 1
end
return 0
