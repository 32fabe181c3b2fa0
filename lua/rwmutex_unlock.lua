-- rwmutex_unlock.lua: release the write lock of an RWMutex (see
-- rwmutex_lib.lua for the keys).
--
-- KEYS[1..3]  W, P, A.
-- ARGV[1]     the token.
--
-- When W is held with the token it is deleted, and the readers that waited
-- behind the writer (P) are admitted: they enter before the next writer.
--
-- Reply, an integer: 1 released; 0 W was not held with the token (nothing
-- changed).
local W, P, A = KEYS[1], KEYS[2], KEYS[3]
if not owns(redis.call("GET", W), owner(ARGV[1])) then return 0 end
redis.call("DEL", W)
rw_admit(P, A, rw_now())
return 1
