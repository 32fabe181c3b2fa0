-- release.lua: delete the lock keys that are still ours, or hand each over
-- to its next waiter (see WaitForRelease) when waiters are registered.
-- Calls handover() from handover.lua, which scripts.go prepends.
--
-- KEYS[1..n]       the lock keys.
-- Then, only when ARGV[2] is given:
-- KEYS[n+1..2n]    the wait queue of each lock key (a sorted set).
-- KEYS[2n+1..3n]   the wake-up list of each lock key.
-- ARGV[1]     the token.
-- ARGV[2]     optional: how long (ms) a key handed over stays reserved for
--             the woken waiter. Without it (keys that cannot have
--             companions in their slot), keys are only deleted.
--
-- A key is ours when its value starts with owner(token) (lib.lua).
-- Keys held by another, or gone, are left alone. With ARGV[2], each key of
-- ours whose queue has live waiters is handed over to the one that has
-- waited longest (handover.lua); the others are deleted.
--
-- Reply: how many keys were ours (deleted or handed over), an integer;
-- with ARGV[2], the integer handed * (n + 1) + ours, handed being how many
-- of them were handed over (one integer: an array reply costs the server
-- more). Fewer than n ours means the lock had been lost, at least in part.
local token = ARGV[1]
local reserve = ARGV[2]
local n = #KEYS
if reserve then n = n / 3 end
local prefix = owner(token)
local deleted, handed = 0, 0
for i = 1, n do
  local v = redis.call("GET", KEYS[i])
  if owns(v, prefix) then
    if reserve then
      handed = handed + handover(KEYS[i], KEYS[n + i], KEYS[2 * n + i], reserve, i)
      deleted = deleted + 1
    else
      deleted = deleted + redis.call("DEL", KEYS[i])
    end
  end
end
if reserve then return handed * (n + 1) + deleted end
return deleted
