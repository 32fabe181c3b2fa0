package redislock

import (
	"context"

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
	// ms, delete.lua), which a server may do natively (internal/native).
	// plain: the first obtain attempt of one free key with a generated
	// token, which may be a plain SET NX.
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
	client  RedisClient
	natives native.Server // its plain commands, and what the server offers besides scripts
}

// init makes s the backend of client; natives: it may use the server's
// native commands (a Client from New).
func (s *single) init(client RedisClient, natives bool) {
	s.client = client
	s.natives.Do, _ = client.(native.Doer)
	if natives {
		s.natives.Has = new(native.Commands)
	}
}

func (s *single) redis() RedisClient { return s.client }

// run runs c; a call that compares, or the plain first obtain attempt,
// may go as native commands (docs/ARCHITECTURE.md, "The backend seam").
func (s *single) run(ctx context.Context, h *handle, c call) (int64, error) {
	switch {
	case c.compare && s.natives.On() && len(c.keys) == 1:
		del := c.op == opRelease // else a refresh (also a release before MinHold)
		n, ok, err := s.natives.Compare(ctx, del, c.keys[0], h.token, c.ms, &h.matched, h.lockValue)
		if ok {
			return n, err
		}
	case c.plain:
		c.plain, c.script, c.args = false, plainScript, h.argBuf[4:7]
		if len(c.keys) == 1 {
			script := func() (int64, error) { return s.run(ctx, h, c) }
			return s.natives.Obtain(ctx, c.keys[0], &h.args, h.metadata, obtainHeld, script)
		}
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

// lockValue returns the value the handle's obtain wrote in its keys, as
// native compares need it: "<#token>:<token>:<fence>:<metadata>"
// (lib.lua), built once; unknown for a handle from Attach until read.
func (h *handle) lockValue() native.Value {
	return native.Matched(&h.matched, func() string {
		return value.Format(h.token, h.fence, h.args.FenceTag(), h.metadata)
	})
}
