package redislock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/script"
)

// WaitForRelease returns a strategy that waits for the lock to be released
// instead of sleeping a fixed backoff: the holder's [Lock.Release] hands the
// lock over to one waiter, the one that has waited longest, across clients
// and processes, and wakes no other. Waiting ends at the context's deadline
// or, when the context has none, the TTL after the call began, as with
// every strategy; a waiter never sleeps past the holder's expiry, so the
// lock of a holder that died is taken as soon as its key expires.
//
// Every party to the lock should use it: the Release of a lock obtained
// with it, or attached with [Client.Attach], hands the lock over to a
// registered waiter; the Release of a lock obtained otherwise deletes it
// (its user may lack the ACL of the wait queues), and waiters notice when
// their block ends (within about a second).
//
// Use it for a lock that is contended and held briefly. It costs three
// round trips per acquisition however many wait; two for a caller that
// asks again, through the same Client, for a one-key lock whose Release
// handed it to a waiter less than a second before (the rule on a hot key):
// its first attempt then goes with its first block, sent at once or, when
// other goroutines of this process wait for the key through the same
// go-redis client, when its turn among them comes. When that caller was
// alone in its process to wait for the key, the Release of the lock it got
// so also registers its next wait, and an Obtain within 50 ms sends only
// its block and the attempt after it. It costs none more than
// a plain Obtain when the lock is free and this Client did not just hand
// it over; one blocked connection per go-redis client and key while
// goroutines wait (at most half the client's pool); and two short-lived
// companion keys per lock key in its hash slot. docs/waiting.md describes
// the mechanism and its figures.
//
// It composes with this package's wrappers: [LimitRetry] (WaitForRelease
// (…), n) waits event-driven for at most n+1 attempts, where a wake-up, or
// a block that ends without one, counts an attempt; [Jitter] and
// [FullJitter] spread fallback's backoffs. Any other wrapper (a strategy
// written by the caller, even around this one) cannot be seen through: it
// polls with its own NextBackoff.
//
// fallback is used where events cannot be: between attempts that failed on
// a transient Redis error, and in place of blocking when the client has no
// Pipeline method (a [RedisClient] that is only a redis.Scripter), when its
// ReadTimeout is too short for a block, when the server refuses BLMOVE
// (Redis before 6.2, an ACL), or when a key cannot have companions in its
// hash slot (a key without hash tag that contains "}"). Polling then sleeps
// fallback's backoff, or less when the holder expires sooner.
// Default (nil): ExponentialBackoff(8ms, 128ms) with ±50% [Jitter].
//
// Cancelling the context ends the wait of a goroutine at once, unless it is
// the one that blocks on Redis for its client and key: that one notices
// when its block ends, within about a second, and passes on a lock that
// came with that block. The context's deadline bounds the wait whatever the
// server's hz: blocks end a server tick (1/hz) before it. A waiter that
// gives up takes its registration back with one more script call; one that
// dies costs at most one reservation of 100 ms with no taker, and so does a
// caller whose Release registered its next wait (above) and that does not
// ask again within a second. Errors are
// those of [Client.ObtainMulti].
//
// [Lock.Refresh] given this strategy retries transient errors with
// fallback, and NextBackoff returns fallback's. Like the other strategies,
// the value is safe for concurrent use and each call starts afresh.
func WaitForRelease(fallback RetryStrategy) RetryStrategy {
	if fallback == nil {
		fallback = Jitter(ExponentialBackoff(8*time.Millisecond, 128*time.Millisecond), 0.5)
	}
	return &waitForRelease{fallback: fallback}
}

type waitForRelease struct {
	fallback RetryStrategy
}

func (w *waitForRelease) NextBackoff() time.Duration { return w.fallback.NextBackoff() }

// restart returns fallback afresh: where a call retries without events
// (Refresh), it follows fallback.
func (w *waitForRelease) restart() RetryStrategy { return startRetry(w.fallback) }

func (w *waitForRelease) waitPlan() (waitPlan, bool) { return waitPlan{fallback: w.fallback}, true }

// waitPlan is how an Obtain waits event-driven: the strategy for the
// waits that cannot use events, and a bound on the attempts (0: none).
type waitPlan struct {
	fallback RetryStrategy
	attempts int
}

// eventDriven is implemented by [WaitForRelease] and by the wrappers of
// this package, which report the plan of the strategy they wrap with their
// own limits; ok is false when nothing inside waits for events.
type eventDriven interface {
	waitPlan() (plan waitPlan, ok bool)
}

// planOf returns the event-driven plan of s, if s has one.
func planOf(s RetryStrategy) (waitPlan, bool) {
	if e, ok := s.(eventDriven); ok {
		return e.waitPlan()
	}
	return waitPlan{}, false
}

// obtainWaiting is ObtainMulti's wait for [WaitForRelease]: lock has its
// keys, token and TTL; scriptKeys and args are the obtain script's, and
// pollArgs those of a plain attempt that reads the holder's expiry. On
// success the lock has its fence token and lease start.
func (c *Client) obtainWaiting(ctx context.Context, lock *Lock, ttl time.Duration, plan waitPlan, scriptKeys []string, args, pollArgs []any) error {
	req := &waitRequest{plan: plan.fallback}
	req.Request = handoff.Request{
		Client:      c.client,
		Keys:        lock.keys,
		Obtain:      obtainScript,
		CallKeys:    scriptKeys,
		CallArgs:    args,
		PollArgs:    pollArgs,
		Leave:       leaveScript,
		TTL:         ttl,
		Backoff:     req.backoff,
		MaxAttempts: plan.attempts,
		Transient:   script.Transient,
		Attempted:   lock.hookAttempted(ctx),
		Successors:  true,
	}
	if len(lock.keys) == 1 {
		req.ID, req.Registered, req.Requeue = c.requeue.take(lock.keys[0])
	}
	out, err := c.registry.Wait(ctx, &req.Request)
	if out.Obtained {
		// A lock obtained at the end of a block counts its lease from the
		// block's start: the script ran at some point after it.
		lock.fence, lock.handover, lock.waiting = out.Value, handOver, out.Companions
		lock.lease.Obtained(out.Sent, ttl)
	}
	if err == nil {
		// A caller that asked again at once, alone among this process's
		// waiters for the key: its Release registers its next wait.
		lock.again = out.Alone
		return nil
	}
	return c.waitError(ctx, lock, out, err)
}

// waitRequest is the wait of one obtainWaiting call, with its fallback,
// which starts when the wait first needs it: most waits never do.
type waitRequest struct {
	handoff.Request
	plan, fallback RetryStrategy
}

func (r *waitRequest) backoff() time.Duration {
	if r.fallback == nil {
		r.fallback = startRetry(r.plan)
	}
	return r.fallback.NextBackoff()
}

// waitError is obtainWaiting's error for the wait's err (not nil), out
// being what the wait obtained.
func (c *Client) waitError(ctx context.Context, lock *Lock, out handoff.Outcome, err error) error {
	return waitFailed(ctx, out, err, "obtain of", lock.keys, func(rctx context.Context) {
		// Given back, not released by the caller: no hint for a requeue.
		lock.requeue = nil
		_, _, _ = lock.runRelease(rctx)
	})
}

// waitFailed is the error of every primitive's wait that ended with err
// (not nil), out being what the wait obtained; call and name (quoted) name
// the call in an [ErrUnexpectedReply]. The wait's own errors become the
// library's; any other is returned as it is. When the wait obtained at the
// end of a block that outlasted the context (the caller has gone), release
// gives it back, under a timeout of its own.
func waitFailed(ctx context.Context, out handoff.Outcome, err error, call string, name any, release func(context.Context)) error {
	var ended *handoff.EndedError
	switch {
	case errors.As(err, &ended):
		if out.Obtained {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			defer cancel()
			release(rctx)
		}
		return fmt.Errorf("%w: %w", ErrNotObtained, ended.Err)
	case errors.Is(err, handoff.ErrGaveUp):
		return ErrNotObtained
	case errors.Is(err, handoff.ErrUnexpectedReply):
		return fmt.Errorf("%w: %s %q: %w", ErrUnexpectedReply, call, name, err)
	}
	return err
}

// handover is how a Lock's Release treats waiters.
type handover uint8

const (
	// deleteKeys: delete.lua deletes the keys, as for a lock obtained
	// without WaitForRelease (whose user may lack the ACL of the wait
	// queues); waiters notice when their block ends.
	deleteKeys handover = iota
	// handOver: each key of ours is handed over to its next waiter when
	// one is registered (a lock obtained with WaitForRelease).
	handOver
	// handOverIfAllowed: as handOver, but a user whom the server's ACL
	// refuses the wait queues releases as deleteKeys (an attached lock,
	// whose holder's strategy is not known).
	handOverIfAllowed
)

// runRelease runs release.lua for l, handing its keys over as l.handover
// says, or delete.lua where nothing is handed over (l.handover deleteKeys,
// keys that cannot have companions, a handover the ACL refused). It
// returns how many keys were ours, and how many of them went to a waiter.
func (l *Lock) runRelease(ctx context.Context) (ours, handedOver int64, err error) {
	if l.handover != deleteKeys {
		keys, ok := l.waiting, l.waiting != nil
		if !ok {
			keys, ok = handoff.Companions(l.keys)
		}
		if ok {
			args := []any{l.tokenArg, handoff.ReservationArg}
			var next string
			if l.again && l.handover == handOver && len(l.keys) == 1 && len(keys) == 3 {
				// The loop that releases and asks again: register the next
				// wait with this script (release.lua's ARGV[3]).
				id := rand.Text()
				if grants, ok := handoff.GrantList(l.keys[0], id); ok {
					next = id
					keys = []string{keys[0], keys[1], keys[2], grants}
					args = append(args, next, handoff.RegistrationArg)
				}
			}
			sent := time.Now()
			v, err := releaseScript.Run(ctx, l.client, keys, args...).Result()
			if err == nil {
				// handed * (n + 1) + ours (release.lua).
				if r, ok := v.(int64); ok && r >= 0 {
					n := int64(len(l.keys)) + 1
					ours, handed := r%n, r/n
					if handed > 0 && len(l.keys) == 1 {
						// Registered too when next is not "".
						l.requeue.handedOver(&l.keys[0], next, sent)
					}
					return ours, handed, nil
				}
				return 0, 0, fmt.Errorf("%w: release of %q: %v", ErrUnexpectedReply, l.keys, v)
			}
			if l.handover != handOverIfAllowed || !deniedByACL(err) {
				return 0, 0, err
			}
			// Refused before anything was written: a declared key is
			// checked before the script runs, and the first command that
			// a queue ACL lacks comes before any write of the handover.
		}
	}
	ours, err = deleteScript.Run(ctx, l.client, l.keys, l.tokenArg).Int64()
	return ours, 0, err
}

// deniedByACL reports whether err is the server refusing a key or a
// command to the user: NOPERM, or the error a script gets for a command
// it may not call (Redis 7: "… can't run this command …", Valkey 8: "… has
// no permissions to run …").
func deniedByACL(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	msg := reply.Error()
	return strings.Contains(msg, "NOPERM") || strings.Contains(msg, "can't run this command") || strings.Contains(msg, "no permissions")
}

// requeueHint is a Client's record of the key that its last release handed
// over to a waiter of [WaitForRelease]. An Obtain of that key with
// WaitForRelease through the Client soon after (the loop that releases a
// lock and asks for it again) sends its first attempt with its first block
// in one round trip, instead of failing first (internal/handoff's
// Request.Requeue): the key is most likely held or reserved by then. When
// that release also registered the Client's next wait (a Lock that was
// itself obtained so, see Lock.again), the Obtain blocks at once, under
// that registration (Request.Registered). Locks of one key only.
type requeueHint struct {
	last atomic.Pointer[requeueRecord] // nil when taken
}

// requeueRecord is one handover of a requeueHint.
type requeueRecord struct {
	key *string   // the key, in the Lock that released it
	id  string    // the waiter id its release registered, "" for none
	at  time.Time // before the release was sent
}

const (
	// requeueWithin is how long after the handover a hint holds: an
	// Obtain later than that starts as any other.
	requeueWithin = time.Second
	// registeredWithin is how long after the handover an Obtain blocks at
	// once under the registration of the release: half a reservation
	// (handoff.ReservationArg), the longest a grant for that waiter
	// stays on the wake-up list before it blocks. A later Obtain requeues
	// under the same id, and its first attempt renews the registration
	// and finds a key that came free meanwhile.
	registeredWithin = 50 * time.Millisecond
)

// handedOver records that the lock of key, a key of the Lock that
// released it, was handed over by a release sent at at, which registered
// the waiter id (or "" for none). h may be nil.
func (h *requeueHint) handedOver(key *string, id string, at time.Time) {
	if h == nil {
		return
	}
	h.last.Store(&requeueRecord{key: key, id: id, at: at})
}

// take returns how an Obtain of key starts: with the waiter id that the
// hint's release registered ("" for a new one), the time of that
// registration when the Obtain may block at once under it (zero
// otherwise), and whether it requeues. It forgets the hint: one Obtain
// uses it.
func (h *requeueHint) take(key string) (id string, registered time.Time, requeue bool) {
	r := h.last.Load()
	if r == nil || *r.key != key {
		return "", time.Time{}, false
	}
	age := time.Since(r.at)
	if age >= requeueWithin || !h.last.CompareAndSwap(r, nil) {
		return "", time.Time{}, false
	}
	if r.id != "" && age < registeredWithin {
		return r.id, r.at, false
	}
	return r.id, time.Time{}, true
}
