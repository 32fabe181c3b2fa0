-- lib.lua: helpers shared by every script. It is not a script of its own:
-- scripts.go prepends it (internal/script joins the parts), so each script
-- calls these instead of repeating them.
--
-- A lock key holds the plain string "<#token>:<token>:<fence>:<metadata>".
-- It is held by a token when it starts with "<#token>:<token>:": the length
-- prefix makes the comparison exact, so the token "foo" never matches a
-- holder "foobar".

-- owner(token) returns the prefix of the values written for token.
local function owner(token)
  return #token .. ":" .. token .. ":"
end

-- owns(v, prefix) reports whether v, a GET reply (a string, or false for a
-- missing key), starts with prefix, as returned by owner().
local function owns(v, prefix)
  return v and string.sub(v, 1, #prefix) == prefix
end
