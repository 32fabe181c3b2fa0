-- confirm.lua: a later round of a fenced quorum acquisition on one node
-- (docs/quorum.md): confirm the token q, but only while every lock key is
-- still the acquisition's. Calls owner (lib.lua) and mine and counter
-- (node.lua), which scripts.go prepends.
--
-- KEYS[1..n]  the lock keys.
-- KEYS[n+1]   the fence counter key.
--
-- ARGV[1]  the token.
-- ARGV[2]  the acquisition's tag (as obtain.lua's ARGV[4]).
-- ARGV[3]  the token q to confirm, a decimal integer in [3, 2^53).
--
-- Reply, an integer:
--   q    confirmed: the counter was below q and is now q; every key's
--        fence field is now "<q>/<tag>", its TTL unchanged.
--   -c   not confirmed: the counter c is at or above q (c >= 1) and keeps
--        its value. Nothing is written.
--   0    lost: a lock key is no longer the acquisition's. Nothing is
--        written.
-- Errors: as obtain.lua's, for the counter.
local prefix, tag = owner(ARGV[1]), ARGV[2]
local n = #KEYS - 1
local values = {}
for i = 1, n do
  local v = redis.call("GET", KEYS[i])
  if not mine(v, prefix, tag) then return 0 end
  values[i] = v
end
local c, err = counter(KEYS[n + 1])
if not c then return err end
local q = tonumber(ARGV[3])
if q <= c then return -c end
redis.call("SET", KEYS[n + 1], ARGV[3], "KEEPTTL")
local field = prefix .. ARGV[3] .. "/" .. tag
for i = 1, n do
  -- The value after the fence field: ":<metadata>".
  local rest = string.sub(values[i], #prefix + 1)
  local at = string.find(rest, ":", 1, true)
  redis.call("SET", KEYS[i], field .. string.sub(rest, at), "KEEPTTL")
end
return q
