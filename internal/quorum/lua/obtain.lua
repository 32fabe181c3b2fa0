-- obtain.lua: round 1 of a quorum acquisition on one node (docs/quorum.md):
-- take every lock key, or none; fenced, confirm the proposed token when it
-- is above this node's counter. Calls owner (lib.lua) and mine,
-- recovering and counter (node.lua), which scripts.go prepends.
--
-- KEYS[1..n]   the lock keys.
-- KEYS[n+1]    the fence counter key; present only when ARGV[5] is not "0".
-- KEYS[#KEYS]  the recovery marker of KEYS[1].
--
-- ARGV[1]  the token.
-- ARGV[2]  the metadata.
-- ARGV[3]  the TTL in milliseconds (>= 1, checked by the caller).
-- ARGV[4]  the acquisition's tag (node.lua): hex digits.
-- ARGV[5]  the proposed token p, a decimal integer in [3, 2^53), when
--          fenced; "0" without a fence counter.
-- ARGV[6]  the engine's MaxTTL in milliseconds (the recovery window).
-- ARGV[7]  how long (ms) a recovery marker lives once out of recovery.
--
-- The keys get the value "<#token>:<token>:<p>/<tag>:<metadata>" (p "0"
-- unfenced). A key that is already this acquisition's counts as free: it
-- is written again (a script run twice).
--
-- Reply, an integer:
--   1    held: a lock key holds another value (another token, or another
--        acquisition with this token). Nothing is written.
--   2    recovering (node.lua): nothing is written.
--   0    taken, unfenced: every key now holds the value for ARGV[3] ms.
--   p    taken, and p confirmed: the counter was below p and is now p.
--   -c   taken, p not confirmed: the counter c is at or above p (c >= 1)
--        and keeps its value; the keys hold p as their fence.
-- Errors (nothing is written, but a missing counter set to the server's
-- time): a counter that is not a decimal integer below 2^53, "ERR
-- redislock: fence key <key> does not hold an integer"; one of another
-- type, WRONGTYPE.
local token, meta, ttl, tag, p = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local prefix = owner(token)
local fenced = p ~= "0"
local n = #KEYS - 1
if fenced then n = n - 1 end
for i = 1, n do
  local v = redis.call("GET", KEYS[i])
  if v and not mine(v, prefix, tag) then return 1 end
end
if recovering(KEYS[#KEYS], tonumber(ARGV[6]), tonumber(ARGV[7])) then return 2 end
local value = prefix .. p .. "/" .. tag .. ":" .. meta
if not fenced then
  for i = 1, n do
    redis.call("SET", KEYS[i], value, "PX", ttl)
  end
  return 0
end
local c, err = counter(KEYS[n + 1])
if not c then return err end
for i = 1, n do
  redis.call("SET", KEYS[i], value, "PX", ttl)
end
if tonumber(p) > c then
  redis.call("SET", KEYS[n + 1], p, "KEEPTTL")
  return tonumber(p)
end
return -c
