-- rwmutex_lib.lua: helpers of the RWMutex scripts (rwmutex_*.lua), not a
-- script of its own: scripts.go prepends it, after lib.lua, to each of them.
--
-- The keys of one RWMutex (rwmutex.go) share a hash slot:
--   W  the writer key: a plain lock string "<#token>:<token>:<fence>:<metadata>"
--      (lib.lua), so that tools see the write lock held; expires at its TTL.
--   R  the read holds: a sorted set of tokens scored by each hold's expiry,
--      in server milliseconds. A hold counts while its score is > now.
--   H  the read holds' values: a hash token -> "<fence>:<metadata>".
--   Q  writers waiting: a sorted set of tokens scored by the expiry of their
--      registration. While one is live, new readers wait.
--   P  readers waiting behind a writer (pending): sorted set, same scores.
--   A  readers admitted: the pending readers of the last writer phase. They
--      enter before any other writer, whatever Q holds, and a writer waits
--      until none of them is left.
-- Every key gets a PEXPIRE at least as long as its longest member, so that
-- nothing outlives its holders.

-- rw_now returns the server's time in milliseconds.
local function rw_now()
  local t = redis.call("TIME")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- rw_ms formats a number of milliseconds as an integer string.
local function rw_ms(x)
  return string.format("%.0f", x)
end

-- rw_live counts the members of sorted set z whose expiry is after now.
local function rw_live(z, now)
  return redis.call("ZCOUNT", z, "(" .. rw_ms(now), "+inf")
end

-- rw_alive reports whether token is a member of z with an expiry after now.
local function rw_alive(z, token, now)
  local s = redis.call("ZSCORE", z, token)
  return s and tonumber(s) > now
end

-- rw_extend makes key expire no sooner than ms from now.
local function rw_extend(key, ms)
  local p = redis.call("PTTL", key)
  if p == -1 or (p >= 0 and p < tonumber(ms)) then
    redis.call("PEXPIRE", key, ms)
  end
end

-- rw_prune drops up to 64 read holds past their expiry from R and H: each
-- expired hold is removed once, so the cost stays O(log n) amortised.
local function rw_prune(r, h, now)
  local old = redis.call("ZRANGEBYSCORE", r, "-inf", rw_ms(now), "LIMIT", 0, 64)
  if #old > 0 then
    redis.call("ZREM", r, unpack(old))
    redis.call("HDEL", h, unpack(old))
  end
end

-- rw_admit turns the pending readers P into admitted ones A (keeping each
-- registration's expiry), called when a writer takes or leaves the lock:
-- the readers that waited behind it enter right after it, before the next
-- writer.
local function rw_admit(p, a, now)
  if redis.call("EXISTS", p) == 0 then return end
  redis.call("ZUNIONSTORE", a, 2, a, p, "AGGREGATE", "MAX")
  redis.call("DEL", p)
  redis.call("ZREMRANGEBYSCORE", a, "-inf", rw_ms(now))
  local last = redis.call("ZRANGE", a, -1, -1, "WITHSCORES")
  if #last == 2 then
    redis.call("PEXPIRE", a, rw_ms(tonumber(last[2]) - now))
  end
end

-- rw_register records token as waiting in z until reg ms from now.
local function rw_register(z, token, now, reg)
  redis.call("ZADD", z, rw_ms(now + tonumber(reg)), token)
  rw_extend(z, reg)
end

-- rw_counter reads fence counter key k: its integer value, or nil when it
-- does not hold a decimal integer below 2^53 (see obtain.lua).
local function rw_counter(k)
  local cur = redis.call("GET", k) or "0"
  if not string.match(cur, "^%d+$") or tonumber(cur) >= 9007199254740992 then
    return nil
  end
  return tonumber(cur)
end

local function rw_bad_counter(k)
  return redis.error_reply("ERR redislock: fence key " .. k .. " does not hold an integer")
end
