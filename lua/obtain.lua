-- obtain.lua: take every lock key, or none of them.
--
-- KEYS[1..n]  the lock keys.
-- KEYS[n+1]   the fence counter key; present only when ARGV[4] is "1".
-- ARGV[1]     the token.
-- ARGV[2]     the metadata.
-- ARGV[3]     the TTL in milliseconds (>= 1, checked by the caller).
-- ARGV[4]     "1" when the last key is a fence counter, "0" otherwise.
--
-- A lock key holds the plain string "<#token>:<token>:<fence>:<metadata>".
-- It is ours when it starts with "<#token>:<token>:": the length prefix makes
-- the comparison exact, so the token "foo" never matches "foobar".
--
-- Reply, an integer:
--   >= 0   obtained; the fence token (0 when there is no fence counter).
--   -1     not obtained; a key held by another has no expiry.
--   < -1   not obtained; -(ms + 1), where ms is the longest remaining PTTL
--          of the keys held by others (when the lock can be free again).
--
-- Fence tokens: a new acquisition sets the counter to
-- max(counter + 1, server TIME in microseconds), so tokens strictly increase
-- and do not fall back when the counter is lost (restart without persistence,
-- failover before replication). An acquisition that continues one of ours
-- (every key already held with our token and one fence) keeps its token.
local token, meta, ttl = ARGV[1], ARGV[2], ARGV[3]
local fenced = ARGV[4] == "1"
local n = #KEYS
if fenced then n = n - 1 end

local prefix = #token .. ":" .. token .. ":"
local owned, kept, blocked, wait = 0, nil, false, 0
for i = 1, n do
  local v = redis.call("GET", KEYS[i])
  if v then
    if string.sub(v, 1, #prefix) == prefix then
      owned = owned + 1
      local f = string.match(v, "^(%d+):", #prefix + 1)
      if kept == nil then kept = f elseif kept ~= f then kept = false end
    else
      blocked = true
      local ms = redis.call("PTTL", KEYS[i])
      if ms < 0 then wait = -1 elseif wait >= 0 and ms > wait then wait = ms end
    end
  end
end
if blocked then
  if wait < 0 then return -1 end
  return -(wait + 1)
end

local fence = 0
if fenced then
  if owned == n and kept and kept ~= "0" then
    fence = tonumber(kept)
  else
    local cur = redis.call("GET", KEYS[#KEYS])
    cur = tonumber(cur or "0")
    if not cur then
      return redis.error_reply("ERR redislock: fence key " .. KEYS[#KEYS] .. " does not hold an integer")
    end
    local t = redis.call("TIME")
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    fence = math.max(cur + 1, now)
    redis.call("SET", KEYS[#KEYS], string.format("%.0f", fence))
  end
end

local value = prefix .. string.format("%.0f", fence) .. ":" .. meta
for i = 1, n do
  redis.call("SET", KEYS[i], value, "PX", ttl)
end
return fence
