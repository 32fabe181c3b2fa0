-- semaphore_leave.lua: a waiter of a semaphore gives up (see
-- WaitForRelease): it leaves the wait queue and passes on a permit slot
-- reserved for a grant it was woken with, if any. leave.lua's contract
-- (internal/handoff) for one key.
-- Calls semaphore_lib.lua and handover.lua, which scripts.go prepends.
--
-- KEYS[1]   the semaphore key (sorted set, see semaphore_acquire.lua).
-- KEYS[2]   its wait queue, KEYS[3] its wake-up list (handover.lua).
-- KEYS[4]   the waiter's grant list (see semaphore_acquire.lua).
-- ARGV[1]   the waiter id.
-- ARGV[2]   how long (ms) a slot handed over stays reserved.
-- ARGV[3]   how long (ms) a registration lasts.
-- ARGV[4]   optional: the id of the waiter of this process that waits
--           next, or "": its registration is renewed, if it still has one,
--           as it takes this waiter's place (as in leave.lua).
--
-- The grant list is emptied (so deleted). Reply, an integer: 1 when a reserved slot was
-- passed on (or freed, with no live waiter), else 0.
local waiter, reserve = ARGV[1], ARGV[2]
local _, now = clock()
redis.call("ZREM", KEYS[2], waiter)
local next = ARGV[4]
if next and next ~= "" then
  if redis.call("ZADD", KEYS[2], "XX", "CH", string.format("%.0f", now + tonumber(ARGV[3])), next) == 1 then
    redis.call("PEXPIRE", KEYS[2], ARGV[3])
  end
end
-- Taken whole (a grant at its head, then the placeholder "~" that a
-- registration leaves there), which deletes it.
local got = redis.call("LPOP", KEYS[4], 2)
local grant = got and got[1]
if not grant or grant == "~" then return 0 end
local score = redis.call("ZSCORE", KEYS[1], grant)
if not score or tonumber(score) <= now then return 0 end
redis.call("ZREM", KEYS[1], grant)
handOn(KEYS[1], KEYS[2], KEYS[3], reserve, now, 1, 0)
return 1
