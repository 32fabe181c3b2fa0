-- inspect.lua: read a lock key without its token, for status tools. It
-- writes nothing, and needs no other command than PTTL and GET.
--
-- KEYS[1]  the lock key.
-- No ARGV.
--
-- Reply, an array:
--   {}             the key does not exist.
--   {pttl}         the key exists but is not a string (not a lock of this
--                  package nor of bsm/redislock, yet it blocks both).
--   {pttl, value}  the key is a string: value as stored, in this package's
--                  format "<#token>:<token>:<fence>:<metadata>" (see
--                  obtain.lua) or any other.
-- pttl is the remaining time in milliseconds, -1 when the key has no expiry.
local ms = redis.call("PTTL", KEYS[1])
if ms == -2 then
  return {}
end
local v = redis.pcall("GET", KEYS[1])
if type(v) == "table" and v.err then
  return {ms}
end
return {ms, v}
