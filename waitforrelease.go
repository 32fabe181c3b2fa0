package redislock

import (
	"time"

	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/retry"
)

// WaitForRelease returns a strategy that waits for the lock to be released
// instead of sleeping a fixed backoff: waiters stand in line, across
// clients and processes, each keeping its place for as long as it waits,
// and the holder's [Lock.Release] hands the lock to the one that arrived
// first, and wakes no other. The wait ends as [Client.ObtainMulti] says,
// but a waiter never sleeps past the holder's expiry: the lock of a holder
// that died is taken as soon as its key expires.
//
// A waiter handed the lock must take it within its claim window,
// min(500 ms, its TTL), or the key expires at the end of the window and
// the line goes on. A caller's first attempt takes a free lock as any
// Obtain does, but a waiter already in line never passes one that arrived
// before it.
//
// Every party to the lock should use it: the Release of a lock obtained
// with it, or attached with [Client.Attach], hands the lock over to a
// registered waiter; the Release of a lock obtained otherwise deletes it,
// and waiters notice when their block ends (within about a second). Use
// it for a lock that is contended and held briefly. docs/waiting.md has the
// mechanism, its costs and its figures. Wrapped in [LimitRetry], [Jitter]
// or [FullJitter] it stays event-driven; in any other wrapper it polls
// ([RetryStrategy]).
//
// fallback is used between attempts that failed on a transient Redis
// error, and to poll when the client, the server's ACL or the key's name
// does not allow blocking (a [RedisClient] that is only a redis.Scripter,
// a short ReadTimeout, no BLPOP, a key without hash tag that contains "}").
// Default (nil): ExponentialBackoff(8ms, 128ms) with ±50% [Jitter].
//
// Cancelling the context ends the wait of a goroutine at once, unless it is
// the one that blocks on Redis for its client and key: that one notices
// when its block ends, within about a second. Errors are those of
// [Client.ObtainMulti]. [Lock.Refresh] given this strategy retries
// transient errors with fallback, and NextBackoff returns fallback's. It is
// safe for concurrent use, and each call starts afresh.
func WaitForRelease(fallback RetryStrategy) RetryStrategy {
	if fallback == nil {
		fallback = Jitter(ExponentialBackoff(8*time.Millisecond, 128*time.Millisecond), 0.5)
	}
	return retry.Events(fallback)
}

// waited is what the release of a lease that WaitForRelease obtained (or
// Attach made) needs to hand its keys over; a handle without one deletes.
type waited struct {
	companions []string      // the keys and their companions, as the wait named them; nil: work them out
	hint       *handoff.Hint // the Client's, told when a release hands a key over; nil: not told
	again      bool          // the wait asked again at once, alone: the release registers the next
	ttl        time.Duration // the wait's TTL, for the claim window of the next (NewID)
	ifAllowed  bool          // attached: a user whom the ACL refuses the queues deletes instead
}

// releaseCall is release.lua for h, handing each key of ours over to its
// next waiter; ok is false when the keys cannot have companions in their
// slot (the caller deletes instead). A lock whose wait asked again at once,
// alone, also registers its next wait (release.lua's ARGV[3]).
func (w *waited) releaseCall(h *handle) (c call, ok bool) {
	keys, ok := handoff.ReleaseKeys(w.companions, h.keys)
	if !ok {
		return call{}, false
	}
	c = call{op: opRelease, script: releaseScript, keys: keys, args: h.tokenArgs(), units: len(h.keys)}
	if w.again && !w.ifAllowed && len(h.keys) == 1 && len(keys) == 3 {
		c.next = handoff.NewID(w.ttl)
		c.args = append(c.args, c.next, handoff.RegistrationArg, handoff.RegisteredLapseArg)
	}
	return c, true
}

// handedOver tells the Client's hint that the release c of h, sent at
// sent, handed its one key over (and registered c.next, if any).
func (w *waited) handedOver(h *handle, c call, sent time.Time) {
	if len(h.keys) == 1 {
		w.hint.HandedOver(&h.keys[0], c.next, sent)
	}
}
