-- semaphore_lib.lua: helpers of the semaphore scripts. It is not a script
-- of its own: scripts.go prepends it (after lib.lua and handover.lua) to
-- the semaphore scripts that call these.
--
-- A semaphore key is a sorted set of permit tokens, each scored by its
-- expiry in server milliseconds; a member is live while its score is
-- above the server's time. A member "~<id>" is a reservation: a permit
-- slot held for waiter id, which a handover granted it (handover.lua),
-- scored with the end of that waiter's claim window. It counts as a
-- permit for everyone but that waiter, which takes it over
-- (semaphore_acquire.lua), and expires like one when it does not.

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

-- handOn(key, line, alive, now, n, after, ours, waiter) passes up to n free
-- permit slots of key to the oldest live waiters of its line, in order of
-- arrival: those that arrived after `after`, when given, and, with waiter,
-- those ahead of it (it arrived at ours, see handover.lua's ahead()). Each
-- waiter is granted (handover.lua) and its slot becomes the reservation
-- "~<id>", scored now + its claim window; key's expiry is raised to cover
-- them. It returns how many slots it reserved.
local function handOn(key, line, alive, now, n, after, ours, waiter)
  local done, upto = 0, 0
  while done < n do
    local id, arrived = oldest(line, alive, now, after)
    if not id or (waiter and (id == waiter or not ahead(arrived, id, ours, waiter))) then break end
    local e = now + grant(line, alive, id, now)
    redis.call("ZADD", key, string.format("%.0f", e), "~" .. id)
    if e > upto then upto = e end
    done = done + 1
  end
  -- -1 (no expiry: the set was made here) is below upto too.
  if done > 0 and redis.call("PEXPIRETIME", key) < upto then
    redis.call("PEXPIREAT", key, string.format("%.0f", upto))
  end
  return done
end
