-- delete.lua: delete the lock keys that are still ours, handing nothing
-- over: the release of a lock obtained without WaitForRelease (whose
-- waiters, if any, notice when their block or poll ends), of keys that
-- cannot have companions in their slot, and of an attached lock whose
-- handover the server's ACL refused. Without handover.lua, it costs the
-- server less than release.lua.
--
-- KEYS[1..n]  the lock keys.
-- ARGV[1]     the token.
--
-- A key is ours when its value starts with owner(token) (lib.lua). Keys
-- held by another, or gone, are left alone.
--
-- Reply: how many keys were ours (and are deleted), an integer. Fewer than
-- n means the lock had been lost, at least in part.
local prefix = owner(ARGV[1])
local deleted = 0
for i = 1, #KEYS do
  if owns(redis.call("GET", KEYS[i]), prefix) then
    deleted = deleted + redis.call("DEL", KEYS[i])
  end
end
return deleted
