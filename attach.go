package redislock

import (
	"fmt"
	"slices"

	"github.com/redislock/redislock/internal/native"
)

// Attach returns a handle on a lock obtained elsewhere, often by another
// process (a cleanup job, a command-line tool), from what that holder's
// [Lock.Keys], [Lock.Token] and [Lock.FenceToken] reported (fence 0 when it
// has none or is not known). It sends nothing, checks nothing on Redis and
// does not block.
//
// The handle checks ownership by exact token, as the holder's does
// (docs/keepalive.md): with a wrong token, [Lock.Release] deletes nothing
// and returns [ErrLockNotHeld], [Lock.Refresh] changes nothing and returns
// [ErrNotObtained], and [Lock.TTL] returns (0, nil). With the right token,
// Release hands each key over to a waiter of [WaitForRelease], as the
// holder's would, or deletes it when the server's ACL refuses this user the
// wait queues. Its Metadata is "" (see [Client.Inspect]); [Lock.KeepAlive]
// returns [ErrLockNotHeld] until a successful Refresh through it. The
// original handle is not told: a Release here ends the lock for both, and
// the original's keep-alive reports it lost at its next refresh.
//
// Errors, before anything is sent: [ErrNilClient]; [ErrInvalidKey] for an
// empty key list, an empty or repeated key; on a *redis.ClusterClient, a
// [*CrossSlotError] for keys of different hash slots; [ErrInvalidToken] for
// an empty token. keys is not retained. It is safe for concurrent use.
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
	h := &handle{be: &c.one, kind: lockKind{}, keys: slices.Clone(keys), token: token, argBuf: [7]any{token}, fence: fence,
		wait: &waited{hint: &c.requeue, ifAllowed: true}}
	h.matched.Store(&native.Value{}) // not known: the first native compare reads it
	c.observeAttach(h)
	return (*Lock)(h), nil
}
