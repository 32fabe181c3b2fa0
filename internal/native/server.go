package native

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/value"
)

// Server is one deployment's native path: Do sends plain commands (nil:
// none), Has is what the server offers besides scripts (nil: scripts
// only). A Server is safe for concurrent use once Do and Has are set.
type Server struct {
	Do  Doer
	Has *Commands

	// held: the last plain obtain attempt found its key held, so that the
	// next runs the script (see Obtain).
	held atomic.Bool
}

// On reports whether s may send native commands.
func (s *Server) On() bool { return s.Has != nil && s.Do != nil }

// Compare refreshes key to ms milliseconds as [Refresh] (del false), or
// deletes it as [Delete] (del true), where the server has the command.
// The value compared is lockValue's (see [Matched]); m then holds the
// value last matched. ok is false when the caller
// must run its script instead: no such command, or the server refused it
// (every native command is then off).
func (s *Server) Compare(ctx context.Context, del bool, key, token string, ms int64,
	m *atomic.Pointer[Value], lockValue func() Value) (n int64, ok bool, err error) {
	has := s.Has.Get(ctx, s.Do)
	var v, next Value
	switch {
	case !del && has&SetIfEq != 0:
		v = lockValue()
		n, next, err = Refresh(ctx, s.Do, key, v, token, ms)
	case del && has&(DelIfEq|DelEx) != 0:
		v = lockValue()
		n, next, _, err = Delete(ctx, s.Do, has, key, v, token)
	default:
		return 0, false, nil
	}
	if errors.Is(err, ErrRefused) {
		s.Has.Off()
		return 0, false, nil
	}
	if next != v {
		learnt := next // only here, so that next stays on the stack
		m.Store(&learnt)
	}
	return n, true, err
}

// Matched returns the value m holds, or, when it holds none, stores and
// returns the one format builds (Known).
func Matched(m *atomic.Pointer[Value], format func() string) Value {
	if v := m.Load(); v != nil {
		return *v
	}
	v := Value{V: format(), Known: true}
	m.Store(&v)
	return v
}

// Obtain is the first obtain attempt of key with a generated token (a's,
// with metadata): a plain SET NX PX of a's value and TTL where s is On
// and the last such attempt did not find its key held, script otherwise.
// Its reply is script's: held when the key was held.
func (s *Server) Obtain(ctx context.Context, key string, a *value.Args, metadata string,
	held int64, script func() (int64, error)) (n int64, err error) {
	natives := s.On()
	was := s.held.Load()
	if natives && !was {
		err = s.Do.Do(ctx, "set", key, a.Value(metadata), "nx", "px", a.TTLArg()).Err()
		if errors.Is(err, redis.Nil) {
			n, err = held, nil
		}
	} else {
		n, err = script()
	}
	if natives && err == nil && (n == held) != was {
		s.held.Store(!was)
	}
	return n, err
}
