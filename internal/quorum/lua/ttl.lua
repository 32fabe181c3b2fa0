-- ttl.lua: the remaining time of a lock that is still ours.
--
-- KEYS[1..n]  the lock keys.
-- ARGV[1]     the token.
--
-- A key is ours when its value starts with owner(token) (lib.lua).
--
-- Reply, an integer:
--   > 0   every key is ours; the smallest PTTL among them, in milliseconds.
--         Keys without an expiry (PTTL -1, after someone ran PERSIST) do
--         not count.
--   0     some key is gone or held by another; or some key has under a
--         millisecond left (PTTL 0), which is as good as gone; or no key
--         has an expiry.
local token = ARGV[1]
local prefix = owner(token)
local least = 0
for i = 1, #KEYS do
  local v = redis.call("GET", KEYS[i])
  if not owns(v, prefix) then
    return 0
  end
  local ms = redis.call("PTTL", KEYS[i])
  if ms == 0 then return 0 end
  if ms > 0 and (least == 0 or ms < least) then least = ms end
end
return least
