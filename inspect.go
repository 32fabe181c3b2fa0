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

	// Held reports whether the key exists, whoever wrote it: a key in
	// another format (bsm/redislock's, or anything else) blocks Obtain too.
	Held bool

	// Foreign reports a held key not in this package's format (or not a
	// string): Token, FenceToken and Metadata are then left empty.
	Foreign bool

	// Token is the holder's token, for [Client.Attach].
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

// Inspect reads the lock key without its token, as a [LockInfo]. It is
// meant for status tools; a holder checks its own lock with [Lock.TTL].
// Neither a missing key nor one in another format is an error. The answer
// can be stale as soon as it is returned.
//
// Inspect makes one attempt, blocking for one round trip (cancelling ctx
// ends the wait as go-redis allows), and returns the Redis error as it is;
// never nil, nil. Before anything is sent, it returns [ErrNilClient],
// [ErrNilContext], or [ErrInvalidKey] for an empty key; a reply that its
// script never gives is [ErrUnexpectedReply]. It is safe for concurrent use.
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
