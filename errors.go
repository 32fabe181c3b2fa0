package redislock

import (
	"errors"

	"github.com/redislock/redislock/internal/check"
	"github.com/redislock/redislock/internal/redisreply"
)

// Errors returned by this package. Compare with [errors.Is]: most are
// returned wrapped, with the offending value in the message. How each is
// found out is in docs/errors.md.
var (
	// ErrNotObtained is returned by [Client.Obtain] and [Client.ObtainMulti]
	// when the lock is held by another token and the retry strategy gave up
	// or the context ended while waiting (the error then also matches the
	// context's error), and by [Lock.Refresh] when the lock is not held.
	ErrNotObtained = errors.New("redislock: not obtained")

	// ErrLockNotHeld is returned by [Lock.Release] when the lock, or some of
	// its keys, had expired or been taken by another token, and by
	// [Lock.KeepAlive] when no lease of the lock is known to be valid.
	ErrLockNotHeld = errors.New("redislock: lock not held")

	// ErrLockLost is matched by [KeepAlive.Err] (and the cause of
	// [KeepAlive.Context]) when the keep-alive ended because the lock is
	// lost, or is about to be. The error also matches its cause:
	// [ErrNotObtained] (a refresh found it gone or taken), the last refresh
	// error if any (the lease ran out on the local clock), the error of a
	// refresh that failed for good, or [ErrMaxHoldReached].
	ErrLockLost = errors.New("redislock: lock lost")

	// ErrMaxHoldReached is matched, with [ErrLockLost], by the error of a
	// keep-alive that ended because [KeepAliveOptions.MaxHold] was reached.
	ErrMaxHoldReached = errors.New("redislock: maximum hold time reached")

	// ErrKeepAliveStopped is returned by [KeepAlive.Err] (and is the cause
	// of [KeepAlive.Context]) after [KeepAlive.Stop] or [Lock.Release]
	// ended a keep-alive that had not lost its lock.
	ErrKeepAliveStopped = errors.New("redislock: keep-alive stopped")

	// ErrKeepAliveRunning is returned by [Lock.KeepAlive] when a keep-alive
	// of the same Lock is still running.
	ErrKeepAliveRunning = errors.New("redislock: keep-alive already running")

	// ErrInvalidTTL is returned, before anything is sent to Redis, for a TTL
	// below one millisecond.
	ErrInvalidTTL = errors.New("redislock: invalid ttl")

	// ErrInvalidKey is returned, before anything is sent to Redis, for an
	// empty key list, an empty key, a key given twice, or a fence key that
	// is also a lock key.
	ErrInvalidKey = errors.New("redislock: invalid key")

	// ErrInvalidToken is returned by [Client.Attach] for an empty token, by
	// [Semaphore.Acquire] for an [Options.Token] that starts with "~", and
	// by [RWMutex.RLock] for a token that holds the write lock.
	ErrInvalidToken = errors.New("redislock: invalid token")

	// ErrInvalidOption is returned, before anything is sent to Redis or
	// started, for [KeepAliveOptions] that [Lock.KeepAlive] refuses (a
	// negative field, a Margin not below the TTL, an Interval not below TTL
	// less Margin), and for a negative [Options.MinReplicas] or
	// [Options.ReplicaTimeout] given to [Client.Obtain], [Client.ObtainMulti],
	// [Obtain] or [ObtainMulti].
	ErrInvalidOption = errors.New("redislock: invalid option")

	// ErrCrossSlot is matched by a [*CrossSlotError].
	ErrCrossSlot = errors.New("redislock: keys in different cluster hash slots")

	// ErrNilClient is returned when the [Client] or its [RedisClient] is nil.
	ErrNilClient = errors.New("redislock: nil redis client")

	// ErrNotReplicated is matched by a [*ReplicaError].
	ErrNotReplicated = errors.New("redislock: not acknowledged by enough replicas")

	// ErrNilContext is returned when a nil context is passed.
	ErrNilContext = errors.New("redislock: nil context")

	// ErrUnsupportedClient is returned, before anything is sent to Redis,
	// for [Options.MinReplicas] with a client other than a *redis.Client
	// (single node or Sentinel failover client) or a *redis.ClusterClient
	// (the message names the client's type), and by [Session.Add] for a
	// lease of another Client, or of a [Quorum].
	ErrUnsupportedClient = errors.New("redislock: option not supported by this redis client")

	// ErrUnexpectedReply is returned when Redis answered one of this
	// package's scripts with a reply of a shape the script never gives.
	// Nothing is retried after it.
	ErrUnexpectedReply = errors.New("redislock: unexpected reply from redis")

	// ErrWrongType is matched by a [*WrongTypeError].
	ErrWrongType = errors.New("redislock: key holds another kind of value")

	// ErrServerTooOld is returned, with nothing changed, when the server
	// lacks a command that the call needs; the message names the version
	// that has it: [Semaphore] needs Redis 7.0 or later (or any Valkey);
	// locks, RWMutex and elections run on Redis 6.2.
	ErrServerTooOld = errors.New("redislock: the server is too old for this call")

	// ErrUpgrade is returned by [RWMutex.Lock] called with the token of a
	// live read hold of the same RWMutex: a read hold is never upgraded to
	// the write lock (docs/errors.md). Nothing was changed.
	ErrUpgrade = errors.New("redislock: a read lock cannot be upgraded to a write lock")

	// ErrInvalidLimit is returned, before anything is sent to Redis, by the
	// methods of a [Semaphore] whose limit is below one.
	ErrInvalidLimit = errors.New("redislock: invalid semaphore limit")

	// ErrNoLeader is returned by [Election.Leader] when no campaigner leads
	// the election: nobody was elected, the last leader resigned or its
	// leadership expired, or a leader is handing over to the next.
	ErrNoLeader = errors.New("redislock: no leader")

	// ErrNotLeader is returned by [Leadership.Proclaim] when the leadership
	// has ended: after [Leadership.Resign], or, with [ErrLockLost], when it
	// was lost (its keep-alive ended, or Redis found the key gone or taken).
	ErrNotLeader = errors.New("redislock: not the leader")
)

// CrossSlotError reports keys of one lock (its fence key included) that a
// Redis Cluster keeps in different hash slots; use a hash tag ("{job}:a",
// "{job}:b", see [HashSlot]). It is returned before anything is sent, and
// errors.Is(err, ErrCrossSlot) holds.
type CrossSlotError struct {
	Keys  []string // every key of the request, lock keys first, then the fence key
	Slots []int    // Slots[i] is the hash slot of Keys[i]
}

// Error names every key with its slot.
func (e *CrossSlotError) Error() string {
	return ErrCrossSlot.Error() + check.SlotList(e.Keys, e.Slots)
}

// Unwrap returns [ErrCrossSlot].
func (e *CrossSlotError) Unwrap() error { return ErrCrossSlot }

// lostError is the error of a keep-alive that lost its lock: it matches
// [ErrLockLost] and its cause.
type lostError struct {
	msg   string // after "redislock: lock lost: "
	cause error  // may be nil
}

func (e *lostError) Error() string { return ErrLockLost.Error() + ": " + e.msg }

func (e *lostError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrLockLost}
	}
	return []error{ErrLockLost, e.cause}
}

// WrongTypeError reports a key that holds a value of another kind than the
// call keeps there (a semaphore's key obtained as a lock, a lock's key as
// an RWMutex's name). Nothing was changed. errors.Is(err, ErrWrongType)
// holds, and so does errors.As into the Redis error (Err).
type WrongTypeError struct {
	Key  string // the key, or "" when it could not be found out
	Type string // what it holds, as Redis's TYPE names it ("zset", "hash", …)
	Want string // what the call keeps there ("string" for a lock, …)
	Err  error  // the server's WRONGTYPE error
}

// Error names the key, what it holds and what the call wanted there.
func (e *WrongTypeError) Error() string {
	return ErrWrongType.Error() + redisreply.Describe(e.Key, e.Type, e.Want, e.Err)
}

// Unwrap returns [ErrWrongType] and the server's error.
func (e *WrongTypeError) Unwrap() []error { return []error{ErrWrongType, e.Err} }
