-- leave.lua: a waiter gives up (see WaitForRelease): it leaves every wait
-- queue of its lock and passes on a grant it was woken with, if any.
-- Calls handover() and clock() from handover.lua, which scripts.go prepends.
--
-- KEYS[1..n]       the lock keys.
-- KEYS[n+1..2n]    the wait queue of each lock key (a sorted set).
-- KEYS[2n+1..3n]   the wake-up list of each lock key.
-- KEYS[3n+1]       the waiter's grant list (see obtain.lua).
-- ARGV[1]     the waiter id.
-- ARGV[2]     how long (ms) a key handed over stays reserved.
-- ARGV[3]     how long (ms) a registration lasts.
-- ARGV[4]     optional: the id of the waiter of this process that waits
--             next for key ARGV[5] (1-based), or "": its registration is
--             renewed there, if it still has one, as it takes this waiter's
--             place (only if: that waiter may be giving up at this moment
--             too, and must not be registered again). The caller names it
--             only when its registration is old enough to lapse during its
--             block.
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
local next, j = ARGV[4], tonumber(ARGV[5])
if next and next ~= "" and j and j >= 1 and j <= n then
  local life = tonumber(ARGV[3])
  local _, now = clock()
  if redis.call("ZADD", KEYS[n + j], "XX", "CH", now + life, next) == 1 then
    redis.call("PEXPIRE", KEYS[n + j], life)
  end
end
local grant = redis.call("LPOP", KEYS[3 * n + 1])
if not grant then return 0 end
redis.call("DEL", KEYS[3 * n + 1])
-- "~" is the placeholder a registration leaves there (obtain.lua).
if grant == "~" then return 0 end
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
