-- release.lua: hand each lock key that is still ours over to the next
-- waiter of its line (see WaitForRelease) when one is live, or delete it.
-- Calls handover() from handover.lua, which scripts.go prepends. A release
-- that hands nothing over runs delete.lua instead.
--
-- KEYS[1..n]       the lock keys.
-- KEYS[n+1..2n]    the line of each lock key (handover.lua).
-- KEYS[2n+1..3n]   the liveness set of each lock key.
-- ARGV[1]     the token.
-- ARGV[2]     optional, for a lock of one key: the id of a waiter that
--             the caller is about to be (a releaser that asks again at
--             once, see internal/handoff's Request.Registered). When the
--             key is handed over, that waiter joins the line behind the
--             one served, live for ARGV[4] ms. A key deleted (no live
--             waiter) registers no one.
-- ARGV[3]     with ARGV[2]: how long (ms) a registration lasts (the line's
--             expiry).
-- ARGV[4]     with ARGV[2]: how long (ms) that waiter is live unless it
--             attempts.
--
-- A key is ours when its value starts with owner(token) (lib.lua).
-- Keys held by another, or gone, are left alone.
--
-- Reply: the integer handed * (n + 1) + ours, ours being how many keys were
-- ours (deleted or handed over) and handed how many of them were handed
-- over (one integer: an array reply costs the server more). Fewer than n
-- ours means the lock had been lost, at least in part.
local prefix = owner(ARGV[1])
local again = ARGV[2]
local n = #KEYS / 3
local ours, handed = 0, 0
for i = 1, n do
  if owns(redis.call("GET", KEYS[i]), prefix) then
    ours = ours + 1
    if handover(KEYS[i], KEYS[n + i], KEYS[2 * n + i]) then handed = handed + 1 end
  end
end
if again and handed > 0 then
  local _, now = clock()
  waiting(KEYS[2], KEYS[3], again, now, tonumber(ARGV[3]), tonumber(ARGV[4]))
end
return handed * (n + 1) + ours
