-- rwmutex_downgrade.lua: turn the write lock of an RWMutex into a read
-- hold of the same token, atomically (see rwmutex_lib.lua for the keys).
--
-- KEYS[1..8]  W, R, H, Q, WQ, RQ, WA, RA.
-- ARGV[1]     the token.
-- ARGV[2]     the read hold's TTL in milliseconds (>= 1).
-- ARGV[3]     the metadata.
--
-- When W is held with the token, it is deleted and the read hold added in
-- the same script, so no writer can enter between; the readers that
-- waited behind the writer are admitted and woken with it.
--
-- Reply, an integer: >= 0 done, the write's fence token (0 without one),
-- which the read hold carries; -1 W was not held with the token (nothing
-- changed).
local W, R, H, RQ = KEYS[1], KEYS[2], KEYS[3], KEYS[6]
local token, ttl = ARGV[1], ARGV[2]
local prefix = owner(token)
local v = redis.call("GET", W)
if not owns(v, prefix) then return -1 end
local fence = tonumber(string.match(v, "^(%d+)", #prefix + 1)) or 0
local now = rw_now()
redis.call("DEL", W)
rw_prune(R, H, now)
redis.call("ZADD", R, rw_ms(now + tonumber(ttl)), token)
redis.call("HSET", H, token, rw_ms(fence) .. ":" .. ARGV[3])
rw_extend(R, ttl)
rw_extend(H, ttl)
rw_admit(RQ, now)
rw_wake(RQ, "-inf", "(-" .. rw_ms(now))
return fence
