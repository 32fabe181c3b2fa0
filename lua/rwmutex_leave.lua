-- rwmutex_leave.lua: withdraw a waiting reader's or writer's registration
-- from an RWMutex (see rwmutex_lib.lua for the keys), when it stops waiting
-- without the lock.
--
-- KEYS[1..3]  Q, P, A.
-- ARGV[1]     the token.
--
-- Reply, an integer: how many registrations were removed.
local n = 0
for i = 1, 3 do
  n = n + redis.call("ZREM", KEYS[i], ARGV[1])
end
return n
