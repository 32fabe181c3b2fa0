// Package rwlock holds the parts of an RWMutex that need none of the root
// package's types: the names of its keys and the reading of the refusals
// of its scripts. See docs/rwmutex.md for the keys and the scripts.
package rwlock

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/keyslot"
)

// Indexes into the keys of Keys: W, R, H, Q, then the lines and liveness
// sets of W and R (WQ, RQ, WA, RA, see lua/rwmutex_lib.lua).
const (
	Writer = iota
	Readers
	Holds
	Writers
	WriterQueue
	ReaderQueue
	WriterAlive
	ReaderAlive
)

// Keys returns the keys of the RWMutex called name, in the order of the
// indexes above. When name has a hash tag they are name, ":redislock:rw:"
// and a role ("writer", "readers", …); otherwise they are built on
// "{name}" and end with ":untagged". The lines and liveness sets are named
// as the handoff engine names them; they are empty for the empty name,
// which no call accepts.
func Keys(name string) (keys [8]string) {
	prefix, suffix := name+":redislock:rw:", ""
	if !keyslot.HasTag(name) {
		prefix, suffix = "{"+name+"}:redislock:rw:", ":untagged"
	}
	for i, role := range [...]string{"writer", "readers", "holds", "writers"} {
		keys[i] = prefix + role + suffix
	}
	if companions, ok := handoff.Companions(keys[:Holds]); ok {
		copy(keys[WriterQueue:], companions[2:])
	}
	return keys
}

// The error replies of the RLock and Lock scripts that refuse the call
// (lua/rwmutex_lib.lua).
const (
	upgradeReply      = "redislock: rw upgrade refused"
	heldByCallerReply = "redislock: rw token holds the write lock"
)

// Refusal says why a script refused an RLock or Lock.
type Refusal uint8

// The refusals.
const (
	NotRefused   Refusal = iota // another error, or none
	Upgrade                     // the token has a read hold and asked for the write lock
	HeldByCaller                // the token holds the write lock and asked for a read hold
)

// Refused reads the refusal in err, an error of the RLock or Lock script.
func Refused(err error) Refusal {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return NotRefused
	}
	switch msg := reply.Error(); {
	case strings.Contains(msg, upgradeReply):
		return Upgrade
	case strings.Contains(msg, heldByCallerReply):
		return HeldByCaller
	}
	return NotRefused
}
