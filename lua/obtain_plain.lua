-- obtain_plain.lua: the first attempt to take one lock key with a token
-- that no attempt sent before (generated for this obtain), without waiter:
-- the lean form of obtain.lua for the usual obtain, with nothing of
-- handover.lua or lib.lua prepended (the caller sends the owner prefix).
--
-- KEYS[1]   the lock key.
-- KEYS[2]   optional: the fence counter key.
-- ARGV[1]   owner(token): "<#token>:<token>:" (lib.lua).
-- ARGV[2]   what the value holds after its fence field: ":<metadata>"
--           without fence counter (the field is "0"), "/<tag>:<metadata>"
--           with one (obtain.lua's ARGV[4]).
-- ARGV[3]   the TTL in milliseconds (>= 1, checked by the caller).
--
-- A free key is taken as obtain.lua takes it: the value
-- "<#token>:<token>:<fence>:<metadata>", and with a fence counter the new
-- token max(counter + 1, server TIME in microseconds), written back to
-- the counter (KEEPTTL). A key that holds the token already (a resend of
-- this attempt whose first reply was lost) is taken back as a re-entrant
-- obtain would: its TTL reset, its fence token kept. Any other key that
-- exists (held, reserved for a waiter's grant) is not touched.
-- A counter that is not a decimal integer below 2^53 keeps its value and
-- the reply is the error "ERR redislock: fence key <key> does not hold an
-- integer"; one of another type, Redis's WRONGTYPE error; either way no
-- lock key is left written.
--
-- Reply, an integer, as obtain.lua's without a waiter: 1 held by another;
-- otherwise obtained, the fence token (0 without fence counter).
if #KEYS == 1 then
  if redis.call("SET", KEYS[1], ARGV[1] .. "0" .. ARGV[2], "NX", "PX", ARGV[3]) then return 0 end
else
  local t = redis.call("TIME")
  local now = t[1] * 1000000 + t[2]
  local s = string.format("%d", now)
  if redis.call("SET", KEYS[1], ARGV[1] .. s .. ARGV[2], "NX", "PX", ARGV[3]) then
    local cur = redis.pcall("SET", KEYS[2], s, "KEEPTTL", "GET")
    if not cur then return now end
    local n = type(cur) == "string" and string.match(cur, "^%d+$") and tonumber(cur)
    if not n or n >= 9007199254740992 then
      redis.call("DEL", KEYS[1])
      if type(cur) == "table" then return cur end
      redis.call("SET", KEYS[2], cur, "KEEPTTL")
      return redis.error_reply("ERR redislock: fence key " .. KEYS[2] .. " does not hold an integer")
    end
    if n < now then return now end
    now = n + 1
    s = string.format("%.0f", now)
    redis.call("SET", KEYS[2], s, "KEEPTTL")
    redis.call("SET", KEYS[1], ARGV[1] .. s .. ARGV[2], "PX", ARGV[3])
    return now
  end
end
local v = redis.call("GET", KEYS[1])
if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then
  redis.call("PEXPIRE", KEYS[1], ARGV[3])
  return tonumber(string.match(string.sub(v, #ARGV[1] + 1), "^(%d+)")) or 0
end
return 1
