-- leave.lua: a waiter gives up (see WaitForRelease): it leaves every wait
-- queue of its lock and passes on a grant it was woken with, if any.
-- Calls handover() from handover.lua, which scripts.go prepends.
--
-- KEYS[1..n]       the lock keys.
-- KEYS[n+1..2n]    the wait queue of each lock key (a sorted set).
-- KEYS[2n+1..3n]   the wake-up list of each lock key.
-- KEYS[3n+1]       the waiter's grant list (see obtain.lua).
-- ARGV[1]     the waiter id.
-- ARGV[2]     how long (ms) a key handed over stays reserved.
--
-- A key reserved for the grant found in the grant list (its value starts
-- with "<#grant>:<grant>:") is handed over to the next waiter of its queue,
-- or deleted when there is none (handover.lua). The grant list is deleted.
--
-- Reply, an integer: how many keys were reserved for the grant.
local waiter, reserve = ARGV[1], ARGV[2]
local n = (#KEYS - 1) / 3
for i = 1, n do
  redis.call("ZREM", KEYS[n + i], waiter)
end
local grant = redis.call("LPOP", KEYS[3 * n + 1])
if not grant then return 0 end
redis.call("DEL", KEYS[3 * n + 1])
local gprefix = owner(grant)
local passed = 0
for i = 1, n do
  local v = redis.call("GET", KEYS[i])
  if owns(v, gprefix) then
    handover(KEYS[i], KEYS[n + i], KEYS[2 * n + i], reserve, i)
    passed = passed + 1
  end
end
return passed
