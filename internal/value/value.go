// Package value is the format of a lock key's value, as the scripts write
// it (lua/lib.lua, lua/obtain.lua): "<#token>:<token>:<fence>:<metadata>",
// the fence "0" for a lock without fence counter and "<fence token>/<tag>"
// for a fenced one, <tag> being the first 8 hex digits of the SHA-1 of the
// counter's key name. The length prefix makes ownership exact: the token
// "foo" never matches a holder "foobar".
package value

import (
	"strconv"
	"strings"
)

// Owner returns the prefix of the values written for token: a key is
// held by token when its value starts with it.
func Owner(token string) string {
	return strconv.Itoa(len(token)) + ":" + token + ":"
}

// Format returns the value of a lock of token with metadata: unfenced
// when tag is empty, else with fence and the counter's tag.
func Format(token string, fence int64, tag, metadata string) string {
	field := "0"
	if tag != "" {
		field = strconv.FormatInt(fence, 10) + "/" + tag
	}
	return Owner(token) + field + ":" + metadata
}

// Parse splits a lock key's value "<len>:<token>:<fence>:<metadata>",
// where fence is a decimal number, followed, for a fenced lock, by "/" and
// the hexadecimal tag of its counter. ok is false, and the rest zero, for
// any other value.
func Parse(v string) (token string, fence int64, metadata string, ok bool) {
	n, rest, ok := cutNumber(v)
	if !ok || n < 1 || n >= int64(len(rest)) || rest[n] != ':' {
		return "", 0, "", false
	}
	token, rest = rest[:n], rest[n+1:]
	field, metadata, found := strings.Cut(rest, ":")
	if !found {
		return "", 0, "", false
	}
	if digits, tag, tagged := strings.Cut(field, "/"); tagged {
		if tag == "" || strings.Trim(tag, "0123456789abcdef") != "" {
			return "", 0, "", false
		}
		field = digits
	}
	fence, _, ok = cutNumber(field + ":")
	if !ok {
		return "", 0, "", false
	}
	return token, fence, metadata, true
}

// cutNumber splits s at its first ":" and parses what comes before as a
// non-negative decimal number of digits only.
func cutNumber(s string) (n int64, rest string, ok bool) {
	digits, rest, found := strings.Cut(s, ":")
	if !found || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, "", false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, "", false
	}
	return n, rest, true
}

// ParsePermit splits a semaphore permit's value in its companion hash,
// "<fence>[/<tag>]:<metadata>" (lua/semaphore_acquire.lua).
func ParsePermit(v string) (fence int64, metadata string) {
	f, meta, ok := strings.Cut(v, ":")
	if !ok {
		return 0, ""
	}
	f, _, _ = strings.Cut(f, "/")
	n, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		return 0, meta
	}
	return n, meta
}
