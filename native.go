package redislock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Native commands: on servers that compare a value atomically themselves
// (Valkey 8.1+ and Redis 8.4+: SET … IFEQ; Valkey 9.0+: DELIFEQ; Redis
// 8.4+: DELEX … IFEQ), a single-key lock is refreshed and released with one
// plain command instead of a script: less work for the server, and no need
// of EVAL permissions (docs/acl-tls.md, docs/benchmarks.md). What the server
// has is asked once per Client, with HELLO, at the first Refresh or Release
// that could use it.
//
// The rule for a release: a native delete only where delete.lua would run
// instead, that is for a lock that hands nothing over: one obtained
// without WaitForRelease (its Release deletes the key; waiters of
// WaitForRelease notice when their block or poll ends, as with a script
// that deletes), or an attached lock whose handover the server refused
// (ACL). A lock obtained with WaitForRelease, or attached, releases with
// release.lua, which hands the key over to its next waiter.

// natives is a set of native commands of a server, as detected.
type natives uint32

const (
	// nativeKnown: the server was asked (or cannot be); the other bits say
	// what it has. Zero means not asked yet.
	nativeKnown natives = 1 << iota
	// nativeSetIfEq: SET key value IFEQ value PX ms.
	nativeSetIfEq
	// nativeDelIfEq: DELIFEQ key value (Valkey 9.0+).
	nativeDelIfEq
	// nativeDelEx: DELEX key IFEQ value (Redis 8.4+).
	nativeDelEx
)

// serverCommands is what a Client knows of its server's native commands:
// zero until detected, then fixed (a refusal of a native command later
// turns every native command off). It is safe for concurrent use; two
// goroutines may detect at once, harmlessly.
type serverCommands struct {
	v atomic.Uint32
}

// commander is the part of a go-redis client that sends a plain command;
// RedisClient (a redis.Scripter) does not promise it, every go-redis client
// has it. A RedisClient without it runs scripts only.
type commander interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// get returns the native commands of the server behind client, asking it
// with HELLO the first time. A failure to ask (network, ctx) is not kept:
// this call runs scripts, and the next asks again. A server that refuses
// HELLO, or a client that cannot send it, is kept as having none.
func (s *serverCommands) get(ctx context.Context, client RedisClient) natives {
	if s == nil {
		return nativeKnown
	}
	if n := natives(s.v.Load()); n != 0 {
		return n
	}
	c, ok := client.(commander)
	if !ok {
		s.v.Store(uint32(nativeKnown))
		return nativeKnown
	}
	reply, err := c.Do(ctx, "HELLO").Result()
	var refused redis.Error
	switch {
	case errors.As(err, &refused):
		s.v.Store(uint32(nativeKnown))
		return nativeKnown
	case err != nil:
		return nativeKnown
	}
	n := nativesOf(helloFields(reply))
	s.v.Store(uint32(n))
	return n
}

// off turns every native command off, after the server refused one (a
// Cluster node or a new master of an older version, an ACL without it).
func (s *serverCommands) off() {
	if s != nil {
		s.v.Store(uint32(nativeKnown))
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

// nativesOf returns the native commands of a server from its HELLO name
// and version ("valkey", "9.1.2"): Valkey reports its own version there
// (INFO's redis_version stays at 7.2.4).
func nativesOf(server, version string) natives {
	major, minor, ok := majorMinor(version)
	n := nativeKnown
	if !ok {
		return n
	}
	at := func(ma, mi int) bool { return major > ma || major == ma && minor >= mi }
	switch server {
	case "valkey":
		if at(8, 1) {
			n |= nativeSetIfEq
		}
		if at(9, 0) {
			n |= nativeDelIfEq
		}
	case "redis":
		if at(8, 4) {
			n |= nativeSetIfEq | nativeDelEx
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

// nativeRefused reports whether err is a server refusing a native command:
// one it does not know (an older node), an option it does not know ("ERR
// syntax error" for SET … IFEQ), or an ACL that lacks it.
func nativeRefused(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	msg := reply.Error()
	return strings.HasPrefix(msg, "ERR unknown command") || strings.HasPrefix(msg, "ERR syntax error") || strings.HasPrefix(msg, "NOPERM")
}

// setNX is the first obtain attempt of a single key without fence key,
// waiter or token of the caller's, on a Client from New: SET key value NX
// PX ttl, where value is what obtain.lua would write, on every server (it
// needs no detection; an ACL that refuses SET refuses the script's SET
// too). Its reply is obtain.lua's: 0 obtained, obtainHeld not. Only a
// token that no attempt sent before may use it: the script also takes back
// a key that holds the token already (a retry after a lost reply), which
// SET NX cannot.
func (l *Lock) setNX(ctx context.Context, c commander, key, metadata string, ttl *scriptArg) (int64, error) {
	err := c.Do(ctx, "set", key, l.args.valueArg(metadata), "nx", "px", ttl).Err()
	switch {
	case err == nil:
		return 0, nil
	case errors.Is(err, redis.Nil):
		return obtainHeld, nil
	}
	return 0, err
}

// lockValue returns the value the lock's obtain wrote, when the Lock knows
// it (not for one from Attach, which knows neither metadata nor fence tag):
// "<#token>:<token>:<fence>:<metadata>" (lib.lua, obtain.lua). The last
// value a native command matched is kept, so that it is built once.
func (l *Lock) lockValue() (string, bool) {
	if v := l.value.Load(); v != nil {
		return *v, true
	}
	if l.handover == handOverIfAllowed {
		return "", false // attached: learnt from the first GET
	}
	field := "0"
	if tag := l.args.fence.b; tag != nil {
		field = strconv.FormatInt(l.fence, 10) + "/" + string(tag)
	}
	v := strconv.Itoa(len(l.token)) + ":" + l.token + ":" + field + ":" + l.metadata
	l.value.Store(&v)
	return v, true
}

// nativeTries bounds the compare-and-set rounds of a native refresh or
// release whose value changed under it (a re-entrant obtain with new
// metadata): each round is one GET and one compare-and-set.
const nativeTries = 3

// nativeRefresh refreshes a single-key lock with SET … IFEQ; reply as
// refresh.lua's (1 ours and extended, 0 gone, -1 taken). ok is false when
// the server has no such command, or refused it (then every native command
// is off for the Client): run the script.
func (l *Lock) nativeRefresh(ctx context.Context, ms int64) (reply int64, ok bool, err error) {
	c, can := l.client.(commander)
	if !can || len(l.keys) != 1 || l.native.get(ctx, l.client)&nativeSetIfEq == 0 {
		return 0, false, nil
	}
	key := l.keys[0]
	v, known := l.lockValue()
	for range nativeTries {
		if known {
			err := c.Do(ctx, "SET", key, v, "IFEQ", v, "PX", ms).Err()
			switch {
			case err == nil:
				return 1, true, nil
			case nativeRefused(err):
				l.native.off()
				return 0, false, nil
			case !errors.Is(err, redis.Nil):
				return 0, true, err
			}
		}
		var held int64
		if v, held, err = l.readValue(ctx, c, key); err != nil || held != 1 {
			return held, true, err
		}
		known = true
	}
	return -1, true, nil
}

// nativeRelease deletes a single-key lock with DELIFEQ or DELEX … IFEQ; it
// returns how many keys were ours (0 or 1), as delete.lua does. ok is
// false as for nativeRefresh.
func (l *Lock) nativeRelease(ctx context.Context) (ours int64, ok bool, err error) {
	c, can := l.client.(commander)
	if !can || len(l.keys) != 1 {
		return 0, false, nil
	}
	n := l.native.get(ctx, l.client)
	if n&(nativeDelIfEq|nativeDelEx) == 0 {
		return 0, false, nil
	}
	key := l.keys[0]
	v, known := l.lockValue()
	for range nativeTries {
		if known {
			var cmd *redis.Cmd
			if n&nativeDelIfEq != 0 {
				cmd = c.Do(ctx, "DELIFEQ", key, v)
			} else {
				cmd = c.Do(ctx, "DELEX", key, "IFEQ", v)
			}
			deleted, err := cmd.Int64()
			switch {
			case err == nil && deleted == 1:
				return 1, true, nil
			case nativeRefused(err):
				l.native.off()
				return 0, false, nil
			case err != nil:
				return 0, true, err
			}
		}
		var held int64
		if v, held, err = l.readValue(ctx, c, key); err != nil || held != 1 {
			return 0, true, err
		}
		known = true
	}
	return 0, true, nil
}

// readValue reads the lock's key after a native compare failed: held is
// 1 when it is ours (v then being its value, kept for the next command), 0
// when it is gone, -1 when another holds it.
func (l *Lock) readValue(ctx context.Context, c commander, key string) (v string, held int64, err error) {
	v, err = c.Do(ctx, "GET", key).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return "", 0, nil
	case err != nil:
		return "", 0, err
	}
	prefix := strconv.Itoa(len(l.token)) + ":" + l.token + ":"
	if !strings.HasPrefix(v, prefix) {
		return "", -1, nil
	}
	l.value.Store(&v)
	return v, 1, nil
}
