-- ttl.lua: the remaining time of a quorum lock's keys on one node, while
-- they are the acquisition's. Calls owner (lib.lua) and mine (node.lua),
-- which scripts.go prepends.
--
-- KEYS[1..n]  the lock keys.
-- ARGV[1]     the token.
-- ARGV[2]     the acquisition's tag (node.lua).
--
-- Reply, an integer:
--   > 0   every key is the acquisition's; the smallest PTTL among them, in
--         milliseconds. Keys without an expiry (PTTL -1) do not count.
--   0     some key is gone or holds another value; or some key has under a
--         millisecond left (PTTL 0); or no key has an expiry.
local prefix, tag = owner(ARGV[1]), ARGV[2]
local least = 0
for i = 1, #KEYS do
  if not mine(redis.call("GET", KEYS[i]), prefix, tag) then
    return 0
  end
  local ms = redis.call("PTTL", KEYS[i])
  if ms == 0 then return 0 end
  if ms > 0 and (least == 0 or ms < least) then least = ms end
end
return least
