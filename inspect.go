package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/redislock/redislock/internal/value"
)

// LockInfo describes a lock key as [Client.Inspect] found it.
type LockInfo struct {
	// Key is the key inspected.
	Key string

	// Held reports whether the key exists: held by someone, whoever wrote
	// it. A key in another format (written by bsm/redislock, or anything
	// else) is held too, since it makes every Obtain on it fail.
	Held bool

	// Foreign reports a held key whose value is not in this package's
	// format "<len>:<token>:<fence>:<metadata>", or that is not a string:
	// Token, FenceToken and Metadata are then unknown and left empty.
	Foreign bool

	// Token is the holder's token: with it, [Client.Attach] gives a handle
	// that can release or refresh the lock.
	Token string

	// FenceToken is the fencing token of the holder's acquisition; 0 when
	// the lock was obtained without a fence key.
	FenceToken int64

	// Metadata is what the holder stored with [Options.Metadata].
	Metadata string

	// Value is the key's value as stored ("" when it is not a string).
	Value string

	// TTL is the time left before the key expires; negative (-1ms) when it
	// has no expiry, 0 when the key does not exist.
	TTL time.Duration
}

// Inspect reads the lock key without its token, in one read-only script
// (one round trip): whether it is held, by which token, with which fence
// token and metadata, for how long still. It is meant for status tools; a
// holder checks its own lock with [Lock.TTL].
//
// A key that does not exist gives Held false. A key that is held but not in
// this package's format is reported with Held and Foreign true, not as an
// error. The answer can be stale as soon as it is returned. Inspect blocks
// for one round trip, makes one attempt, and returns the Redis error as it
// is (cancelling ctx ends the wait as go-redis allows); it never returns
// nil, nil.
//
// Errors, before anything is sent: [ErrNilClient], [ErrNilContext],
// [ErrInvalidKey] for an empty key. A reply that inspect's script never
// gives (a proxy or wrapper that changed it) is [ErrUnexpectedReply]. It is
// safe for concurrent use.
func (c *Client) Inspect(ctx context.Context, key string) (*LockInfo, error) {
	if c == nil {
		return nil, ErrNilClient
	}
	if err := checkCall(ctx, c.client); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	result, err := inspectScript.RunRO(ctx, c.client, []string{key}).Result()
	if err != nil {
		return nil, err
	}
	i, ok := value.ParseInspect(result)
	if !ok {
		return nil, fmt.Errorf("%w: inspect %q: %#v", ErrUnexpectedReply, key, result)
	}
	return &LockInfo{Key: key, Held: i.Held, Foreign: i.Foreign, Token: i.Token, FenceToken: i.Fence,
		Metadata: i.Metadata, Value: i.Value, TTL: i.TTL}, nil
}
