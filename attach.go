package redislock

import (
	"fmt"
	"slices"

	"github.com/redislock/redislock/internal/native"
)

// Attach returns a handle on a lock obtained elsewhere, often by another
// process (a cleanup job, a command-line tool), from what that holder's
// [Lock.Keys], [Lock.Token] and [Lock.FenceToken] reported: its keys, its
// token and its fence token (0 when it has none or it is not known).
//
// Attach sends nothing and checks nothing on Redis, and it does not block.
// The handle's [Lock.Release], [Lock.Refresh] and [Lock.TTL] run the same
// scripts or commands as the original's, with the same ownership check by
// exact token (docs/keepalive.md, "From another process"): with a wrong
// token, Release deletes nothing and returns [ErrLockNotHeld], Refresh
// changes nothing and returns [ErrNotObtained], and TTL returns (0, nil).
// With the right token, Release hands each key over to a waiter of
// [WaitForRelease] when one is registered, as the holder's would (or
// deletes it when the server's ACL refuses this user the wait queues). Its
// Metadata is "" (read it with [Client.Inspect]). Its lease is not known:
// [Lock.KeepAlive] returns [ErrLockNotHeld] until a successful Refresh
// through the handle. The original handle is not told of what the attached
// one does: a Release here ends the lock for both, and the original's
// keep-alive then reports it lost at its next refresh.
//
// Errors, before anything is sent: [ErrNilClient]; [ErrInvalidKey] for an
// empty key list, an empty or repeated key; on a *redis.ClusterClient, a
// [*CrossSlotError] for keys of different hash slots; [ErrInvalidToken] for
// an empty token. keys is not retained: the Lock keeps its own copy. It is
// safe for concurrent use.
func (c *Client) Attach(keys []string, token string, fence int64) (*Lock, error) {
	if c == nil || c.client == nil {
		return nil, ErrNilClient
	}
	if err := checkKeys(keys, "", c.cluster); err != nil {
		return nil, err
	}
	if token == "" {
		return nil, fmt.Errorf("%w: empty token", ErrInvalidToken)
	}
	h := &handle{be: &c.one, kind: lockKind{}, keys: slices.Clone(keys), token: token, tokenArg: token, fence: fence,
		wait: &waited{hint: &c.requeue, ifAllowed: true}}
	h.matched.Store(&native.Value{}) // not known: the first native compare reads it
	c.observeAttach(h)
	return (*Lock)(h), nil
}
