-- semaphore_acquire.lua: take one permit of a counting semaphore, when
-- fewer than the caller's limit are live; optionally, register the caller
-- as a waiter when they are not (see WaitForRelease). It follows the
-- waiter contract of obtain.lua (internal/handoff/doc.go) for one key.
-- Calls semaphore_lib.lua and handover.lua, which scripts.go prepends.
--
-- KEYS[1]   the semaphore key: a sorted set of permit tokens, each scored by
--           its expiry in server milliseconds (TIME), and of reservations
--           (semaphore_lib.lua).
-- KEYS[2]   its permit hash (same slot): token -> "<fence>:<metadata>".
-- KEYS[3]   the fence counter key; present only when ARGV[5] is "1".
-- Then, only when ARGV[6] is given (a waiter), with f = 2 or 3:
-- KEYS[f+1] the key's line, KEYS[f+2] its liveness set (handover.lua).
--
-- ARGV[1]   the token.
-- ARGV[2]   the metadata.
-- ARGV[3]   the TTL in milliseconds (>= 1, checked by the caller).
-- ARGV[4]   the caller's limit (>= 1, checked by the caller).
-- ARGV[5]   "1" when a fence counter key follows, "0" otherwise.
-- ARGV[6]   optional: the waiter id.
-- ARGV[7]   how long (ms) the waiter's registration lasts.
-- ARGV[8]   "1" for the waiter's first attempt (it is in no line yet),
--           "0" for a later one (obtain.lua's ARGV[7]; a requeue, "2", is
--           not sent for semaphores).
--
-- A member is live while its score is above the server's time now; one
-- whose score is now or earlier no longer counts, and is pruned here, with
-- its hash field (O(log n + m) for m expired members, each pruned once).
-- A waiter hands free slots to the live waiters that arrived before it (to
-- every live waiter, when it is in no line: slots freed by an expiry it
-- noticed only, for a first attempt) before it may take one, up to its
-- limit, as a release would have (semaphore_lib.lua's handOn).
-- <fence> is "0" for a permit without fence counter and "<fence
-- token>/<tag>" for a fenced one, <tag> being the first 8 hex digits of the
-- SHA-1 of the counter's key name (as for locks); a permit without fence
-- token and metadata has no field. Both keys expire when the last live
-- permit does, or later (PEXPIREAT to the highest score written; a release
-- does not shorten it).
--
-- A waiter whose reservation is live takes that slot when fewer than its
-- limit are live besides it; otherwise (mixed limits) it passes the slot on
-- to the next waiter that arrived after it, and stays registered at its
-- place.
--
-- A token that holds a live permit already takes it again (re-entrant): its
-- expiry and metadata are reset, and its fence token is kept when it came
-- from the same counter.
--
-- Reply, an integer:
--   >= 0   obtained; the fence token (0 when there is no fence counter).
--   < -1   not obtained: limit or more permits are live; -(ms + 1), where
--          ms is the time until the first of them expires (>= 1).
-- Reply with a waiter, when not obtained: {code, 1, reserved}, code as
-- above for the first live permit that is not a reservation; reserved 1
-- when only reservations were found (then code is for the first of them).
-- A counter that is not a decimal integer below 2^53 is left alone and the
-- reply is the error "ERR redislock: fence key <key> does not hold an integer".
local token, meta, ttl, limit = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local fenced = ARGV[5] == "1"
local waiter = ARGV[6]
local later = waiter and ARGV[8] == "0"
local f = 2
if fenced then f = 3 end
local line, alive = KEYS[f + 1], KEYS[f + 2]
local t, now = clock()

-- The first member tells whether anything expired: most calls prune
-- nothing and need no more.
local first = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
local freed, live, mine = 0, 0, nil
if first[1] then
  if tonumber(first[2]) <= now then
    freed = prune(KEYS[1], KEYS[2], now)
  end
  mine = redis.call("ZSCORE", KEYS[1], token)
  live = redis.call("ZCARD", KEYS[1])
end
-- Our reservation, if it is still live (a lapsed one was pruned).
local slot = later and live > 0 and redis.call("ZSCORE", KEYS[1], "~" .. waiter)
if slot then live = live - 1 end
-- Our place in line (a first attempt has none).
local ours = later and redis.call("ZSCORE", line, waiter)

-- Free slots go to the live waiters that arrived before us, as a release
-- would have given them, before we may take one.
if waiter and (later or freed > 0) and not mine then
  local free = limit - live
  if slot then free = free - 1 end
  if not later then free = math.min(free, freed) end
  if free > 0 then
    live = live + handOn(KEYS[1], line, alive, now, free, nil, ours or nil, waiter)
  end
end

local kept = nil
if mine then
  kept = string.match(redis.call("HGET", KEYS[2], token) or "", "^(%d+/?%x*):")
elseif live >= limit then
  if not waiter then
    local ms = tonumber(first[2]) - now
    if freed > 0 then
      local again = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
      ms = tonumber(again[2]) - now
    end
    if ms < 1 then ms = 1 end
    return -(ms + 1)
  end
  waiting(line, alive, waiter, now, tonumber(ARGV[7]))
  if slot then
    -- Granted a slot our limit does not let us take: the next waiter may
    -- have a larger one.
    redis.call("ZREM", KEYS[1], "~" .. waiter)
    handOn(KEYS[1], line, alive, now, 1, ours or now)
  end
  -- When the holders can expire: the first live permit that is not a
  -- reservation (a reservation is taken, or noticed when it lapses).
  local score, reserved = first[2], 0
  if freed > 0 or slot or not first[1] or string.sub(first[1], 1, 1) == "~" then
    -- The set changed here, or starts with a reservation: look further.
    local head = redis.call("ZRANGE", KEYS[1], 0, 15, "WITHSCORES")
    score, reserved = head[2], 1
    for i = 1, #head, 2 do
      if string.sub(head[i], 1, 1) ~= "~" then
        score, reserved = head[i + 1], 0
        break
      end
    end
  end
  local ms = 1
  if score then ms = tonumber(score) - now end
  if ms < 1 then ms = 1 end
  return {-(ms + 1), 1, reserved}
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
      if slot then
        -- The slot we were granted goes on to the next waiter.
        redis.call("ZREM", KEYS[1], "~" .. waiter)
        handOn(KEYS[1], line, alive, now, 1)
      end
      return redis.error_reply("ERR redislock: fence key " .. KEYS[3] .. " does not hold an integer")
    end
    local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
    fence = math.max(tonumber(cur) + 1, us)
    redis.call("SET", KEYS[3], string.format("%.0f", fence))
  end
end

if slot then
  -- Our reservation becomes our permit (or, re-entrant, is not needed and
  -- is handed on).
  redis.call("ZREM", KEYS[1], "~" .. waiter)
  if mine then
    live = live + handOn(KEYS[1], line, alive, now, 1)
  end
end
local field = string.format("%.0f", fence)
if tag then field = field .. "/" .. tag end
local expiry = string.format("%.0f", now + ttl)
redis.call("ZADD", KEYS[1], expiry, token)
-- The set expires with its last permit: it is new (nothing else was live:
-- a reservation we took was its last member), or its expiry, the highest
-- score so far, only grows here.
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
if later then gone(line, alive, waiter) end
return fence
