-- refresh.lua: extend a quorum lock's keys on one node, re-taking those
-- that are missing (docs/quorum.md, "Refresh"). Calls owner (lib.lua) and
-- mine and recovering (node.lua), which scripts.go prepends.
--
-- KEYS[1..n]   the lock keys.
-- KEYS[n+1]    the recovery marker of KEYS[1].
--
-- ARGV[1]  the token.
-- ARGV[2]  the acquisition's tag (node.lua).
-- ARGV[3]  the new TTL in milliseconds (>= 1, checked by the caller).
-- ARGV[4]  what follows the token in the lock's value,
--          "<fence>/<tag>:<metadata>", for re-taking a missing key; "" to
--          re-take nothing.
-- ARGV[5]  the engine's MaxTTL in milliseconds (the recovery window).
-- ARGV[6]  how long (ms) a recovery marker lives once out of recovery.
--
-- Reply, an integer:
--   1   held: every key was the acquisition's, or missing and re-taken
--       (ARGV[4] given, node not recovering); all now expire in ARGV[3] ms.
--   0   some key is missing and was not re-taken; nothing is changed.
--  -1   some key holds another value; nothing is changed.
local prefix, tag, ttl = owner(ARGV[1]), ARGV[2], ARGV[3]
local n = #KEYS - 1
local gone = {}
local missing = false
for i = 1, n do
  local v = redis.call("GET", KEYS[i])
  if not v then
    gone[i] = true
    missing = true
  elseif not mine(v, prefix, tag) then
    return -1
  end
end
if missing and (ARGV[4] == "" or recovering(KEYS[n + 1], tonumber(ARGV[5]), tonumber(ARGV[6]))) then
  return 0
end
for i = 1, n do
  if gone[i] then
    redis.call("SET", KEYS[i], prefix .. ARGV[4], "PX", ttl)
  else
    redis.call("PEXPIRE", KEYS[i], ttl)
  end
end
return 1
