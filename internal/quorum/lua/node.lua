-- node.lua: helpers of the quorum's scripts (docs/quorum.md). It is not a
-- script of its own: scripts.go prepends it, after lib.lua, to every
-- script of the quorum.
--
-- A quorum lock key holds the plain string of lib.lua,
-- "<#token>:<token>:<fence>/<tag>:<metadata>", whose tag names the
-- acquisition that wrote it: the fence counter's tag (8 hex digits, fenced
-- locks only) followed by a random nonce of the acquisition (16 hex
-- digits); <fence> is the token, "0" unfenced. A key is an acquisition's
-- own when both its token and its tag match: a late script of another
-- acquisition with the same token (an earlier attempt of the same call,
-- whose release arrives after this one took the key) cannot touch it.

-- mine(v, prefix, tag) reports whether v, a GET reply (a string, or false
-- for a missing key), is a value of the acquisition with tag, whose
-- token's owner() is prefix.
local function mine(v, prefix, tag)
  if not owns(v, prefix) then return false end
  local field = string.match(v, "^(%d+/%x+):", #prefix + 1)
  return field ~= nil and string.sub(field, -#tag - 1) == "/" .. tag
end

-- recovering(marker, window, life) reports whether this node must take no
-- key yet, because it may have lost keys that are still held elsewhere.
--   marker  the recovery marker key of the lock's first key.
--   window  the engine's MaxTTL in ms: how long a node that lost its data
--           takes nothing.
--   life    how long (ms) the marker lives once the node is out of
--           recovery.
-- The marker is lost with the node's data. "0" means out of recovery; a
-- number, the server time (ms) at which recovery ends. A missing marker
-- costs one INFO: a node with AOF on is trusted to have kept its data;
-- any other recovers until window ms after its start, at the earliest
-- (uptime_in_seconds counts whole seconds: the node has been up for at
-- least uptime - 1 s).
local function recovering(marker, window, life)
  local v = redis.call("GET", marker)
  if v == "0" then return false end
  local t = redis.call("TIME")
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  if v then
    local ends = tonumber(v)
    if ends and ends > now then return true end
    redis.call("SET", marker, "0", "KEEPTTL")
    return false
  end
  local info = redis.call("INFO", "server", "persistence")
  local ends = now
  if string.match(info, "aof_enabled:(%d)") ~= "1" then
    local up = tonumber(string.match(info, "uptime_in_seconds:(%d+)")) or 0
    ends = now + window - math.max(0, up - 1) * 1000
  end
  if ends <= now then
    redis.call("SET", marker, "0", "PX", life)
    return false
  end
  redis.call("SET", marker, string.format("%d", ends), "PX", life + ends - now)
  return true
end

-- counter(key) returns the value of the fence counter key, a number. A
-- missing counter is first set to the server's time in µs (exact: about
-- 1.8e15, below 2^53). A counter that is not a decimal integer below 2^53
-- gives nil and the error reply "ERR redislock: fence key <key> does not
-- hold an integer"; one of another type, nil and Redis's WRONGTYPE error.
local function counter(key)
  local v = redis.pcall("GET", key)
  if type(v) == "table" then return nil, v end
  if not v then
    local t = redis.call("TIME")
    local now = t[1] * 1000000 + t[2]
    redis.call("SET", key, string.format("%d", now))
    return now
  end
  if not string.match(v, "^%d+$") or tonumber(v) >= 9007199254740992 then
    return nil, redis.error_reply("ERR redislock: fence key " .. key .. " does not hold an integer")
  end
  return tonumber(v)
end
