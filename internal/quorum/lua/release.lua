-- release.lua: delete a quorum lock's keys on one node, those that are
-- still the acquisition's (docs/quorum.md). Calls owner (lib.lua) and mine
-- (node.lua), which scripts.go prepends.
--
-- KEYS[1..n]  the lock keys.
-- ARGV[1]     the token.
-- ARGV[2]     the acquisition's tag (node.lua).
--
-- Keys that hold another value, or are gone, are left alone.
--
-- Reply: how many keys were the acquisition's (and are deleted), an
-- integer.
local prefix, tag = owner(ARGV[1]), ARGV[2]
local deleted = 0
for i = 1, #KEYS do
  if mine(redis.call("GET", KEYS[i]), prefix, tag) then
    deleted = deleted + redis.call("DEL", KEYS[i])
  end
end
return deleted
