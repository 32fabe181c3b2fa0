-- rwmutex_runlock.lua: release a read hold of an RWMutex (see
-- rwmutex_lib.lua for the keys).
--
-- KEYS[1..2]  R, H.
-- ARGV[1]     the token.
--
-- Reply, an integer: 1 the hold was live and is released; 0 it had expired
-- or was not there (any trace of it is removed all the same).
local R, H, token = KEYS[1], KEYS[2], ARGV[1]
local live = rw_alive(R, token, rw_now())
redis.call("ZREM", R, token)
redis.call("HDEL", H, token)
if live then return 1 end
return 0
