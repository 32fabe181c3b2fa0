-- obtain.lua: take every lock key, or none of them; optionally, register
-- the caller as a waiter in the line of the key that holds it up (see
-- WaitForRelease and handover.lua, which scripts.go prepends).
--
-- KEYS[1..n]      the lock keys.
-- KEYS[n+1]       the fence counter key; present only when ARGV[4] is not "0".
-- Then, only when ARGV[5] is a waiter id, with f = n or n+1:
-- KEYS[f+1..f+n]      the line of each lock key (handover.lua).
-- KEYS[f+n+1..f+2n]   the liveness set of each lock key.
--
-- ARGV[1]     the token.
-- ARGV[2]     the metadata.
-- ARGV[3]     the TTL in milliseconds (>= 1, checked by the caller).
-- ARGV[4]     "0" without a fence counter key; with one (it follows the lock
--             keys), the counter's tag: the first 8 hex digits of the SHA-1
--             of its key name, which the caller computes.
-- ARGV[5]     optional: the waiter id (its claim window after its last
--             ".", see handover.lua). "" for no waiter, but the reply of a
--             waiter when the keys are held (the code, with the PTTL): a
--             caller that polls times its next attempt by it.
-- ARGV[6]     how long (ms) the waiter's registration lasts.
-- ARGV[7]     "1" for the waiter's first attempt: it is in no line yet,
--             and takes free keys as any caller does. "0" for a later one:
--             a key reserved for the waiter counts as free, and a free key
--             that a live waiter who arrived before it is in line for goes
--             to that waiter instead (handover.lua). "2" for a first
--             attempt sent in one pipeline with the waiter's first block (a
--             releaser that asks again at once, see internal/handoff's
--             Request.Requeue): it registers the waiter and never takes the
--             keys; a free key 1 goes to the oldest live waiter of its line,
--             which may be this one.
--
-- A lock key holds the plain string "<#token>:<token>:<fence>:<metadata>"
-- (lib.lua), where <fence> is "0" for a lock without fence counter and
-- "<fence token>/<tag>" for a fenced one. A key reserved for a waiter
-- (handover.lua) is held for everyone else.
--
-- Reply without a waiter, an integer:
--   1      not obtained: a key is held by another (no PTTL is read;
--          with ARGV[5] "", the code of a waiter's reply instead).
--   else   obtained; the fence token, or 0 when there is no fence counter.
--          A fence token is never below the server's time in microseconds,
--          so never 1. (0 and 1 are replies that go-redis boxes without
--          allocating, unlike a PTTL.)
-- Reply with a waiter: the same integer when obtained; when not, an array
-- (with ARGV[7] "2", whose reply the caller does not read, the code alone)
--   {code, i, reserved}: code -1 when a key held by another has no expiry,
--   else -(ms + 1), where ms is the longest time the keys held by others
--   can stay so (a reservation's: its waiter's claim window, no PTTL read);
--   i the index (1-based) of the lock key that blocks longest; reserved 1
--   when that key is reserved for another waiter, else 0. The waiter is
--   then registered in the line of key i (and, but for a first attempt,
--   taken out of the others' lines); a key reserved for it that it could
--   not use goes to the next waiter of that key. When obtained, the waiter
--   is taken out of every line.
--
-- Fence tokens: a new acquisition sets the counter to
-- max(counter + 1, server TIME in microseconds) (a missing counter counts
-- as 0), so tokens strictly increase
-- and do not fall back when the counter is lost (restart without persistence,
-- failover before replication). An acquisition that continues one of ours
-- (every key already held with our token and one fence from the same
-- counter) keeps its token; one that names another counter takes a new
-- token from that counter.
-- A counter that is not a decimal integer below 2^53 keeps its value and TTL
-- (it is written back as it was) and the reply is the error "ERR redislock:
-- fence key <key> does not hold an integer"; one of another type, Redis's
-- WRONGTYPE error. Either way no lock key is left written.
local token, meta, ttl = ARGV[1], ARGV[2], ARGV[3]
local fenced = ARGV[4] ~= "0"
local prefix = owner(token)

-- micros() returns the server's time in µs, and its decimal text (exact:
-- about 1.8e15, below 2^53; %d formats it as a 64-bit integer).
local function micros()
  local t = clock_time()
  local now = t[1] * 1000000 + t[2]
  return now, string.format("%d", now)
end

-- advance(counter, now, s) moves the fence counter past every token it
-- gave, to now (the server's TIME in µs, s its decimal text) in the usual
-- case: one write, whose GET returns what the counter held. Only a counter
-- at or ahead of the clock (or two acquisitions within a µs) takes a
-- second write, to cur + 1. KEEPTTL, so that a counter given a TTL keeps
-- it. It returns the new token and its text; or nil and the error reply
-- when the counter is not a string (WRONGTYPE) or not a plain decimal
-- integer that Lua's doubles hold exactly (below 2^53: "inf", "1e300",
-- "0x10" or " 12" would make the next token wrong), which is then put back
-- as it was.
local function advance(counter, now, s)
  local cur = redis.pcall("SET", counter, s, "KEEPTTL", "GET")
  if type(cur) == "table" then return nil, cur end
  if not cur then return now, s end
  if not string.match(cur, "^%d+$") or tonumber(cur) >= 9007199254740992 then
    redis.call("SET", counter, cur, "KEEPTTL")
    return nil, redis.error_reply("ERR redislock: fence key " .. counter .. " does not hold an integer")
  end
  cur = tonumber(cur)
  if cur < now then return now, s end
  local fence = cur + 1
  s = string.format("%.0f", fence)
  redis.call("SET", counter, s, "KEEPTTL")
  return fence, s
end

-- One free key without waiter (ARGV[5] absent, or "" for a poll), before
-- anything else is worked out: one SET NX takes it. Fenced, the key is
-- taken with the clock's token first, so that the SET NX also tells
-- whether it was free (no GET), and the counter is written only when it
-- was. A key that exists (held, reserved, or ours for a re-entrant
-- obtain) goes the general way below.
if not ARGV[5] or ARGV[5] == "" then
  if not fenced and #KEYS == 1 then
    if redis.call("SET", KEYS[1], prefix .. "0:" .. meta, "NX", "PX", ttl) then return 0 end
  elseif fenced and #KEYS == 2 then
    local now, s = micros()
    if redis.call("SET", KEYS[1], prefix .. s .. "/" .. ARGV[4] .. ":" .. meta, "NX", "PX", ttl) then
      local fence, fs = advance(KEYS[2], now, s)
      if not fence then
        redis.call("DEL", KEYS[1])
        return fs
      end
      if fence ~= now then
        redis.call("SET", KEYS[1], prefix .. fs .. "/" .. ARGV[4] .. ":" .. meta, "PX", ttl)
      end
      return fence
    end
  end
end

local waiter = ARGV[5]
-- A plain attempt that times its next one by the holder's expiry.
local timed = waiter == ""
if timed then waiter = nil end
local n = #KEYS
if fenced then n = n - 1 end
if waiter then n = n / 3 end
local f = n
if fenced then f = n + 1 end
local mode = ARGV[7]
local requeue, later = mode == "2", mode == "0"
local life = tonumber(ARGV[6])
local mine = waiter and reserved_for(waiter)

local owned, kept, blocked, wait = 0, nil, false, 0
local blocker, reserved = 0, false
local granted, free = {}, {}
for i = 1, n do
  local v = redis.call("GET", KEYS[i])
  if not v then
    free[#free + 1] = i
  elseif owns(v, prefix) then
    owned = owned + 1
    local fv = string.match(v, "^(%d+/?%x*):", #prefix + 1)
    if kept == nil then kept = fv elseif kept ~= fv then kept = false end
  elseif later and v == mine then
    granted[#granted + 1] = i
  else
    if not waiter and not timed then return 1 end
    blocked = true
    local other = string.match(v, "^%d+:~(.*):0:$")
    local ms
    if other then
      -- A reservation lasts its waiter's claim window at most.
      ms = claim(other)
    elseif requeue then
      -- The caller does not read a requeue attempt's reply.
      ms = 1
    else
      ms = redis.call("PTTL", KEYS[i])
    end
    -- Under a millisecond left: say 1, since -(0 + 1) would read "no expiry".
    if ms == 0 then ms = 1 end
    local longer = blocker == 0 or (wait >= 0 and (ms < 0 or ms > wait))
    if ms < 0 then wait = -1 elseif wait >= 0 and ms > wait then wait = ms end
    if longer then
      blocker = i
      reserved = other ~= nil
    end
  end
end

local now
if waiter and not blocked and (later or requeue) and #free > 0 then
  -- A free key goes to the live waiter that arrived first (a requeue,
  -- which has just arrived, registers first and may be that waiter): the
  -- line is not passed by a later arrival.
  now = select(2, clock())
  if requeue then waiting(KEYS[f + 1], KEYS[f + n + 1], waiter, now, life) end
  for _, i in ipairs(free) do
    local line, alive = KEYS[f + i], KEYS[f + n + i]
    -- Our place, read before oldest() may drop our entry (a grant we
    -- answered late lapsed it): we are alive, and keep it.
    local ours = redis.call("ZSCORE", line, waiter)
    local first, arrived = oldest(line, alive, now)
    if first and (requeue or (first ~= waiter and ahead(arrived, first, ours, waiter))) then
      local c = grant(line, alive, first, now)
      redis.call("SET", KEYS[i], reserved_for(first), "PX", c)
      if first ~= waiter then
        blocked = true
        if wait >= 0 and c > wait then wait = c end
        if blocker == 0 or wait == c then blocker, reserved = i, true end
      end
    end
  end
  if requeue then return -(claim(waiter) + 1) end
end

if blocked or requeue then
  local code = -1
  if wait >= 0 then code = -(wait + 1) end
  if not waiter then return code end
  if blocker == 0 then blocker = 1 end
  if not now then now = select(2, clock()) end
  if later and n > 1 then
    for i = 1, n do
      if i ~= blocker then gone(KEYS[f + i], KEYS[f + n + i], waiter) end
    end
  end
  waiting(KEYS[f + blocker], KEYS[f + n + blocker], waiter, now, life)
  -- Keys reserved for us that we cannot use now go to the next waiter.
  for _, i in ipairs(granted) do
    handover(KEYS[i], KEYS[f + i], KEYS[f + n + i])
  end
  -- The caller does not read a requeue attempt's reply: one integer
  -- costs the server less than an array.
  if requeue then return code end
  local r = 0
  if reserved then r = 1 end
  return {code, blocker, r}
end

local fence, tag, field = 0, nil, "0"
if fenced then
  -- The fence field of a fenced lock is "<token>/<tag>", the tag naming the
  -- counter it came from: a re-entrant obtain keeps its token only when it
  -- names the same counter; with another it takes a new token from that one.
  tag = ARGV[4]
  local same = kept and string.match(kept, "^(%d+)/" .. tag .. "$")
  if owned == n and same and same ~= "0" then
    fence, field = tonumber(same), same
  else
    fence, field = advance(KEYS[n + 1], micros())
    if not fence then
      for _, i in ipairs(granted) do
        handover(KEYS[i], KEYS[f + i], KEYS[f + n + i])
      end
      return field
    end
  end
  field = field .. "/" .. tag
end

local value = prefix .. field .. ":" .. meta
for i = 1, n do
  redis.call("SET", KEYS[i], value, "PX", ttl)
end
if waiter and later then
  for i = 1, n do
    gone(KEYS[f + i], KEYS[f + n + i], waiter)
  end
end
return fence
