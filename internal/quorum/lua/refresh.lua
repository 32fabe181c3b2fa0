-- refresh.lua: extend a quorum lock's keys on one node, re-taking those
-- that are missing (docs/quorum.md, "Refresh"). Calls owner/owns (lib.lua)
-- and recovering (node.lua), which scripts.go prepends.
--
-- KEYS[1..n]   the lock keys.
-- KEYS[n+1]    the recovery marker of KEYS[1].
--
-- ARGV[1]  the token.
-- ARGV[2]  the new TTL in milliseconds (>= 1, checked by the caller).
-- ARGV[3]  what follows the token in the lock's value, "<fence>:<metadata>",
--          for re-taking a missing key; "" to re-take nothing.
-- ARGV[4]  the engine's MaxTTL in milliseconds (the recovery window).
-- ARGV[5]  how long (ms) a recovery marker lives once out of recovery.
--
-- Reply, an integer:
--   1   held: every key was held by the token, or missing and re-taken
--       (ARGV[3] given, node not recovering); all now expire in ARGV[2] ms.
--   0   some key is missing and was not re-taken; nothing is changed.
--  -1   some key is held by another token; nothing is changed.
local prefix = owner(ARGV[1])
local ttl = ARGV[2]
local n = #KEYS - 1
local gone = {}
local missing = false
for i = 1, n do
  local v = redis.call("GET", KEYS[i])
  if not v then
    gone[i] = true
    missing = true
  elseif not owns(v, prefix) then
    return -1
  end
end
if missing and (ARGV[3] == "" or recovering(KEYS[n + 1], tonumber(ARGV[4]), tonumber(ARGV[5]))) then
  return 0
end
for i = 1, n do
  if gone[i] then
    redis.call("SET", KEYS[i], prefix .. ARGV[3], "PX", ttl)
  else
    redis.call("PEXPIRE", KEYS[i], ttl)
  end
end
return 1
