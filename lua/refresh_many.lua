-- refresh_many.lua: refresh.lua for many leases in one call, each as
-- refresh.lua alone would: a session's batch (internal/session). On a
-- Cluster every key of one call is in one hash slot.
--
-- KEYS        every lease's keys, one lease after the other.
-- ARGV[1]     the new TTL in milliseconds (>= 1, checked by the caller).
-- ARGV[2k]    the number of keys of lease k (k = 1, 2, ...).
-- ARGV[2k+1]  the token of lease k.
--
-- Reply, an array with one integer per lease, in order, refresh.lua's:
--   1   every key of the lease was its own and now expires in ARGV[1] ms.
--   0   some key of the lease is gone; nothing of it was changed.
--  -1   some key of the lease is held by another (none gone); nothing of
--       it was changed.
local ttl = ARGV[1]
local out = {}
local first = 1
for j = 2, #ARGV, 2 do
  local last = first + tonumber(ARGV[j]) - 1
  local prefix = owner(ARGV[j + 1])
  local r = 1
  for i = first, last do
    local v = redis.call("GET", KEYS[i])
    if not v then
      r = 0
      break
    end
    if not owns(v, prefix) then
      r = -1
    end
  end
  if r == 1 then
    for i = first, last do
      redis.call("PEXPIRE", KEYS[i], ttl)
    end
  end
  out[#out + 1] = r
  first = last + 1
end
return out
