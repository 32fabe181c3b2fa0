// Package redisreply reads the server's refusals of this module's scripts
// into plain data: which refusal it is, and which key of a WRONGTYPE holds
// what. The root package turns the data into its errors; docs/errors.md
// describes the mechanism.
package redisreply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/semaphore"
)

// Refusal is what a server error means to the caller.
type Refusal uint8

// The refusals.
const (
	Other     Refusal = iota // nothing the caller can act on
	WrongType                // a key holds another kind of value
	TooOld                   // the server lacks a command the call needs
)

// permits is the suffix of a semaphore's permit hash.
const permits = semaphore.PermitsSuffix

// Classify reads the message of a server error. TooOld is only reported
// when the call says what it needs.
func Classify(msg string, needs bool) Refusal {
	switch {
	case strings.HasPrefix(msg, "WRONGTYPE") || strings.Contains(msg, ": WRONGTYPE") ||
		strings.Contains(msg, "-WRONGTYPE"):
		return WrongType
	case needs && (strings.Contains(msg, "Unknown Redis command called from") ||
		strings.Contains(msg, "wrong number of arguments for 'pexpireat'")):
		return TooOld
	}
	return Other
}

// WrongKey sends one TYPE per key of keys, in one pipeline, and returns
// the first key whose type is not the one this module keeps there, with
// the type it has (got) and the type wanted there; all "" when none is
// found. A key whose TYPE failed is skipped.
func WrongKey(ctx context.Context, pipe redis.Pipeliner, keys []string) (key, got, want string) {
	cmds := make([]*redis.StatusCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Type(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
	for i, k := range keys {
		want := Expected(keys, i)
		if got := cmds[i].Val(); got != "" && got != "none" && got != want {
			return k, got, want
		}
	}
	return "", "", ""
}

// Expected returns the Redis type that this module keeps at keys[i]: its
// companions say by their names; the first key of a semaphore's calls
// (which take its permit hash second) is a sorted set; every other key is
// a string (a lock's, an election's, a fence counter).
func Expected(keys []string, i int) string {
	k := keys[i]
	switch {
	case strings.Contains(k, ":redislock:waiters"), strings.Contains(k, ":redislock:alive"),
		strings.Contains(k, ":redislock:rw:readers"), strings.Contains(k, ":redislock:rw:writers"):
		return "zset"
	case strings.Contains(k, permits), strings.Contains(k, ":redislock:rw:holds"):
		return "hash"
	case i == 0 && len(keys) > 1 && strings.Contains(keys[1], permits):
		return "zset"
	}
	return "string"
}

// Describe names key, the type it holds (got) and the type the call keeps
// there (want), as the text that follows the error's name; with no key,
// it quotes the server's error err.
func Describe(key, got, want string, err error) string {
	if key == "" {
		return " (" + err.Error() + ")"
	}
	return fmt.Sprintf(": %q is a %s, where this call keeps a %s", key, holder(key, got), holder(key, want))
}

// holder names what this module keeps in a key of type typ named key.
func holder(key, typ string) string {
	switch {
	case typ == "string" && strings.Contains(key, ":redislock:rw:"):
		return "string (an RWMutex's write lock)"
	case typ == "string":
		return "string (a lock's key, an election's or a fence counter)"
	case typ == "zset" && strings.Contains(key, ":redislock:rw:"):
		return "zset (an RWMutex's)"
	case typ == "zset" && (strings.Contains(key, ":redislock:waiters") ||
		strings.Contains(key, ":redislock:alive")):
		return "zset (a wait line)"
	case typ == "zset":
		return "zset (a semaphore's key)"
	case typ == "hash":
		return "hash (a semaphore's permits or an RWMutex's holds)"
	}
	return typ
}

// Read reads err, an error of one of this module's scripts on keys sent
// through client: what it means, and, for WrongType, which key holds what
// (WrongKey, when client has pipelines; all "" otherwise). needs says
// whether the call names the server it needs. Other is returned for an
// error that is not a server's.
func Read(ctx context.Context, client any, keys []string, needs bool, err error) (r Refusal, key, got, want string) {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return Other, "", "", ""
	}
	r = Classify(reply.Error(), needs)
	if p, ok := client.(interface{ Pipeline() redis.Pipeliner }); ok && r == WrongType {
		key, got, want = WrongKey(ctx, p.Pipeline(), keys)
	}
	return r, key, got, want
}
