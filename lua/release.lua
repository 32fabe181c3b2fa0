-- release.lua: hand each lock key that is still ours over to its next
-- waiter (see WaitForRelease) when waiters are registered, or delete it.
-- Calls handover() from handover.lua, which scripts.go prepends. A release
-- that hands nothing over runs delete.lua instead.
--
-- KEYS[1..n]       the lock keys.
-- KEYS[n+1..2n]    the wait queue of each lock key (a sorted set).
-- KEYS[2n+1..3n]   the wake-up list of each lock key.
-- KEYS[3n+1]       only with ARGV[3], for a lock of one key (n = 1): the
--                  grant list of waiter ARGV[3].
-- ARGV[1]     the token.
-- ARGV[2]     how long (ms) a key handed over stays reserved for the
--             woken waiter.
-- ARGV[3]     optional, for a lock of one key: the id of a waiter that
--             the caller is about to be (a releaser that asks again at
--             once, see internal/handoff's Request.Registered). When the
--             key is handed over, that waiter is registered in its queue
--             until ARGV[4] ms from now, as a failed attempt would
--             register it (lapsed entries dropped), and its grant
--             list gets the placeholder "~" with a TTL of twice ARGV[4]
--             (obtain.lua). A key deleted (no live waiter) registers
--             no one.
-- ARGV[4]     with ARGV[3]: how long (ms) that registration lasts.
--
-- A key is ours when its value starts with owner(token) (lib.lua).
-- Keys held by another, or gone, are left alone. Each key of ours whose
-- queue has live waiters is handed over to the one that has waited
-- longest (handover.lua); the others are deleted.
--
-- Reply: the integer handed * (n + 1) + ours, ours being how many keys were
-- ours (deleted or handed over) and handed how many of them were handed
-- over (one integer: an array reply costs the server more). Fewer than n
-- ours means the lock had been lost, at least in part.
local token = ARGV[1]
local reserve = ARGV[2]
local again = ARGV[3]
local life = tonumber(ARGV[4])
local n = #KEYS
if again then n = 1 else n = n / 3 end
local prefix = owner(token)
local deleted, handed = 0, 0
for i = 1, n do
  if owns(redis.call("GET", KEYS[i]), prefix) then
    -- The releaser's next wait (ARGV[3]) is registered behind those
    -- handed the key, in the ZADD that marks the one woken.
    handed = handed + handover(KEYS[i], KEYS[n + i], KEYS[2 * n + i], reserve, i, again, life)
    deleted = deleted + 1
  end
end
if again and handed > 0 then
  -- The rest of that registration, as a failed attempt makes it: lapsed
  -- entries dropped (those just written score outside [-now, now]), the
  -- queue's and the grant list's expiry (clock() has the script's
  -- instant: the handover read it).
  local _, now = clock()
  redis.call("ZREMRANGEBYSCORE", KEYS[2], -now, now)
  redis.call("PEXPIRE", KEYS[2], life)
  redis.call("RPUSH", KEYS[4], "~")
  redis.call("PEXPIRE", KEYS[4], 2 * life)
end
return handed * (n + 1) + deleted
