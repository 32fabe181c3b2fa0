-- election_resigned.lua: publish that a leadership ended by resignation
-- (Leadership.Resign, after the release that handed the key over).
--
-- KEYS[1]   the election's channel.
-- ARGV[1]   the term that ended.
-- ARGV[2]   "1" to publish with SPUBLISH (Redis Cluster), "0" with PUBLISH.
--
-- The message is "N:<term>". Observers that have seen a later term ignore it.
-- Reply: the number of clients that received it.
local msg = "N:" .. ARGV[1]
if ARGV[2] == "1" then
  return redis.call("SPUBLISH", KEYS[1], msg)
end
return redis.call("PUBLISH", KEYS[1], msg)
