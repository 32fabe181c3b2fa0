-- semaphore_acquire.lua: take one permit of a counting semaphore, when
-- fewer than the caller's limit are live.
--
-- KEYS[1]   the semaphore key: a sorted set of permit tokens, each scored by
--           its expiry in server milliseconds (TIME).
-- KEYS[2]   its permit hash (same slot): token -> "<fence>:<metadata>".
-- KEYS[3]   the fence counter key; present only when ARGV[5] is "1".
--
-- ARGV[1]   the token.
-- ARGV[2]   the metadata.
-- ARGV[3]   the TTL in milliseconds (>= 1, checked by the caller).
-- ARGV[4]   the caller's limit (>= 1, checked by the caller).
-- ARGV[5]   "1" when a fence counter key follows, "0" otherwise.
--
-- A permit is live while its score is above the server's time now; one
-- whose score is now or earlier no longer counts, and is pruned here, with
-- its hash field (O(log n + m) for m expired permits, each pruned once).
-- <fence> is "0" for a permit without fence counter and "<fence
-- token>/<tag>" for a fenced one, <tag> being the first 8 hex digits of the
-- SHA-1 of the counter's key name (as for locks); a permit without fence
-- token and metadata has no field. Both keys expire when the last live
-- permit does, or later (PEXPIREAT to the highest score written; a release
-- does not shorten it).
--
-- A token that holds a live permit already takes it again (re-entrant): its
-- expiry and metadata are reset, and its fence token is kept when it came
-- from the same counter.
--
-- Reply, an integer:
--   >= 0   obtained; the fence token (0 when there is no fence counter).
--   < -1   not obtained: limit or more permits are live; -(ms + 1), where
--          ms is the time until the first of them expires (>= 1).
-- A counter that is not a decimal integer below 2^53 is left alone and the
-- reply is the error "ERR redislock: fence key <key> does not hold an integer".
local token, meta, ttl, limit = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local fenced = ARGV[5] == "1"
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local expired = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", now)
if #expired > 0 then
  redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
  -- In chunks: unpack of too many values overflows Lua's stack.
  for i = 1, #expired, 1000 do
    redis.call("HDEL", KEYS[2], unpack(expired, i, math.min(i + 999, #expired)))
  end
end

local mine = redis.call("ZSCORE", KEYS[1], token)
local kept = nil
local live = redis.call("ZCARD", KEYS[1])
if mine then
  kept = string.match(redis.call("HGET", KEYS[2], token) or "", "^(%d+/?%x*):")
elseif live >= limit then
  local first = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
  local ms = tonumber(first[2]) - now
  if ms < 1 then ms = 1 end
  return -(ms + 1)
end

local fence, tag = 0, nil
if fenced then
  tag = string.sub(redis.sha1hex(KEYS[3]), 1, 8)
  local same = kept and string.match(kept, "^(%d+)/" .. tag .. "$")
  if same and same ~= "0" then
    fence = tonumber(same)
  else
    local cur = redis.call("GET", KEYS[3]) or "0"
    if not string.match(cur, "^%d+$") or tonumber(cur) >= 9007199254740992 then
      return redis.error_reply("ERR redislock: fence key " .. KEYS[3] .. " does not hold an integer")
    end
    local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
    fence = math.max(tonumber(cur) + 1, us)
    redis.call("SET", KEYS[3], string.format("%.0f", fence))
  end
end

local field = string.format("%.0f", fence)
if tag then field = field .. "/" .. tag end
local expiry = string.format("%.0f", now + ttl)
redis.call("ZADD", KEYS[1], expiry, token)
-- The set expires with its last permit: it is new (no permit was live), or
-- its expiry, the highest score so far, only grows here.
if live == 0 then
  redis.call("PEXPIREAT", KEYS[1], expiry)
else
  redis.call("PEXPIREAT", KEYS[1], expiry, "GT")
end
-- A permit without fence token and metadata needs no hash field.
if field == "0" and meta == "" then
  if mine then redis.call("HDEL", KEYS[2], token) end
else
  redis.call("HSET", KEYS[2], token, field .. ":" .. meta)
  redis.call("PEXPIREAT", KEYS[2], redis.call("PEXPIRETIME", KEYS[1]))
end
return fence
