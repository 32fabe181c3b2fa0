-- delete_one.lua: delete.lua for a lock of one key, with nothing
-- prepended: the caller sends the owner prefix.
--
-- KEYS[1]   the lock key.
-- ARGV[1]   owner(token): "<#token>:<token>:" (lib.lua).
--
-- Reply: 1 when the key was ours and is deleted, 0 when it was gone or
-- held by another (and is left alone).
local v = redis.call("GET", KEYS[1])
if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
