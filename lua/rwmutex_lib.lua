-- rwmutex_lib.lua: helpers of the RWMutex scripts (rwmutex_*.lua), not a
-- script of its own: scripts.go prepends it, after lib.lua and handover.lua,
-- to each of them.
--
-- The keys of one RWMutex (rwmutex.go) share a hash slot; every script but
-- the read hold's refresh and TTL takes the first eight, in this order:
--   W   the writer key: a plain lock string "<#token>:<token>:<fence>:<metadata>"
--       (lib.lua), so that tools see the write lock held; expires at its TTL.
--       While it is handed to a writer that waits with WaitForRelease, it
--       is a reservation for that writer (handover.lua).
--   R   the read holds: a sorted set of tokens scored by each hold's expiry,
--       in server milliseconds. A hold counts while its score is > now.
--   H   the read holds' values: a hash token -> "<fence>:<metadata>".
--   Q   writers waiting by polling: a sorted set of tokens scored by the
--       expiry of their registration.
--   WQ  writers waiting with WaitForRelease: W's line (handover.lua), waiter
--       ids by arrival; WA, its liveness set. A live registration of Q or WA
--       makes new readers wait: writer preference.
--   RQ  readers waiting behind a writer: tokens (polling) or waiter ids
--       (WaitForRelease). A positive score s: pending, registered until s;
--       a negative one -s: admitted, registered until s. Pending readers
--       are admitted when a writer takes or leaves the lock; the admitted
--       ones enter before any other writer, whatever Q and WA hold, and a
--       writer waits until none of them is left. A waiter id's grant list
--       is RQ .. ":" .. id, as a line's (handover.lua).
--   WA  see WQ.
--   RA  R's liveness set as the handoff engine names it: unused (readers
--       register in RQ alone).
-- Every key expires: W at its TTL or reservation, the sorted sets no sooner
-- than their longest member, a grant list with its claim window.

-- rw_now returns the server's time in milliseconds.
local function rw_now()
  local _, now = clock()
  return now
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

-- rw_waiter reports whether a reader of RQ is a waiter id (NewID's
-- "<random>.<ms>", or a waiter's "<process>-<random>.<ms>"), not a
-- polling reader's token.
local function rw_waiter(id)
  return string.match(id, "^[A-Z2-7]+%.%d+$") or string.match(id, "^[A-Z2-7]+%-[A-Z2-7]+%.%d+$")
end

-- rw_admit turns the pending readers of RQ into admitted ones, called when
-- a writer takes or leaves the lock: the readers that waited behind it
-- enter right after it, before the next writer. A waiter's registration is
-- kept no longer than its claim window (handover.lua) from now: one that
-- does not answer its wake-up within it no longer holds writers back. A
-- polling reader keeps its registration's expiry. Lapsed registrations are
-- dropped.
local function rw_admit(rq, now)
  local n = rw_ms(now)
  redis.call("ZREMRANGEBYSCORE", rq, "-" .. n, n)
  local p = redis.call("ZRANGEBYSCORE", rq, "(" .. n, "+inf", "WITHSCORES")
  for i = 1, #p, 2 do
    local e = tonumber(p[i + 1])
    if rw_waiter(p[i]) then e = math.min(e, now + claim(p[i])) end
    redis.call("ZADD", rq, rw_ms(-e), p[i])
  end
end

-- rw_wake pushes a wake-up on the grant list of each waiter id among the
-- readers of RQ scored between lo and hi (at most 128): each attempts,
-- and enters when it may.
local function rw_wake(rq, lo, hi)
  local ids = redis.call("ZRANGEBYSCORE", rq, lo, hi, "LIMIT", 0, 128)
  for _, id in ipairs(ids) do
    if rw_waiter(id) then
      local list = rq .. ":" .. id
      redis.call("RPUSH", list, "1")
      redis.call("PEXPIRE", list, claim(id))
    end
  end
end

-- rw_writers counts the live writers that wait with WaitForRelease (WA).
local function rw_writers(wa, now)
  return redis.call("ZCOUNT", wa, "(" .. rw_ms(now), "+inf")
end

-- rw_next decides who goes next once the write lock is not held (after the
-- last read hold ended, a waiter left, or a reservation was given back):
-- nobody while W is set; the admitted readers, woken only when wake is
-- true (the writer's release wakes them once); else, when no read hold is
-- live, the writer that arrived first among those that wait with
-- WaitForRelease, W becoming a reservation for it (handover.lua); else,
-- when no writer waits at all, the pending readers, woken. q (Q) may be
-- nil: then pending readers are woken even if a polling writer waits
-- (they wait again).
local function rw_next(w, r, q, wq, rq, wa, now, wake)
  if redis.call("EXISTS", w) == 1 then return end
  local n = rw_ms(now)
  if rw_admitted(rq, now) > 0 then
    if wake then rw_wake(rq, "-inf", "(-" .. n) end
    return
  end
  if rw_writers(wa, now) > 0 then
    -- The last read hold to end hands the lock over.
    if rw_live(r, now) > 0 then return end
    if handover(w, wq, wa) then return end
  end
  if q and rw_live(q, now) > 0 then return end
  if rw_live(rq, now) > 0 then rw_wake(rq, "(" .. n, "+inf") end
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
