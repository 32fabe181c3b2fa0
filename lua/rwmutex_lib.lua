-- rwmutex_lib.lua: helpers of the RWMutex scripts (rwmutex_*.lua), not a
-- script of its own: scripts.go prepends it, after lib.lua and handover.lua,
-- to each of them.
--
-- The keys of one RWMutex (rwmutex.go) share a hash slot; every script but
-- the read hold's refresh and TTL takes the first eight, in this order:
--   W   the writer key: a plain lock string "<#token>:<token>:<fence>:<metadata>"
--       (lib.lua), so that tools see the write lock held; expires at its TTL.
--       While a writer that waits with WaitForRelease is handed the lock, it
--       is a reservation for that writer's grant (handover.lua).
--   R   the read holds: a sorted set of tokens scored by each hold's expiry,
--       in server milliseconds. A hold counts while its score is > now.
--   H   the read holds' values: a hash token -> "<fence>:<metadata>".
--   Q   writers waiting by polling: a sorted set of tokens scored by the
--       expiry of their registration.
--   WQ  writers waiting with WaitForRelease: W's wait queue (internal/handoff,
--       handover.lua), waiter ids scored by the expiry of their registration,
--       negated while marked by a handover. A live registration of Q or WQ
--       (score > now) makes new readers wait: writer preference.
--   RQ  readers waiting behind a writer: R's wait queue, tokens (polling) or
--       waiter ids (WaitForRelease). A positive score s: pending, registered
--       until s; a negative one -s: admitted, registered until s. Pending
--       readers are admitted when a writer takes or leaves the lock; the
--       admitted ones enter before any other writer, whatever Q and WQ
--       hold, and a writer waits until none of them is left.
--   WW  W's wake-up list: grants for waiting writers (handover.lua).
--   RW  R's wake-up list: wake-ups ("~free") for waiting readers, one per
--       admitted reader when a writer leaves.
-- Every key expires: W at its TTL or reservation, the sorted sets no sooner
-- than their longest member, the lists with the last registration.

-- rw_now returns the server's time in milliseconds.
local function rw_now()
  local t = redis.call("TIME")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- rw_ms formats a number of milliseconds as an integer string.
local function rw_ms(x)
  return string.format("%.0f", x)
end

-- rw_live counts the members of sorted set z whose expiry is after now: the
-- live read holds of R, the live registrations of Q and WQ, the pending
-- readers of RQ.
local function rw_live(z, now)
  return redis.call("ZCOUNT", z, "(" .. rw_ms(now), "+inf")
end

-- rw_admitted counts the live admitted readers of RQ (scores below -now).
local function rw_admitted(rq, now)
  return redis.call("ZCOUNT", rq, "-inf", "(-" .. rw_ms(now))
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

-- rw_register records m as waiting in z until life ms from now, keeping
-- the sign of an admitted reader's registration, after dropping the lapsed
-- registrations and marks of z (scores in [-now, now]).
local function rw_register(z, m, now, life, admitted)
  local n = rw_ms(now)
  redis.call("ZREMRANGEBYSCORE", z, "-" .. n, n)
  local e = now + tonumber(life)
  if admitted then e = -e end
  redis.call("ZADD", z, rw_ms(e), m)
  rw_extend(z, life)
end

-- rw_renew renews the registration of m in z, if it has one (the waiter of
-- this process that waits next, as obtain.lua does). A reader's (signed)
-- keeps its sign; a writer's, in WQ, becomes positive, as obtain.lua makes
-- it: its waiter counts again from the moment it blocks.
local function rw_renew(z, m, now, life, signed)
  local s = redis.call("ZSCORE", z, m)
  if not s then return end
  local e = now + tonumber(life)
  if signed and tonumber(s) < 0 then e = -e end
  redis.call("ZADD", z, "XX", rw_ms(e), m)
  rw_extend(z, life)
end

-- rw_admit turns the pending readers of RQ into admitted ones, keeping each
-- registration's expiry, called when a writer takes or leaves the lock: the
-- readers that waited behind it enter right after it, before the next
-- writer. Lapsed registrations are dropped.
local function rw_admit(rq, now)
  local n = rw_ms(now)
  redis.call("ZREMRANGEBYSCORE", rq, "-" .. n, n)
  local p = redis.call("ZRANGEBYSCORE", rq, "(" .. n, "+inf", "WITHSCORES")
  for i = 1, #p, 2 do
    redis.call("ZADD", rq, "-" .. p[i + 1], p[i])
  end
end

-- rw_wake empties wake-up list rw and pushes n wake-ups ("~free", no
-- reservation) onto it, living life ms: each reader that blocks on it gets
-- one, attempts, and enters when it is admitted.
local function rw_wake(rw, n, life)
  redis.call("DEL", rw)
  if n <= 0 then return end
  local batch = {}
  for i = 1, math.min(n, 128) do batch[i] = "~free" end
  while n > 0 do
    local k = math.min(n, 128)
    redis.call("RPUSH", rw, unpack(batch, 1, k))
    n = n - k
  end
  redis.call("PEXPIRE", rw, life)
end

-- rw_next decides who goes next once the write lock is not held (after the
-- last read hold ended, a waiter left, or a reservation was given back):
-- nobody while W is set; the admitted readers, woken only when wake is
-- true (the writer's release wakes them once); else, when no read hold is
-- live, the writer that has waited longest with WaitForRelease, W becoming
-- a reservation for its grant (handover.lua); else, when no writer waits
-- at all, the pending readers, woken. q (Q) may be nil: then pending
-- readers are woken even if a polling writer waits (they wait again).
local function rw_next(w, r, q, wq, rq, ww, rw, reserve, life, now, wake)
  if redis.call("EXISTS", w) == 1 then return end
  local a = rw_admitted(rq, now)
  if a > 0 then
    if wake then rw_wake(rw, a, life) end
    return
  end
  if redis.call("EXISTS", wq) == 1 then
    if rw_live(r, now) > 0 then
      -- The last read hold to end hands the lock over.
      if rw_live(wq, now) > 0 then return end
    elseif handover(w, wq, ww, reserve, "w") == 1 then
      return
    end
  end
  if q and rw_live(q, now) > 0 then return end
  local p = rw_live(rq, now)
  if p > 0 then rw_wake(rw, p, life) end
end

-- rw_code returns the reply code of an attempt held up by something that
-- can end in ms milliseconds, as obtain.lua's: -(ms + 1), ms at least 1 (a
-- code of -1 says "no expiry").
local function rw_code(ms)
  if ms < 1 then ms = 1 end
  return -(ms + 1)
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

-- The refusals, as error replies (rwmutex.go matches them): a reply of the
-- waiting script that is not the lock's or the waiter's must end the wait.
local function rw_upgrade()
  return redis.error_reply("ERR redislock: rw upgrade refused")
end

local function rw_writer_token()
  return redis.error_reply("ERR redislock: rw token holds the write lock")
end
