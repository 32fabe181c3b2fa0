-- obtain.lua: round 1 of a quorum acquisition on one node (docs/quorum.md):
-- take every lock key, or none; fenced, confirm the proposed token when it
-- is above this node's counter. Calls owner/owns (lib.lua) and
-- recovering/counter (node.lua), which scripts.go prepends.
--
-- KEYS[1..n]   the lock keys.
-- KEYS[n+1]    the fence counter key; present only when ARGV[4] is not "0".
-- KEYS[#KEYS]  the recovery marker of KEYS[1].
--
-- ARGV[1]  the token.
-- ARGV[2]  the metadata.
-- ARGV[3]  the TTL in milliseconds (>= 1, checked by the caller).
-- ARGV[4]  "0" without a fence counter; with one, the counter's tag (the
--          first 8 hex digits of the SHA-1 of its key name).
-- ARGV[5]  the proposed token p, a decimal integer in [1, 2^53) (fenced
--          only; "0" otherwise).
-- ARGV[6]  the engine's MaxTTL in milliseconds (the recovery window).
-- ARGV[7]  how long (ms) a recovery marker lives once out of recovery.
--
-- A lock key holds the plain string "<#token>:<token>:<fence>:<metadata>"
-- (lib.lua), <fence> being "0" unfenced and "<p>/<tag>" fenced. A key
-- held with our own token counts as free: it is written again.
--
-- Reply, an integer:
--   1    held: a lock key is held by another token. Nothing is written.
--   2    recovering (node.lua): nothing is written.
--   0    taken, unfenced: every key now holds the value for ARGV[3] ms.
--   p    taken, and p confirmed: the counter was below p and is now p.
--   -c   taken, p not confirmed: the counter c is at or above p (c >= 1)
--        and keeps its value; the keys hold p as their fence.
-- Errors (nothing is written, but a missing counter set to the server's
-- time): a counter that is not a decimal integer below 2^53, "ERR
-- redislock: fence key <key> does not hold an integer"; one of another
-- type, WRONGTYPE.
local token, meta, ttl, tag = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local prefix = owner(token)
local fenced = tag ~= "0"
local n = #KEYS - 1
if fenced then n = n - 1 end
for i = 1, n do
  local v = redis.call("GET", KEYS[i])
  if v and not owns(v, prefix) then return 1 end
end
if recovering(KEYS[#KEYS], tonumber(ARGV[6]), tonumber(ARGV[7])) then return 2 end
if not fenced then
  local value = prefix .. "0:" .. meta
  for i = 1, n do
    redis.call("SET", KEYS[i], value, "PX", ttl)
  end
  return 0
end
local c, err = counter(KEYS[n + 1])
if not c then return err end
local p = tonumber(ARGV[5])
local value = prefix .. ARGV[5] .. "/" .. tag .. ":" .. meta
for i = 1, n do
  redis.call("SET", KEYS[i], value, "PX", ttl)
end
if p > c then
  redis.call("SET", KEYS[n + 1], ARGV[5], "KEEPTTL")
  return p
end
return -c
