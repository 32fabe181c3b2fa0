-- release.lua: delete the lock keys that are still ours.
--
-- KEYS[1..n]  the lock keys.
-- ARGV[1]     the token.
--
-- A key is ours when its value starts with "<#token>:<token>:" (see obtain.lua).
-- Keys held by another, or gone, are left alone.
--
-- Reply, an integer: how many keys were deleted. Fewer than n means the lock
-- had been lost, at least in part.
local token = ARGV[1]
local prefix = #token .. ":" .. token .. ":"
local deleted = 0
for i = 1, #KEYS do
  local v = redis.call("GET", KEYS[i])
  if v and string.sub(v, 1, #prefix) == prefix then
    deleted = deleted + redis.call("DEL", KEYS[i])
  end
end
return deleted
