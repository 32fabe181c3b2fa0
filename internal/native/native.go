// Package native runs a lock's refresh and release as plain commands on
// servers that compare a value themselves: SET … IFEQ (Valkey 8.1+, Redis
// 8.4+), DELIFEQ (Valkey 9.0+) and DELEX … IFEQ (Redis 8.4+). What a
// server has is asked once, with HELLO ([Commands.Get]); a server that
// later refuses one of them turns them all off ([Commands.Off]).
//
// A lock's value is compared whole. When the key does not hold the value
// the caller expects (a re-entrant obtain changed the metadata, or the
// caller never knew it), a GET follows, the value read is checked to be
// the token's by the same exact-token rule as the scripts' (lua/lib.lua:
// it starts with "<#token>:<token>:"), and the compare runs again on it.
package native

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/value"
)

// Set is a set of native commands of a server.
type Set uint32

const (
	// Known is set once the server was asked (or cannot be); the other
	// bits say what it has. The zero Set means not asked yet.
	Known Set = 1 << iota
	// SetIfEq is SET key value IFEQ value PX ms.
	SetIfEq
	// DelIfEq is DELIFEQ key value.
	DelIfEq
	// DelEx is DELEX key IFEQ value.
	DelEx
)

// Doer is the part of a go-redis client that sends a plain command.
type Doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// Commands is what a client knows of its server's native commands: zero
// until asked, then fixed. It is safe for concurrent use; two goroutines
// may ask at once, harmlessly. A nil *Commands has none.
type Commands struct {
	v atomic.Uint32
}

// ErrRefused is returned when the server refused a native command (an
// older node, an ACL without it): every native command is then off for
// the Commands, and the caller runs its script.
var ErrRefused = errors.New("native: refused")

// Get returns the native commands of the server behind d, asking it with
// HELLO the first time. A failure to ask (network, ctx) is not kept: the
// next call asks again. A server that refuses HELLO, or a nil d, has none.
func (c *Commands) Get(ctx context.Context, d Doer) Set {
	if c == nil {
		return Known
	}
	if n := Set(c.v.Load()); n != 0 {
		return n
	}
	if d == nil {
		c.v.Store(uint32(Known))
		return Known
	}
	reply, err := d.Do(ctx, "HELLO").Result()
	var refused redis.Error
	switch {
	case errors.As(err, &refused):
		c.v.Store(uint32(Known))
		return Known
	case err != nil:
		return Known
	}
	n := Of(helloFields(reply))
	c.v.Store(uint32(n))
	return n
}

// Off turns every native command off.
func (c *Commands) Off() {
	if c != nil {
		c.v.Store(uint32(Known))
	}
}

// helloFields returns the "server" and "version" fields of a HELLO reply:
// a map in RESP3, a flat list of names and values in RESP2.
func helloFields(reply any) (server, version string) {
	field := func(k, v any) {
		ks, _ := k.(string)
		vs, _ := v.(string)
		switch ks {
		case "server":
			server = vs
		case "version":
			version = vs
		}
	}
	switch r := reply.(type) {
	case map[any]any:
		for k, v := range r {
			field(k, v)
		}
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			field(r[i], r[i+1])
		}
	}
	return server, version
}

// Of returns the native commands of a server from its HELLO name and
// version ("valkey", "9.1.2"): Valkey reports its own version there (its
// INFO's redis_version stays at 7.2.4).
func Of(server, version string) Set {
	major, minor, ok := majorMinor(version)
	n := Known
	if !ok {
		return n
	}
	at := func(ma, mi int) bool { return major > ma || major == ma && minor >= mi }
	switch server {
	case "valkey":
		if at(8, 1) {
			n |= SetIfEq
		}
		if at(9, 0) {
			n |= DelIfEq
		}
	case "redis":
		if at(8, 4) {
			n |= SetIfEq | DelEx
		}
	}
	return n
}

// majorMinor reads "MAJOR.MINOR[.…]".
func majorMinor(version string) (major, minor int, ok bool) {
	maj, rest, found := strings.Cut(version, ".")
	if !found {
		return 0, 0, false
	}
	mi, _, _ := strings.Cut(rest, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(mi)
	return a, b, err1 == nil && err2 == nil && a >= 0 && b >= 0
}

// refused reports whether err is a server refusing a native command: one
// it does not know, an option it does not know ("ERR syntax error" for SET
// … IFEQ), or an ACL that lacks it.
func refused(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	msg := reply.Error()
	return strings.HasPrefix(msg, "ERR unknown command") || strings.HasPrefix(msg, "ERR syntax error") || strings.HasPrefix(msg, "NOPERM")
}

// tries bounds the compare rounds of a refresh or release whose value
// changed under it: each round is one GET and one compare.
const tries = 3

// Value is the lock value a compare expects: V, when Known; otherwise
// only the ownership prefix is known, and a GET reads the value first.
type Value struct {
	V     string
	Known bool
}

// Refresh sets key to expire in ms when it holds the lock's value, with
// SET … IFEQ. Its reply is refresh.lua's: 1 extended, 0 gone, -1 held by
// another token. It returns the value it last matched, for the next call;
// [ErrRefused] when the server refused the command.
func Refresh(ctx context.Context, d Doer, key string, v Value, token string, ms int64) (int64, Value, error) {
	for range tries {
		if v.Known {
			err := d.Do(ctx, "SET", key, v.V, "IFEQ", v.V, "PX", ms).Err()
			switch {
			case err == nil:
				return 1, v, nil
			case refused(err):
				return 0, v, ErrRefused
			case !errors.Is(err, redis.Nil):
				return 0, v, err
			}
		}
		held, read, err := get(ctx, d, key, token)
		if err != nil || held != 1 {
			return held, v, err
		}
		v = read
	}
	return -1, v, nil
}

// Delete deletes key when it holds the lock's value, with DELIFEQ or
// DELEX … IFEQ, as has says; it returns 1 when the key was the lock's
// (and is deleted), 0 otherwise, as delete.lua counts. ok is false when
// has offers neither command.
func Delete(ctx context.Context, d Doer, has Set, key string, v Value, token string) (ours int64, _ Value, ok bool, err error) {
	if has&(DelIfEq|DelEx) == 0 {
		return 0, v, false, nil
	}
	for range tries {
		if v.Known {
			var cmd *redis.Cmd
			if has&DelIfEq != 0 {
				cmd = d.Do(ctx, "DELIFEQ", key, v.V)
			} else {
				cmd = d.Do(ctx, "DELEX", key, "IFEQ", v.V)
			}
			deleted, err := cmd.Int64()
			switch {
			case err == nil && deleted == 1:
				return 1, v, true, nil
			case refused(err):
				return 0, v, true, ErrRefused
			case err != nil:
				return 0, v, true, err
			}
		}
		held, read, err := get(ctx, d, key, token)
		if err != nil || held != 1 {
			return 0, v, true, err
		}
		v = read
	}
	return 0, v, true, nil
}

// get reads key after a compare failed: held is 1 when its value is
// token's (read is then that value), 0 when it is gone, -1 when another
// holds it.
func get(ctx context.Context, d Doer, key, token string) (held int64, read Value, err error) {
	s, err := d.Do(ctx, "GET", key).Text()
	prefix := value.Owner(token)
	switch {
	case errors.Is(err, redis.Nil):
		return 0, Value{}, nil
	case err != nil:
		return 0, Value{}, err
	case !strings.HasPrefix(s, prefix):
		return -1, Value{}, nil
	}
	return 1, Value{V: s, Known: true}, nil
}
