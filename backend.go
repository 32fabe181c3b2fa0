package redislock

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/native"
	"github.com/redislock/redislock/internal/script"
	"github.com/redislock/redislock/internal/value"
)

// A backend sends the commands of a lease: one Redis deployment, or a
// quorum of independent masters (docs/ARCHITECTURE.md, "The backend
// seam"). It runs the calls the handle builds and gives one reply.
type backend interface {
	// run runs c for the lease h and returns its integer reply; a reply
	// that is not an integer is an [ErrUnexpectedReply].
	run(ctx context.Context, h *handle, c call) (int64, error)
	// redis returns the one go-redis client behind the backend, for what
	// needs a connection of its own (blocking waits, WAIT, Observe), or
	// nil when there is none.
	redis() RedisClient
}

// op is what a call does, for the backends that combine several
// servers' replies, and for error messages.
type op uint8

const (
	opObtain op = iota + 1
	opRefresh
	opRelease
	opTTL
)

// opNames are the ops' names; the zero op is a TTL's too.
var opNames = [...]string{"ttl", opObtain: "obtain", opRefresh: "refresh", opRelease: "release", opTTL: "ttl"}

func (o op) String() string { return opNames[o] }

// A call is one script run on a lease's keys, with an integer reply.
type call struct {
	op     op
	script *script.Script
	keys   []string
	args   []any
	ro     bool   // it writes nothing: EVALSHA_RO where the server has it
	needs  string // the server it needs, for ErrServerTooOld; "": any that runs scripts

	// compare: the call compares one key's lock value (refresh.lua with
	// ms, delete.lua), which a server may do natively (native.go). plain:
	// the first obtain attempt of one free key with a generated token,
	// which may be a plain SET NX.
	compare bool
	plain   bool
	ms      int64

	// A release's: units is how many things it releases (the keys of a
	// lock, one permit or hold), which its reply counts (see kind);
	// denied, when not nil, is the call to send instead when the server's
	// ACL refuses this one before it wrote anything; next, the waiter id
	// it registers (a lock's release that asks again, waitforrelease.go).
	units  int
	denied *call
	next   string
}

// single is the backend of one Redis deployment (a node, Sentinel, a
// Cluster, a Ring) through one go-redis client: a Client's.
type single struct {
	client RedisClient
	do     native.Doer      // client's plain commands; nil when it has none
	server *native.Commands // what the server offers besides scripts; nil: scripts only

	// setHeld: the last plain obtain attempt found its key held, so that
	// the next runs the script (see plainObtain).
	setHeld atomic.Bool
}

// init makes s the backend of client; natives: it may use the server's
// native commands (a Client from New).
func (s *single) init(client RedisClient, natives bool) {
	s.client = client
	s.do, _ = client.(native.Doer)
	if natives {
		s.server = new(native.Commands)
	}
}

func (s *single) redis() RedisClient { return s.client }

func (s *single) run(ctx context.Context, h *handle, c call) (int64, error) {
	switch {
	case c.compare && s.server != nil && s.do != nil && len(c.keys) == 1:
		if n, ok, err := s.compare(ctx, h, c); ok {
			return n, err
		}
	case c.plain:
		return s.plainObtain(ctx, h, c)
	}
	v, err := c.script.Do(ctx, s.client, c.ro, c.keys, c.args...)
	if err != nil {
		return 0, typed(ctx, s.client, c.keys, c.needs, err)
	}
	n, ok := v.(int64)
	if !ok {
		return 0, unexpectedReply(c.op, h.keys, v)
	}
	return n, nil
}

// plainObtain is the first obtain attempt of one key with a generated
// token (fenced or not), as obtain_plain.lua or a plain SET NX PX
// (docs/ARCHITECTURE.md, "The backend seam"). Its reply is obtain.lua's:
// the fence token (0 unfenced) when obtained, obtainHeld when not.
func (s *single) plainObtain(ctx context.Context, h *handle, c call) (n int64, err error) {
	natives := s.server != nil && s.do != nil && len(c.keys) == 1
	held := s.setHeld.Load()
	if natives && !held {
		err = s.do.Do(ctx, "set", c.keys[0], h.args.Value(h.metadata), "nx", "px", h.args.TTLArg()).Err()
		if errors.Is(err, redis.Nil) {
			n, err = obtainHeld, nil
		}
	} else {
		c.plain, c.script, c.args = false, plainScript, h.argBuf[5:8]
		n, err = s.run(ctx, h, c)
	}
	if natives && err == nil && (n == obtainHeld) != held {
		s.setHeld.Store(!held)
	}
	return n, err
}

// compare runs a refresh or a delete of one key as a native compare on
// the lock's value where the server has one; ok is false when the script
// must run instead (no such command, or the server refused it).
func (s *single) compare(ctx context.Context, h *handle, c call) (n int64, ok bool, err error) {
	has := s.server.Get(ctx, s.do)
	var v native.Value
	var next native.Value
	switch {
	case c.op == opRefresh && has&native.SetIfEq != 0: // also a release before MinHold
		v = h.lockValue()
		n, next, err = native.Refresh(ctx, s.do, c.keys[0], v, h.token, c.ms)
	case c.op == opRelease && has&(native.DelIfEq|native.DelEx) != 0:
		v = h.lockValue()
		n, next, _, err = native.Delete(ctx, s.do, has, c.keys[0], v, h.token)
	default:
		return 0, false, nil
	}
	if errors.Is(err, native.ErrRefused) {
		s.server.Off()
		return 0, false, nil
	}
	if next != v {
		learnt := next
		h.matched.Store(&learnt)
	}
	return n, true, err
}

// lockValue returns the value the handle's obtain wrote in its keys, as
// native compares need it: "<#token>:<token>:<fence>:<metadata>"
// (lib.lua), built once; unknown for a handle from Attach until read.
func (h *handle) lockValue() native.Value {
	if v := h.matched.Load(); v != nil {
		return *v
	}
	v := native.Value{V: value.Format(h.token, h.fence, h.args.FenceTag(), h.metadata), Known: true}
	h.matched.Store(&v)
	return v
}
