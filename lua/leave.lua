-- leave.lua: a waiter gives up (see WaitForRelease): it leaves the line of
-- every lock key, and passes on a key reserved for it, if any.
-- Calls handover() from handover.lua, which scripts.go prepends.
--
-- KEYS[1..n]       the lock keys.
-- KEYS[n+1..2n]    the line of each lock key (handover.lua).
-- KEYS[2n+1..3n]   the liveness set of each lock key.
-- ARGV[1]     the waiter id.
--
-- A key reserved for the waiter is handed over to the next live waiter of
-- its line, or deleted when there is none.
--
-- Reply, an integer: how many keys were reserved for the waiter.
local waiter = ARGV[1]
local mine = reserved_for(waiter)
local n = #KEYS / 3
local passed = 0
for i = 1, n do
  gone(KEYS[n + i], KEYS[2 * n + i], waiter)
  if redis.call("GET", KEYS[i]) == mine then
    handover(KEYS[i], KEYS[n + i], KEYS[2 * n + i])
    passed = passed + 1
  end
end
return passed
