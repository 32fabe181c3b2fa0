-- handover.lua: the line of waiters of a key, and the handover that serves
-- it in order (docs/waiting.md, "The line"). It is not a script of its
-- own: scripts.go prepends it to the scripts that register waiters or pass
-- a key (or a permit slot) on.
--
-- A key that is waited for has two companions in its slot:
--   line   a sorted set: waiter id -> the server time (µs) of its first
--          registration. Written only by ZADD NX (a new arrival) and ZREM:
--          a waiter keeps its place for as long as it stays registered.
--   alive  a sorted set: waiter id -> when its registration lapses (ms). A
--          score s > now: live and waiting; s < -now: live and served (a
--          grant is out for it until -s, its claim window); s in
--          [-now, now]: lapsed. A lapsed grant (s in [-now, 0)) of a
--          waiter with a process tag is a tombstone for TOMBSTONE ms
--          after the grant lapsed (s < TOMBSTONE - now): see oldest().
-- and each waiter a grant list, line .. ":" .. id (same slot), which the
-- waiter blocks on (BLPOP): a handover pushes one element on it, with the
-- waiter's claim window as its TTL.
--
-- A waiter id ends with "." and its claim window in ms ("<random>.500");
-- claim() reads it. A waiter's id starts with its process's tag and "-"
-- ("<process>-<random>.500"); a releaser's own registration has none.
-- process() reads it. A key handed over becomes a reservation for the waiter,
-- the lock value of the token "~<id>" (lib.lua's owner()) with fence "0"
-- and no metadata, expiring after the claim window: every client sees the
-- key held, and only that waiter's attempt takes it.
--
-- Cost of a handover: ZRANGEBYSCORE and ZSCORE (the oldest live registration),
-- ZADD (its mark), RPUSH and PEXPIRE (its grant), and the caller's write
-- of the reservation; TIME once per script (clock()).

-- clock() returns the server's TIME reply and the time it gives in
-- milliseconds; clock_time() the reply alone, for a caller that needs no
-- milliseconds (a fenced obtain's microseconds). TIME is called once per
-- script, at the first call of either: every step of one script sees the
-- same instant, and a script that hands over several keys asks for it once.
local clock_ms, clock_t
local function clock_time()
  if not clock_t then clock_t = redis.call("TIME") end
  return clock_t
end
local function clock()
  if not clock_ms then
    local t = clock_time()
    clock_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clock_t, clock_ms
end

-- claim(id) returns the claim window (ms) of waiter id.
local function claim(id)
  return tonumber(string.match(id, "%.(%d+)$")) or 500
end

-- process(id) returns the process tag of waiter id, nil when it has none.
local function process(id)
  return string.match(id, "^([^-]+)%-")
end

-- TOMBSTONE is how long (ms) a grant that lapsed unanswered passes the
-- other waiters of its process over: the registration's life
-- (internal/handoff's Registration), after which every registration made
-- before the grant has lapsed or been renewed by an attempt.
local TOMBSTONE = 3000

-- reserved_for(id) returns the value of a key reserved for waiter id.
local function reserved_for(id)
  return owner("~" .. id) .. "0:"
end

-- gone(line, alive, ...) takes the ids out of the line.
local function gone(line, alive, ...)
  redis.call("ZREM", line, ...)
  redis.call("ZREM", alive, ...)
end

-- waiting(line, alive, id, now, life, lapse) registers waiter id: a new
-- arrival at the back of the line (at the server's time in µs: two
-- arrivals a millisecond apart keep their order), or a renewal that keeps
-- its place;
-- live (and not served) until lapse ms from now (life when nil). Both sets
-- expire life ms from now: life is the longest any registration lasts, so
-- no live one outlives them.
local function waiting(line, alive, id, now, life, lapse)
  local t = clock_time()
  if redis.call("ZADD", line, "NX", t[1] * 1000000 + t[2], id) == 1 then
    -- A new arrival drops some lapsed registrations (lapse in
    -- [TOMBSTONE - now, now]: not the tombstones), so that waiters that
    -- die while no handover runs do not make the line grow.
    local dead = redis.call("ZRANGEBYSCORE", alive, TOMBSTONE - now, now, "LIMIT", 0, 16)
    if dead[1] then gone(line, alive, unpack(dead)) end
  end
  redis.call("ZADD", alive, now + (lapse or life), id)
  redis.call("PEXPIRE", line, life)
  redis.call("PEXPIRE", alive, life)
end

-- oldest(line, alive, now, after) returns the id of the live registration
-- not yet served that arrived first (strictly after the arrival time
-- after, when given), and its arrival; nil when there is none. Lapsed
-- registrations met on the way are dropped, but tombstones: a tombstone
-- stays, and the live registrations of its process after it are passed
-- over, kept in place (docs/waiting.md, "The line"). It reads the line
-- four at a time, at most 64 entries; usually the first is the one (one
-- ZSCORE).
local function oldest(line, alive, now, after)
  local lo = 0
  if after then lo = "(" .. after end
  local skip = 0
  local stopped -- the process tags of the tombstones read, when any
  for _ = 1, 16 do
    local got = redis.call("ZRANGEBYSCORE", line, lo, "+inf", "WITHSCORES", "LIMIT", skip, 4)
    if not got[1] then return nil end
    local dead, seen = {}, 0
    for i = 1, #got, 2 do
      local id = got[i]
      local s = tonumber(redis.call("ZSCORE", alive, id))
      if s and s > now then
        if not (stopped and stopped[process(id)]) then
          if dead[1] then gone(line, alive, unpack(dead)) end
          return id, got[i + 1]
        end
        seen = seen + 1
      else
        local p = s and s >= -now and s < TOMBSTONE - now and process(id)
        if p then
          stopped = stopped or {}
          stopped[p] = true
          seen = seen + 1
        elseif not s or s >= -now then
          dead[#dead + 1] = id
        else
          seen = seen + 1
        end
      end
    end
    if dead[1] then gone(line, alive, unpack(dead)) end
    -- What is left of this window is served and live: read past it.
    skip = skip + seen
  end
  return nil
end

-- ahead(arrived, id, ours, waiter) reports whether the registration of id,
-- which arrived at arrived, is ahead of waiter's in the line (arrived at
-- ours; nil: waiter is in no line, and everyone is ahead): the line's order
-- is by arrival, then by id.
local function ahead(arrived, id, ours, waiter)
  if not ours then return true end
  local a, b = tonumber(arrived), tonumber(ours)
  return a < b or (a == b and id < waiter)
end

-- grant(line, alive, id, now) marks the registration of id served and
-- pushes a grant on its grant list; both last its claim window, which it
-- returns.
local function grant(line, alive, id, now)
  local c = claim(id)
  redis.call("ZADD", alive, -(now + c), id)
  local list = line .. ":" .. id
  redis.call("RPUSH", list, "1")
  redis.call("PEXPIRE", list, c)
  return c
end

-- handover(key, line, alive, after) passes the lock key (ours, or reserved
-- for a waiter that gives it back) to the oldest live waiter of its line
-- (arrived after `after`, when given): the key becomes a reservation for
-- it. With no such waiter the key is deleted. Returns the waiter's id, or
-- nil.
local function handover(key, line, alive, after)
  local _, now = clock()
  local id = oldest(line, alive, now, after)
  if not id then
    redis.call("DEL", key)
    return nil
  end
  redis.call("SET", key, reserved_for(id), "PX", grant(line, alive, id, now))
  return id
end
