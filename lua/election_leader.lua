-- election_leader.lua: read who leads an election (Election.Leader and the
-- re-reads of Election.Observe). It writes nothing.
-- Calls owner() from lib.lua, which scripts.go prepends.
--
-- KEYS[1]   the election key: a lock key whose metadata is "<rev>:<value>".
-- KEYS[2]   the election's term counter (the lock's fence key).
--
-- Reply, an array:
--   {1, term, rev, pttl, value}  a campaigner leads: its term (the lock's
--                                fence token), the revision of its value
--                                (0 when elected, +1 for each Proclaim), the
--                                key's PTTL in ms (-1: no expiry) and the value.
--   {0, term}                    no leader: the key is gone, or is a
--                                reservation for a waiter's grant (a leader
--                                is handing over); term is the counter's
--                                value, the last term issued (0 if none).
local function noLeader()
  local c = redis.call("GET", KEYS[2])
  return {0, tonumber(c) or 0}
end
local v = redis.call("GET", KEYS[1])
if not v then return noLeader() end
local len = string.match(v, "^(%d+):")
if not len then return noLeader() end
local tokenStart = #len + 2
if string.sub(v, tokenStart, tokenStart) == "~" then return noLeader() end
local rest = string.sub(v, tokenStart + tonumber(len) + 1)
local term, rev, value = string.match(rest, "^(%d+)[^:]*:(%d+):(.*)$")
if not term then
  -- A lock taken on this key by something other than an election.
  term, value = string.match(rest, "^(%d+)[^:]*:(.*)$")
  rev = "0"
  if not term then return noLeader() end
end
return {1, tonumber(term), tonumber(rev), redis.call("PTTL", KEYS[1]), value}
