-- rwmutex_rrefresh.lua: extend a live read hold of an RWMutex (see
-- rwmutex_lib.lua for the keys).
--
-- KEYS[1..2]  R, H.
-- ARGV[1]     the token.
-- ARGV[2]     the new TTL in milliseconds (>= 1).
--
-- Reply, an integer: 1 the hold was live and now expires ARGV[2] ms from
-- now; 0 it had expired or was not there (nothing renewed).
local R, H, token, ttl = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local now = rw_now()
if not rw_alive(R, token, now) then return 0 end
redis.call("ZADD", R, "XX", rw_ms(now + tonumber(ttl)), token)
rw_extend(R, ttl)
rw_extend(H, ttl)
return 1
