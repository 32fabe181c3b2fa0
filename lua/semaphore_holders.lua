-- semaphore_holders.lua: every live permit of a semaphore. It writes
-- nothing.
--
-- KEYS[1]   the semaphore key (sorted set, see semaphore_acquire.lua).
-- KEYS[2]   its permit hash.
--
-- Reply, an array of 3 entries per live permit (reservations left out),
-- soonest expiry first:
-- the token, the milliseconds left (>= 1), and the hash value
-- "<fence>:<metadata>" ("" if the field is missing).
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = redis.call("ZRANGEBYSCORE", KEYS[1], "(" .. now, "+inf", "WITHSCORES")
local out = {}
if #live == 0 then return out end
-- Reservations (members "~…", slots held for a woken waiter, see
-- semaphore_lib.lua) are not permits: skipped.
local tokens, scores = {}, {}
for i = 1, #live, 2 do
  if string.sub(live[i], 1, 1) ~= "~" then
    tokens[#tokens + 1] = live[i]
    scores[#scores + 1] = live[i + 1]
  end
end
if #tokens == 0 then return out end
local values = {}
-- In chunks: unpack of too many values overflows Lua's stack.
for i = 1, #tokens, 1000 do
  local part = redis.call("HMGET", KEYS[2], unpack(tokens, i, math.min(i + 999, #tokens)))
  for j = 1, #part do values[i + j - 1] = part[j] end
end
for i = 1, #tokens do
  out[#out + 1] = tokens[i]
  out[#out + 1] = tonumber(scores[i]) - now
  out[#out + 1] = values[i] or ""
end
return out
