package redislock

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redislock/redislock/internal/lease"
)

// releaseTimeout bounds a Release whose context had already ended.
const releaseTimeout = 5 * time.Second

// Lock is a lock obtained by [Client.Obtain] or [Client.ObtainMulti], or a
// handle on one from [Client.Attach]. Its accessors only read fields set at
// creation, its methods each run one script on Redis (or one native
// command, see [New]), and its lease (what
// it knows of its keys' expiry, and its keep-alive) guards itself, so a
// Lock is safe for concurrent use. Every method accepts a nil *Lock: it returns a zero value
// or an error, never panics.
type Lock struct {
	client   RedisClient
	keys     []string
	token    string
	tokenArg any // token, boxed once for every script call
	metadata string
	fence    int64
	keyBuf   [2]string    // keys' storage for one key and a fence key
	handover handover     // how Release hands the keys over to waiters (waitforrelease.go)
	waiting  []string     // the keys and their companions as the wait that obtained them named them; nil: not known
	obs      *observation // the Client's hooks, nil without (hook.go)
	requeue  *requeueHint // the Client's, told when Release hands the key over (waitforrelease.go)
	again    bool         // obtained by a wait that asked again at once, alone: Release registers the next (waitforrelease.go)
	args     obtainArgs   // the obtain's generated token, TTL and fence tag as script arguments (token.go)

	// native is the Client's record of the server's native commands;
	// value the lock's value as a native command last matched it
	// (native.go).
	native *serverCommands
	value  atomic.Pointer[string]

	// lease is the one record of the keys' expiry: set by the obtain
	// (lease.Obtained, with the send time of the attempt that took the
	// keys), renewed by Refresh and the keep-alive, ended by Release. Not
	// known for a Lock from Attach until a Refresh succeeds.
	lease lease.Lease
}

// setToken makes the token the Lock generated (in l.args) its token, once.
func (l *Lock) setToken() {
	if l.token == "" {
		l.token = string(l.args.token.b)
	}
}

// Key returns the lock's first key ("" for a nil Lock).
func (l *Lock) Key() string {
	if l == nil || len(l.keys) == 0 {
		return ""
	}
	return l.keys[0]
}

// Keys returns a copy of the lock's keys, in the order they were given
// (nil for a nil Lock).
func (l *Lock) Keys() []string {
	if l == nil {
		return nil
	}
	return append([]string(nil), l.keys...)
}

// Token returns the token that identifies this holder ("" for a nil Lock).
func (l *Lock) Token() string {
	if l == nil {
		return ""
	}
	return l.token
}

// Metadata returns the metadata stored with the lock ("" for a nil Lock).
func (l *Lock) Metadata() string {
	if l == nil {
		return ""
	}
	return l.metadata
}

// FenceToken returns the fencing token of this acquisition: a number that is
// greater than every token issued before for the same [Options.FenceKey].
// Pass it to the protected resource, which refuses writes carrying a lower
// token than the highest it has seen. It is 0 when the lock was obtained
// without a FenceKey (and for a nil Lock).
func (l *Lock) FenceToken() int64 {
	if l == nil {
		return 0
	}
	return l.fence
}

// TTL returns the time left before the lock expires: the least among its
// keys, in whole milliseconds. It returns (0, nil) when the lock is no
// longer held (expired, or some key taken by another) and when some key
// has under a millisecond left, which is as good as lost. Keys without an
// expiry (someone ran PERSIST) do not count; a lock none of whose keys has
// one gives 0 too, as with bsm/redislock. It makes one attempt, blocking
// for one round trip; the Redis error is returned as it is, and a reply
// that the script never gives as [ErrUnexpectedReply]. A nil Lock returns
// [ErrLockNotHeld].
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	if l == nil {
		return 0, ErrLockNotHeld
	}
	if err := checkCall(ctx, l.client); err != nil {
		return 0, err
	}
	reply, err := ttlScript.Run(ctx, l.client, l.keys, l.tokenArg).Result()
	if err != nil {
		return 0, err
	}
	ms, ok := reply.(int64)
	if !ok || ms < 0 {
		return 0, fmt.Errorf("%w: ttl of %q: %#v", ErrUnexpectedReply, l.keys, reply)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Refresh extends the lock to expire ttl from now, when every key of it is
// still held with its token; otherwise it changes nothing and returns
// [ErrNotObtained] at once (a lost lock is not retried). Transient Redis
// errors are retried according to opt.RetryStrategy (default [NoRetry]),
// until the context's deadline or, without one, ttl after the call began;
// when the context ends first the error matches both [ErrNotObtained] and
// ctx.Err(). A ttl below one millisecond returns [ErrInvalidTTL] before
// anything is sent. Only opt.RetryStrategy is used. Each attempt is one
// round trip: a script, or for a lock of one key where the server has it
// (see [New]) SET … IFEQ on the lock's value, which needs no script
// permission. When the key does not hold the value the Lock knows, a GET
// follows and the same check by exact token as the script's, then the
// compare on the value read: two round trips for a lock found gone or
// taken, or for an attached Lock (which starts from the GET), three after
// a re-entrant obtain changed the metadata. A successful Refresh
// renews the lease that [Lock.KeepAlive] starts from (and that a running
// keep-alive follows); one that returns ErrNotObtained marks the lock lost:
// a running keep-alive ends with [ErrLockLost], and KeepAlive refuses to
// start.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration, opt *Options) error {
	if l == nil {
		return ErrNotObtained
	}
	if err := checkCall(ctx, l.client); err != nil {
		return err
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return err
	}
	leaseTTL := time.Duration(ms) * time.Millisecond
	ctx, start := l.hookRefreshStart(ctx, ttl, false)
	err = retry(ctx, ttl, opt.retryStrategy(), func(ctx context.Context) (bool, error) {
		sent := time.Now()
		l.lease.Sending(sent, leaseTTL)
		ok, err := l.refresh(ctx, ms)
		switch {
		case err != nil:
			return false, err
		case ok != 1:
			l.lease.Lost(sent)
			return true, ErrNotObtained
		}
		l.lease.Renewed(sent, leaseTTL)
		return true, nil
	})
	l.hookRefreshed(ctx, start, ttl, false, err)
	return err
}

// Release deletes every key of the lock that is still held with its token,
// in one script (for a lock of one key obtained without [WaitForRelease],
// with DELIFEQ or DELEX where the server has them, see [New]; with a GET
// and a second compare when the key's value is not the one the Lock
// knows, as for Refresh). It
// returns [ErrLockNotHeld] when some key had expired or
// been taken by another: the keys that were still ours are deleted all the
// same, and the others are left to their holders. A lock obtained with
// [WaitForRelease] hands each key that has a waiter over to the one that
// has waited longest instead of deleting it, in the same script.
//
// It first stops the lock's keep-alive ([Lock.KeepAlive]), if any, and
// waits for its goroutine to exit, 100 ms at most (see [KeepAlive.Stop]),
// so that no refresh starts after the release; the keep-alive's Err is
// then [ErrKeepAliveStopped], unless it had lost the lock before. After
// Release the Lock cannot be kept alive again.
//
// When ctx has already ended (a deferred Release in a cancelled request),
// Release still runs, with ctx's values but without its cancellation,
// bounded by a timeout of its own of 5 seconds. It makes one attempt; a
// Redis error is returned as it is, and the keys then expire by their TTL.
// go-redis itself resends a command whose connection failed before its
// reply came (redis.Options.MaxRetries): a Release whose first run deleted
// the keys but whose reply was lost then returns [ErrLockNotHeld]. Either
// way the lock is no longer held.
func (l *Lock) Release(ctx context.Context) error {
	if l == nil {
		return ErrLockNotHeld
	}
	if err := checkCall(ctx, l.client); err != nil {
		return err
	}
	l.lease.Released()
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
	}
	ctx, start := l.hookReleaseStart(ctx)
	n, handedOver, err := l.release(ctx)
	if err == nil && int(n) != len(l.keys) {
		err = ErrLockNotHeld
	}
	l.hookReleased(ctx, start, int(handedOver), err)
	return err
}

// KeepAlive starts refreshing the lock to ttl in the background, so that
// it stays held while the work it protects runs: see [KeepAlive] for what
// the returned handle does and when it ends. It sends nothing and does not
// wait for Redis (but see ErrKeepAliveRunning below for the one case where
// it waits). The first refresh is due Interval after the obtain (or the
// last successful [Lock.Refresh]) was sent, sooner if that lease was
// shorter than ttl. Stop it with [KeepAlive.Stop], or with [Lock.Release],
// which stops it first.
//
// Refreshes run the script of [Lock.Refresh]. Other Refresh calls on the
// Lock meanwhile are harmless: the keep-alive follows the lease they set
// (after one with a shorter ttl it refreshes sooner, to lengthen the lease
// again), and one that finds the lock lost ends it at once.
//
// Errors, with nothing started:
//   - [ErrInvalidTTL]: ttl below one millisecond.
//   - [ErrInvalidOption]: a negative option, a Margin not below ttl, or an
//     Interval not below ttl-Margin.
//   - [ErrNilClient]: the Lock has no Redis client.
//   - [ErrLockNotHeld]: a nil or released Lock, or one whose lease is not
//     known to be valid now: one from [Client.Attach] that was not
//     refreshed since, or whose lease has already run out on the local
//     clock. A successful [Lock.Refresh] makes its lease known again.
//   - an error matching [ErrLockLost] and [ErrNotObtained]: the lock is
//     known to be lost, since the last refresh (a [Lock.Refresh] or a
//     keep-alive's) found a key gone or held by another token.
//   - [ErrKeepAliveRunning]: another keep-alive of the Lock is running. One
//     that has ended (lost or stopped) is replaced; if its goroutine is
//     still finishing, KeepAlive waits for it first, 100 ms at most (see
//     [KeepAlive.Stop]), so that at most one keep-alive goroutine runs per
//     Lock.
//
// It is safe for concurrent use.
func (l *Lock) KeepAlive(ttl time.Duration, opt *KeepAliveOptions) (*KeepAlive, error) {
	if l == nil {
		return nil, ErrLockNotHeld
	}
	if l.client == nil {
		return nil, ErrNilClient
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	return keepLeaseReporting(&l.lease, time.Duration(ms)*time.Millisecond, opt, l.hookedRefresh(ttl, func(ctx context.Context) error {
		ok, err := l.refresh(ctx, ms)
		switch {
		case err != nil:
			return err
		case ok == -1:
			return errTaken
		case ok != 1:
			return lease.ErrNotHeld
		}
		return nil
	}), l.hookEnded())
}

// refresh extends the lock's keys to ms once: with SET … IFEQ for a single
// key where the server has it (native.go), else with refresh.lua. Reply as
// refresh.lua's: 1 extended, 0 some key gone, -1 some key held by another.
func (l *Lock) refresh(ctx context.Context, ms int64) (int64, error) {
	if reply, ok, err := l.nativeRefresh(ctx, ms); ok {
		return reply, err
	}
	return refreshScript.Run(ctx, l.client, l.keys, l.tokenArg, ms).Int64()
}

// release releases the lock's keys once; it returns how many were ours
// and how many of them went to a waiter. A lock that hands nothing over
// (obtained without [WaitForRelease]) is deleted with DELIFEQ or DELEX
// where the server has it, otherwise with delete.lua; one that may hand
// over runs release.lua (runRelease, waitforrelease.go). An attached lock
// whose user may not run scripts at all is deleted natively after the
// refusal.
func (l *Lock) release(ctx context.Context) (ours, handedOver int64, err error) {
	if l.handover == deleteKeys {
		if n, ok, err := l.nativeRelease(ctx); ok {
			return n, 0, err
		}
	}
	ours, handedOver, err = l.runRelease(ctx)
	if err != nil && l.handover == handOverIfAllowed && deniedByACL(err) {
		if n, ok, nerr := l.nativeRelease(ctx); ok {
			return n, 0, nerr
		}
	}
	return ours, handedOver, err
}
