package redislock

import (
	"context"
	"fmt"
	"reflect"
	"time"
)

// checkCall rejects a nil client or context before anything is sent. A
// typed nil (a nil *redis.Client passed as a RedisClient) is a nil client
// too: calling it would panic inside go-redis.
func checkCall(ctx context.Context, client RedisClient) error {
	if ctx == nil {
		return ErrNilContext
	}
	if client == nil {
		return ErrNilClient
	}
	if v := reflect.ValueOf(client); v.Kind() == reflect.Pointer && v.IsNil() {
		return ErrNilClient
	}
	return nil
}

// ttlMillis converts ttl to the whole milliseconds that Redis takes (PX,
// PEXPIRE). A TTL under one millisecond would make Redis delete the key at
// once while the call reported success, so it is an error.
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
	if len(keys) == 0 {
		return fmt.Errorf("%w: no keys given", ErrInvalidKey)
	}
	for i, k := range keys {
		if k == "" {
			return fmt.Errorf("%w: key %d of %d is empty", ErrInvalidKey, i+1, len(keys))
		}
		if k == fenceKey {
			return fmt.Errorf("%w: fence key %q is also a lock key", ErrInvalidKey, k)
		}
	}
	if dup, ok := duplicate(keys); ok {
		return fmt.Errorf("%w: key %q is given more than once", ErrInvalidKey, dup)
	}
	if cluster {
		return checkSlots(keys, fenceKey)
	}
	return nil
}

// duplicate returns a key that occurs twice in keys. It allocates nothing
// for the short lists that locks use.
func duplicate(keys []string) (string, bool) {
	if len(keys) <= 16 {
		for i, k := range keys {
			for _, other := range keys[i+1:] {
				if k == other {
					return k, true
				}
			}
		}
		return "", false
	}
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		if _, ok := seen[k]; ok {
			return k, true
		}
		seen[k] = struct{}{}
	}
	return "", false
}
