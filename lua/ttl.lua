-- ttl.lua: the remaining time of a lock that is still ours.
--
-- KEYS[1..n]  the lock keys.
-- ARGV[1]     the token.
--
-- A key is ours when its value starts with owner(token) (lib.lua).
--
-- Reply, an integer:
--   > 0   every key is ours; the smallest PTTL among them, in milliseconds.
--   0     some key is gone or held by another.
--   -1    every key is ours but none has an expiry (someone ran PERSIST).
local token = ARGV[1]
local prefix = owner(token)
local least = -1
for i = 1, #KEYS do
  local v = redis.call("GET", KEYS[i])
  if not owns(v, prefix) then
    return 0
  end
  local ms = redis.call("PTTL", KEYS[i])
  if ms >= 0 and (least < 0 or ms < least) then least = ms end
end
if least == 0 then return 1 end
return least
