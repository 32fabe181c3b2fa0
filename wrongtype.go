package redislock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// typed returns err as this package's error when the server refused one
// of its scripts for a reason the caller can act on: a key that holds
// another kind of value (a [*WrongTypeError], whose key is found with one
// TYPE per key of the call, in one pipeline, only then), or a command the
// server does not have ([ErrServerTooOld], needs naming the version); any
// other error is returned as it is.
func typed(ctx context.Context, client RedisClient, keys []string, needs string, err error) error {
	var reply redis.Error
	if err == nil || !errors.As(err, &reply) || errors.Is(err, ErrWrongType) || errors.Is(err, ErrServerTooOld) {
		return err
	}
	msg := reply.Error()
	switch {
	case strings.HasPrefix(msg, "WRONGTYPE") || strings.Contains(msg, ": WRONGTYPE") || strings.Contains(msg, "-WRONGTYPE"):
		return wrongType(ctx, client, keys, err)
	case needs != "" && (strings.Contains(msg, "Unknown Redis command called from") || strings.Contains(msg, "wrong number of arguments for 'pexpireat'")):
		return fmt.Errorf("%w: %s (%w)", ErrServerTooOld, needs, err)
	}
	return err
}

// wrongType finds the key of keys whose type is not the one this package
// keeps there.
func wrongType(ctx context.Context, client RedisClient, keys []string, err error) error {
	p, ok := client.(interface{ Pipeline() redis.Pipeliner })
	if !ok {
		return &WrongTypeError{Err: err}
	}
	pipe := p.Pipeline()
	cmds := make([]*redis.StatusCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Type(ctx, k)
	}
	_, _ = pipe.Exec(ctx) // a key whose TYPE failed is skipped
	for i, k := range keys {
		want := expectedType(keys, i)
		if got := cmds[i].Val(); got != "" && got != "none" && got != want {
			return &WrongTypeError{Key: k, Type: got, Want: want, Err: err}
		}
	}
	return &WrongTypeError{Err: err}
}

// expectedType returns the Redis type that this package keeps at keys[i]:
// its companions say by their names; the first key of a semaphore's calls
// (which take its permit hash second) is a sorted set; every other key is
// a string (a lock's, an election's, a fence counter).
func expectedType(keys []string, i int) string {
	k := keys[i]
	switch {
	case strings.Contains(k, ":redislock:waiters"), strings.Contains(k, ":redislock:alive"),
		strings.Contains(k, ":redislock:rw:readers"), strings.Contains(k, ":redislock:rw:writers"):
		return "zset"
	case strings.Contains(k, permitsSuffix), strings.Contains(k, ":redislock:rw:holds"):
		return "hash"
	case i == 0 && len(keys) > 1 && strings.Contains(keys[1], permitsSuffix):
		return "zset"
	}
	return "string"
}

// holder names what this package keeps in a key of type typ named key.
func holder(key, typ string) string {
	switch {
	case typ == "string" && strings.Contains(key, ":redislock:rw:"):
		return "string (an RWMutex's write lock)"
	case typ == "string":
		return "string (a lock's key, an election's or a fence counter)"
	case typ == "zset" && strings.Contains(key, ":redislock:rw:"):
		return "zset (an RWMutex's)"
	case typ == "zset" && (strings.Contains(key, ":redislock:waiters") || strings.Contains(key, ":redislock:alive")):
		return "zset (a wait line)"
	case typ == "zset":
		return "zset (a semaphore's key)"
	case typ == "hash":
		return "hash (a semaphore's permits or an RWMutex's holds)"
	}
	return typ
}
