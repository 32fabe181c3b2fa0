-- handover.lua: the functions that pass a lock key (or a permit) to the next waiter.
-- It is not a script of its own: scripts.go prepends it to obtain.lua,
-- release.lua and leave.lua, which call it for keys they may give away.
--
-- handover(key, queue, wake, reserve, tag, join, life)
--   key      a lock key that the caller may give away: held by the caller's
--            token, or reserved for a grant the caller holds.
--   queue    the key's wait queue: a sorted set of waiter ids, each scored
--            with the server time (ms) at which its registration lapses
--            (registered or renewed at that time less the registration's
--            life: the lowest score is the oldest registration).
--   wake     the key's wake-up list, on which waiting clients block (BLMOVE).
--   reserve  how long (ms) the key stays reserved for the woken waiter.
--   tag      text that keeps the grants of one script apart (the key's index).
--
-- Registrations that have lapsed (waiters that died or left without a
-- word) do not count; the next registration drops them. When live waiters
-- remain, the key is handed over: it becomes a reservation, the plain
-- string "<#grant>:<grant>:0:" (so that every client, bsm/redislock
-- included, sees it held) that expires after reserve ms, and the grant
-- "~<seconds>.<microseconds>.<tag>" (the server's TIME) is left alone on
-- the wake list. Redis moves it to the grant list of the client that has
-- been blocked on the wake list longest, or, when none is blocked, of the next
-- that blocks; the attempt that client sent after its block then obtains
-- the key with the grant (obtain.lua treats a key reserved for the grant
-- it finds as free). When no live waiter remains, the key and its wake
-- list are deleted.
--
-- The client blocked longest is normally the waiter whose registration is
-- the oldest live one (the lowest positive score): that registration is
-- marked, its score negated (a mark lapses when the registration would
-- have). Its waiter renews it when it attempts again, and leaves the queue
-- when it takes the grant. A mark does not count as a waiter: when a
-- handover finds only marks, it deletes the key and pushes for each a
-- wake-up without reservation ("~free") onto the wake list. It keeps the
-- marks until they lapse: their waiters may be alive and asleep in their
-- group, and the member that leads before them renews their registration
-- (when it may have been marked in their place, or could lapse during
-- their block) as it passes the lead on (obtain.lua, leave.lua) only if
-- they still have one; dropped, a waiter would block unregistered, and a
-- release that finds the queue empty wakes no one. A waiter that died
-- registered thus costs one reservation with no taker. A marked waiter may also be alive and
-- blocked (Redis's order of blocked clients and the order of registrations
-- differ by the instant between a registration and its block): its
-- wake-up reaches it at once, and it finds the key free.
--
-- pass(queue, wake, reserve, tag, key, keep, join, life) is handover() without the
-- reservation, for a primitive whose reservation is not the lock key (a
-- permit slot, say): it marks the oldest live registration, leaves the
-- wake list holding one grant with a TTL of reserve ms, and returns the
-- grant, for the caller to reserve what it hands over to it. With no live
-- waiter it deletes the wake list (and key, when given), pushes the marks'
-- wake-ups, and returns nil. With keep true (several grants of one
-- resource may be in flight at once: a semaphore's permit slots) the wake
-- list is never emptied: the grant is pushed behind those already there.
--
-- join, life (optional, both or neither): a registration that the caller
-- adds to queue when a live waiter is found (a releaser that asks again at
-- once, release.lua): waiter id join, until life ms from now. It goes in
-- the ZADD that marks, so it costs no command of its own; with no live
-- waiter nobody is registered.
--
-- Cost, with live waiters: TIME (once per script, see clock()), ZRANGE,
-- ZADD (the mark, and join), RPUSH and PEXPIRE; a DEL and an RPUSH more
-- when the wake list still held a grant that no client took (none was
-- blocked since).

-- clock() returns the server's TIME reply and the time it gives in
-- milliseconds; clock_time() the reply alone, for a caller that needs no
-- milliseconds (a fenced obtain's microseconds). TIME is called once per
-- script, at the first call of either: every step of one script sees the
-- same instant, and a script that hands over several keys asks for it once.
local clock_ms, clock_t
local function clock_time()
  if not clock_t then clock_t = redis.call("TIME") end
  return clock_t
end
local function clock()
  if not clock_ms then
    local t = clock_time()
    clock_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clock_t, clock_ms
end

local function pass(queue, wake, reserve, tag, key, keep, join, life)
  local t, now = clock()
  -- Scores are whole milliseconds (numbers are sent to Redis as they are:
  -- no formatting in Lua). Live registrations score above now; lapsed ones
  -- (in (0, now]) and lapsed marks (in [-now, 0)) are passed over here, and
  -- dropped by the next registration (obtain.lua) or with the queue.
  local first = redis.call("ZRANGE", queue, now + 1, "+inf", "BYSCORE", "LIMIT", 0, 1, "WITHSCORES")
  if not first[1] then
    -- Live marks: scores below -now (at most 16 wake-ups).
    local marked = #redis.call("ZRANGE", queue, -(now + 1), "-inf", "BYSCORE", "REV", "LIMIT", 0, 16)
    if key then redis.call("DEL", key, wake) elseif not keep then redis.call("DEL", wake) end
    for _ = 1, marked do
      redis.call("RPUSH", wake, "~free")
    end
    if marked > 0 then
      redis.call("PEXPIRE", wake, reserve)
    end
    return nil
  end
  -- The mark: the score's text negated (first[2], a whole positive number,
  -- is not converted to a number and back).
  if join then
    redis.call("ZADD", queue, "-" .. first[2], first[1], now + life, join)
  else
    redis.call("ZADD", queue, "XX", "-" .. first[2], first[1])
  end
  -- Unique: TIME's seconds have a fixed width, and tag keeps the grants of
  -- one script apart.
  local grant = "~" .. t[1] .. "." .. t[2] .. "." .. tag
  if redis.call("RPUSH", wake, grant) > 1 and not keep then
    -- Grants that no client took (none blocked since they were pushed):
    -- their reservations have lapsed or been taken over. Only ours stays.
    -- (DEL, as every handover did before: no command that a user's ACL
    -- may lack after the writes above.)
    redis.call("DEL", wake)
    redis.call("RPUSH", wake, grant)
  end
  redis.call("PEXPIRE", wake, reserve)
  return grant
end

-- Returns 1 when the key was handed over, 0 when it was deleted.
local function handover(key, queue, wake, reserve, tag, join, life)
  local grant = pass(queue, wake, reserve, tag, key, nil, join, life)
  if not grant then return 0 end
  redis.call("SET", key, owner(grant) .. "0:", "PX", reserve)
  return 1
end
