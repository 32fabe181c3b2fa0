-- semaphore_leave.lua: a waiter of a semaphore gives up (see
-- WaitForRelease): it leaves the line, and passes on a permit slot
-- reserved for it, if any. leave.lua's contract (internal/handoff) for one
-- key. Calls semaphore_lib.lua and handover.lua, which scripts.go prepends.
--
-- KEYS[1]   the semaphore key (sorted set, see semaphore_acquire.lua).
-- KEYS[2]   its line, KEYS[3] its liveness set (handover.lua).
-- ARGV[1]   the waiter id.
--
-- Reply, an integer: 1 when a reserved slot was passed on (or freed, with
-- no live waiter), else 0.
local waiter = ARGV[1]
local _, now = clock()
gone(KEYS[2], KEYS[3], waiter)
local score = redis.call("ZSCORE", KEYS[1], "~" .. waiter)
if not score or tonumber(score) <= now then return 0 end
redis.call("ZREM", KEYS[1], "~" .. waiter)
handOn(KEYS[1], KEYS[2], KEYS[3], now, 1)
return 1
