-- election_proclaim.lua: change the value of a leadership while its token
-- still holds the election key, and publish the change (Leadership.Proclaim,
-- and the announcement of a Campaign that won).
-- Calls owner() and owns() from lib.lua, which scripts.go prepends.
--
-- KEYS[1]   the election key: "<#token>:<token>:<fence>:<rev>:<value>".
-- KEYS[2]   the election's channel.
-- ARGV[1]   the leader's token.
-- ARGV[2]   the new value.
-- ARGV[3]   "1" to publish with SPUBLISH (Redis Cluster: the channel stays in
--           the key's slot), "0" with PUBLISH.
--
-- The key keeps its expiry; its revision is incremented. The message is
-- "L:<term>:<rev>:<pttl>:<value>".
--
-- Reply, an array:
--   {1, rev, pttl}   done; the new revision, the key's PTTL in ms.
--   {0}              the key is gone or held by another token; nothing changed.
local prefix = owner(ARGV[1])
local v = redis.call("GET", KEYS[1])
if not owns(v, prefix) then return {0} end
local rest = string.sub(v, #prefix + 1)
local fence, rev = string.match(rest, "^([^:]*):(%d+):")
if not fence then
  fence, rev = string.match(rest, "^([^:]*):"), "0"
end
rev = tonumber(rev) + 1
redis.call("SET", KEYS[1], prefix .. fence .. ":" .. string.format("%.0f", rev) .. ":" .. ARGV[2], "KEEPTTL")
local pttl = redis.call("PTTL", KEYS[1])
local term = string.match(fence, "^(%d+)") or "0"
local msg = "L:" .. term .. ":" .. string.format("%.0f", rev) .. ":" .. pttl .. ":" .. ARGV[2]
if ARGV[3] == "1" then
  redis.call("SPUBLISH", KEYS[2], msg)
else
  redis.call("PUBLISH", KEYS[2], msg)
end
return {1, rev, pttl}
