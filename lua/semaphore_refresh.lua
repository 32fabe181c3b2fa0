-- semaphore_refresh.lua: extend one permit, when it is still live.
--
-- KEYS[1]   the semaphore key (sorted set, see semaphore_acquire.lua).
-- KEYS[2]   its permit hash.
-- ARGV[1]   the token.
-- ARGV[2]   the new TTL in milliseconds (>= 1, checked by the caller).
--
-- Reply, an integer:
--   1   the permit was live and now expires ARGV[2] ms from now.
--   0   the permit had expired or was released; nothing was changed.
local token, ttl = ARGV[1], tonumber(ARGV[2])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local score = redis.call("ZSCORE", KEYS[1], token)
if not score or tonumber(score) <= now then
  return 0
end
redis.call("ZADD", KEYS[1], "XX", string.format("%.0f", now + ttl), token)
local last = redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")
redis.call("PEXPIREAT", KEYS[1], last[2])
redis.call("PEXPIREAT", KEYS[2], last[2])
return 1
