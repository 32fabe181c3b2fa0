-- semaphore_lib.lua: helpers of the semaphore scripts. It is not a script
-- of its own: scripts.go prepends it (after lib.lua and handover.lua) to
-- the semaphore scripts that call these.
--
-- A semaphore key is a sorted set of permit tokens, each scored by its
-- expiry in server milliseconds; a member is live while its score is
-- above the server's time. A member whose name starts with "~" is a
-- reservation: a permit slot held for a grant that a release (or a script
-- that noticed a permit expire) pushed for the longest waiter
-- (handover.lua's pass()), scored with its own expiry, reserve ms after it
-- was made. It counts as a permit for everyone but the waiter woken with
-- that grant, which takes it over (semaphore_acquire.lua), and expires
-- like one when nobody does.

-- clock() is handover.lua's: TIME once per script.

-- prune(key, hash, now) removes the members of key that expired by now,
-- and their fields of hash (nil: none), and returns how many it removed.
-- O(log n + m) for m expired members, each pruned once.
local function prune(key, hash, now)
  local expired = redis.call("ZRANGEBYSCORE", key, "-inf", now)
  if #expired == 0 then return 0 end
  redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
  if hash then
    -- In chunks: unpack of too many values overflows Lua's stack.
    for i = 1, #expired, 1000 do
      redis.call("HDEL", hash, unpack(expired, i, math.min(i + 999, #expired)))
    end
  end
  return #expired
end

-- hops(grant) returns how many waiters a grant went through (see handOn).
local function hops(grant)
  return tonumber(string.match(grant, "%-(%d+)$")) or 0
end

-- handOn(key, queue, wake, reserve, now, n, hop) passes up to n freed
-- permit slots of key to its longest live waiters: for each, pass() marks
-- the oldest live registration and pushes a grant behind those already on
-- the wake list, and the slot becomes a reservation of that grant, scored
-- now + reserve. key's expiry is raised to cover the reservations. hop is
-- how many waiters the slot went through already (0 for a freed slot): a
-- grant that has been to as many waiters as are registered is not passed
-- again (mixed limits: nobody could use it), and its slot stays free. It
-- returns how many slots it reserved.
local function handOn(key, queue, wake, reserve, now, n, hop)
  if hop > 0 and hop >= redis.call("ZCOUNT", queue, "(" .. now, "+inf") then
    return 0
  end
  local upto = now + tonumber(reserve)
  local done = 0
  for i = 1, n do
    -- The tag "<i>-<hop>" keeps the grants of one script apart.
    local grant = pass(queue, wake, reserve, i .. "-" .. hop, nil, true)
    if not grant then break end
    redis.call("ZADD", key, string.format("%.0f", upto), grant)
    done = done + 1
  end
  if done > 0 then
    -- -1 (no expiry: the set was made here) is below upto too.
    if redis.call("PEXPIRETIME", key) < upto then
      redis.call("PEXPIREAT", key, string.format("%.0f", upto))
    end
  end
  return done
end
