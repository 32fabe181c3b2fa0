package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/redislock/redislock/internal/check"
)

// checkCall rejects a nil client (a typed nil too, see docs/errors.md) or
// context before anything is sent.
func checkCall(ctx context.Context, client RedisClient) error {
	if ctx == nil {
		return ErrNilContext
	}
	if check.Nil(client) {
		return ErrNilClient
	}
	return nil
}

// ttlMillis converts ttl to the whole milliseconds that Redis takes (PX,
// PEXPIRE); a TTL under one millisecond is an [ErrInvalidTTL].
func ttlMillis(ttl time.Duration) (int64, error) {
	if ttl < time.Millisecond {
		return 0, fmt.Errorf("%w: %v is below the minimum of 1ms", ErrInvalidTTL, ttl)
	}
	return int64(ttl / time.Millisecond), nil
}

// checkKeys rejects an empty key list, an empty key, a repeated key, and a
// fence key that is also a lock key. On a cluster it also requires every
// key, the fence key included, to share one hash slot.
func checkKeys(keys []string, fenceKey string, cluster bool) error {
	if msg := check.Keys(keys, fenceKey); msg != "" {
		return fmt.Errorf("%w: %s", ErrInvalidKey, msg)
	}
	if cluster {
		return checkSlots(keys, fenceKey)
	}
	return nil
}
