package redislock

import (
	"errors"
	"fmt"
	"strings"
)

// Errors returned by this package. Compare with [errors.Is]: most are
// returned wrapped, with the offending value in the message.
var (
	// ErrNotObtained is returned by [Client.Obtain] and [Client.ObtainMulti]
	// when the lock is held by another token and the retry strategy gave up
	// (or the context ended while waiting; then the error also matches the
	// context's error), and by [Lock.Refresh] when the lock is no longer
	// held.
	ErrNotObtained = errors.New("redislock: not obtained")

	// ErrLockNotHeld is returned by [Lock.Release] when the lock, or some of
	// its keys, had expired or been taken by another token.
	ErrLockNotHeld = errors.New("redislock: lock not held")

	// ErrInvalidTTL is returned, before anything is sent to Redis, for a TTL
	// below one millisecond: Redis would delete the key at once while the
	// call reported success.
	ErrInvalidTTL = errors.New("redislock: invalid ttl")

	// ErrInvalidKey is returned, before anything is sent to Redis, for an
	// empty key list, an empty key, a key given twice, or a fence key that
	// is also a lock key.
	ErrInvalidKey = errors.New("redislock: invalid key")

	// ErrCrossSlot is matched by a [*CrossSlotError]: on Redis Cluster, the
	// lock keys and the fence key of one lock must share a hash slot.
	ErrCrossSlot = errors.New("redislock: keys in different cluster hash slots")

	// ErrNilClient is returned when the [Client] or its [RedisClient] is nil.
	ErrNilClient = errors.New("redislock: nil redis client")

	// ErrNilContext is returned when a nil context is passed.
	ErrNilContext = errors.New("redislock: nil context")
)

// CrossSlotError reports keys of one lock that a Redis Cluster keeps in
// different hash slots. One Lua script can only touch keys of one slot, so
// such a lock cannot be taken atomically; use a hash tag ("{job}:a",
// "{job}:b", see [HashSlot]). It is returned before anything is sent, and
// errors.Is(err, ErrCrossSlot) holds.
type CrossSlotError struct {
	Keys  []string // every key of the request, lock keys first, then the fence key
	Slots []int    // Slots[i] is the hash slot of Keys[i]
}

// Error names every key with its slot.
func (e *CrossSlotError) Error() string {
	var b strings.Builder
	b.WriteString(ErrCrossSlot.Error())
	b.WriteString(":")
	for i, k := range e.Keys {
		fmt.Fprintf(&b, " %q=%d", k, e.Slots[i])
	}
	b.WriteString(` (put a common hash tag in every key, like "{job}:lock" and "{job}:fence")`)
	return b.String()
}

// Unwrap returns [ErrCrossSlot].
func (e *CrossSlotError) Unwrap() error { return ErrCrossSlot }
