-- obtain.lua: take every lock key, or none of them; optionally, register
-- the caller as a waiter when the lock is held (see WaitForRelease).
-- Calls handover() and clock() from handover.lua, which scripts.go prepends.
--
-- KEYS[1..n]      the lock keys.
-- KEYS[n+1]       the fence counter key; present only when ARGV[4] is not "0".
-- Then, only when ARGV[5] is given (a waiter), with f = n or n+1:
-- KEYS[f+1..f+n]      the wait queue of each lock key (a sorted set).
-- KEYS[f+n+1..f+2n]   the wake-up list of each lock key.
-- KEYS[f+2n+1]        the waiter's own grant list: a grant the waiter was
--                     woken with (moved there by BLMOVE) is taken from it.
--                     A registration leaves it holding the placeholder "~"
--                     with a TTL of twice ARGV[6], so that BLMOVE pushes
--                     onto a list that expires by itself.
-- KEYS[f+2n+2]        only when ARGV[8] starts with "+": the grant list
--                     of that successor.
--
-- ARGV[1]     the token.
-- ARGV[2]     the metadata.
-- ARGV[3]     the TTL in milliseconds (>= 1, checked by the caller).
-- ARGV[4]     "0" without a fence counter key; with one (it follows the lock
--             keys), the counter's tag: the first 8 hex digits of the SHA-1
--             of its key name, which the caller computes (fenceArg in token.go).
-- ARGV[5]     optional: the waiter id. The caller waits for the lock.
--             "" for no waiter, but the reply of a waiter when the keys
--             are held (the code, with the PTTL): a caller that polls
--             times its next attempt by it (internal/handoff).
-- ARGV[6]     how long (ms) the waiter's registration lasts.
-- ARGV[7]     how long (ms) a key handed over stays reserved (see handover.lua).
-- ARGV[8]     optional: the id of the waiter of this process that waits
--             next for key ARGV[9] (1-based), or "": when the lock is
--             obtained, its registration in that key's queue, if it still
--             has one, is renewed, so that it counts as a waiter from the
--             moment it blocks in our place (only if: it may have obtained
--             or left meanwhile, and must not be registered again). The
--             caller names it only when its registration is old enough to
--             lapse during its block. "+<id>" names one that has not
--             registered (it joined its group with a requeue, see
--             internal/handoff's Request.Successors), whose grant list is
--             then the last key: when the lock is obtained it is registered
--             there as a failed attempt would register it (lapsed entries
--             dropped first), and its grant list gets the placeholder.
-- ARGV[10]    optional: "1" when this is the waiter's first attempt: it has
--             no registration and no grant list yet, so neither is looked
--             at (no LPOP, no ZREM). "2" for a first attempt sent in one
--             pipeline with the waiter's first block (a releaser that asks
--             again at once, see internal/handoff's Request.Requeue): as
--             "1", but it never takes the keys: where it would, it
--             registers the waiter in the queue
--             of key 1 and pushes a wake-up without reservation ("~free")
--             onto key 1's wake-up list with a TTL of ARGV[7] ms. The
--             client blocked longest on that list, a waiter that came
--             first or, when none blocks, the block that follows, gets it
--             and finds the keys free.
--
-- A lock key holds the plain string "<#token>:<token>:<fence>:<metadata>"
-- (lib.lua), where <fence> is "0" for a lock without fence counter and
-- "<fence token>/<tag>" for a fenced one, <tag> being the first 8 hex digits
-- of the SHA-1 of the counter's key name. A key reserved for the waiter's
-- grant (handover.lua) counts as free. For a waiter, the PTTL of a single
-- key reserved for another's grant is not read: its code says ARGV[7], the
-- longest a reservation lasts.
--
-- Reply without a waiter, an integer:
--   1      not obtained: a key is held by another (no PTTL is read;
--          with ARGV[5] "", the code of a waiter's reply instead).
--   else   obtained; the fence token, or 0 when there is no fence counter.
--          A fence token is never below the server's time in microseconds,
--          so never 1. (0 and 1 are replies that go-redis boxes without
--          allocating, unlike a PTTL.)
-- Reply with a waiter: the same integer when obtained; when not, an array
-- (with ARGV[10] "2", whose reply the caller does not read, the code alone,
-- -(ARGV[7] + 1) when the keys are held: no PTTL is read)
--   {code, i, reserved}: code -1 when a key held by another has no expiry,
--   else -(ms + 1), where ms is the longest remaining PTTL of the keys held
--   by others (when the lock can be free again); i the index (1-based) of
--   the lock key that blocks longest; reserved 1 when that key is a reservation for
--   another waiter's grant, else 0. The waiter is then registered in the
--   queue of key i only (removed from the others) until ARGV[6] ms from
--   now; a grant it could not use (another key is held) is handed over to
--   the next waiter of its key. Lapsed registrations and lapsed marks
--   of that queue (see handover.lua) are dropped first. When obtained, the waiter is removed from every queue (and
--   ARGV[8] renewed). When registered, its grant list holds only
--   the placeholder; when obtained (or on error), it is deleted.
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
-- A successor named "+<id>" (ARGV[8]) is registered, and its grant list
-- is the last key.
local adopt = waiter and string.byte(ARGV[8] or "", 1) == 43
local n = #KEYS
if fenced then n = n - 1 end
if adopt then n = n - 1 end
if waiter then n = (n - 1) / 3 end
local f = n
if fenced then f = n + 1 end

-- The grant list holds a placeholder, "~", pushed and given a TTL by the
-- waiter's registration, so that the BLMOVE that follows pushes a grant
-- onto a list that expires by itself, whatever becomes of the waiter. Its
-- head is the grant, if one came; it is taken whole (and so deleted).
local grants = KEYS[f + 2 * n + 1]
local requeue = ARGV[10] == "2"
local fresh = requeue or ARGV[10] == "1"
local grant = ""
if waiter and not fresh then
  local got = redis.call("LPOP", grants, 2)
  if got and got[1] ~= "~" then grant = got[1] end
end
local gprefix = owner(grant)
local owned, kept, blocked, wait = 0, nil, false, 0
local granted, blocker, reserved = nil, 0, false
for i = 1, n do
  local v = redis.call("GET", KEYS[i])
  if v then
    if owns(v, prefix) then
      owned = owned + 1
      local fv = string.match(v, "^(%d+/?%x*):", #prefix + 1)
      if kept == nil then kept = fv elseif kept ~= fv then kept = false end
    elseif grant ~= "" and owns(v, gprefix) then
      granted = i
    else
      if not waiter and not timed then return 1 end
      blocked = true
      local res = string.match(v, "^%d+:~") ~= nil
      local ms
      if requeue or (res and waiter and n == 1) then
        -- A waiter does not time its wake-up by a reservation, and the
        -- reply of a requeue attempt is not read.
        ms = tonumber(ARGV[7])
      else
        ms = redis.call("PTTL", KEYS[i])
      end
      -- Under a millisecond left: say 1, since -(0 + 1) would read "no expiry".
      if ms == 0 then ms = 1 end
      local longer = blocker == 0 or (wait >= 0 and (ms < 0 or ms > wait))
      if ms < 0 then wait = -1 elseif wait >= 0 and ms > wait then wait = ms end
      if longer then
        blocker = i
        reserved = res
      end
    end
  end
end
if blocked or (requeue and waiter) then
  local code = -1
  if wait >= 0 then code = -(wait + 1) end
  if not waiter then return code end
  if not blocked then blocker = 1 end
  local _, now = clock()
  local life = tonumber(ARGV[6])
  local queue = KEYS[f + blocker]
  -- The ZADD below replaces the registration in the queue of the blocker.
  if not fresh then
    for i = 1, n do
      if i ~= blocker then redis.call("ZREM", KEYS[f + i], waiter) end
    end
  end
  -- Lapsed registrations (scores in (0, now]) and lapsed marks of
  -- handovers (in [-now, 0), see handover.lua); live marks stay: their
  -- waiters may be blocked, and the next handover wakes them.
  redis.call("ZREMRANGEBYSCORE", queue, -now, now)
  redis.call("ZADD", queue, now + life, waiter)
  redis.call("PEXPIRE", queue, life)
  -- The placeholder outlives the next block: a waiter attempts at least
  -- every half registration, and blocks for at most a second plus a
  -- server tick.
  redis.call("RPUSH", grants, "~")
  redis.call("PEXPIRE", grants, 2 * life)
  if not blocked then
    -- The keys are free: wake the client blocked longest instead of
    -- taking them (code -1 then means nothing).
    redis.call("RPUSH", KEYS[f + n + 1], "~free")
    redis.call("PEXPIRE", KEYS[f + n + 1], ARGV[7])
  end
  if granted then
    handover(KEYS[granted], KEYS[f + granted], KEYS[f + n + granted], ARGV[7], granted)
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
      if granted then
        handover(KEYS[granted], KEYS[f + granted], KEYS[f + n + granted], ARGV[7], granted)
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
if waiter then
  if not fresh then
    for i = 1, n do
      redis.call("ZREM", KEYS[f + i], waiter)
    end
  end
  local next, j = ARGV[8], tonumber(ARGV[9])
  if next and next ~= "" and j and j >= 1 and j <= n then
    local life = tonumber(ARGV[6])
    local _, now = clock()
    if adopt then
      -- A successor that has not registered: its registration, as a
      -- failed attempt makes it, and its grant list's placeholder.
      local queue, theirs = KEYS[f + j], KEYS[#KEYS]
      redis.call("ZREMRANGEBYSCORE", queue, -now, now)
      redis.call("ZADD", queue, now + life, string.sub(next, 2))
      redis.call("PEXPIRE", queue, life)
      redis.call("RPUSH", theirs, "~")
      redis.call("PEXPIRE", theirs, 2 * life)
    elseif redis.call("ZADD", KEYS[f + j], "XX", "CH", now + life, next) == 1 then
      redis.call("PEXPIRE", KEYS[f + j], life)
    end
  end
end
return fence
