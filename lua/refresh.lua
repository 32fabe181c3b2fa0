-- refresh.lua: extend every lock key, but only when every one is still ours.
--
-- KEYS[1..n]  the lock keys.
-- ARGV[1]     the token.
-- ARGV[2]     the new TTL in milliseconds (>= 1, checked by the caller).
--
-- A key is ours when its value starts with owner(token) (lib.lua).
--
-- Reply, an integer:
--   1   every key was ours and now expires in ARGV[2] ms.
--   0   some key is gone; nothing was changed.
--  -1   some key is held by another (none gone); nothing was changed.
local token, ttl = ARGV[1], ARGV[2]
local prefix = owner(token)
local taken = false
for i = 1, #KEYS do
  local v = redis.call("GET", KEYS[i])
  if not v then
    return 0
  end
  if not owns(v, prefix) then
    taken = true
  end
end
if taken then return -1 end
for i = 1, #KEYS do
  redis.call("PEXPIRE", KEYS[i], ttl)
end
return 1
