package redislock

import (
	"context"
	"time"
)

// Lock is a lock obtained by [Client.Obtain] or [Client.ObtainMulti], or a
// handle on one from [Client.Attach]. Its accessors read what was set when
// it was obtained. A Lock is safe for concurrent use. Every method accepts
// a nil *Lock: it returns a zero value or an error, never panics.
type Lock handle

func (l *Lock) held() *handle { return (*handle)(l) }

// Key returns the lock's first key ("" for a nil Lock).
func (l *Lock) Key() string { return (*handle)(l).key() }

// Keys returns a copy of the lock's keys, in the order they were given
// (nil for a nil Lock).
func (l *Lock) Keys() []string {
	if l == nil {
		return nil
	}
	return append([]string(nil), l.keys...)
}

// Token returns the token that identifies this holder ("" for a nil Lock).
func (l *Lock) Token() string { return (*handle)(l).tok() }

// Metadata returns the metadata stored with the lock ("" for a nil Lock).
func (l *Lock) Metadata() string { return (*handle)(l).meta() }

// FenceToken returns the fencing token of this acquisition, greater than
// every token issued before for its [Options.FenceKey] (docs/fencing.md);
// 0 when the lock was obtained without a FenceKey, and for a nil Lock.
func (l *Lock) FenceToken() int64 { return (*handle)(l).fenceToken() }

// TTL returns the time left before the lock expires: the least among its
// keys, in whole milliseconds, not counting keys without an expiry (after
// a PERSIST). It returns (0, nil) when the lock is no longer held (expired,
// or some key taken by another), when some key has under a millisecond
// left, and, as bsm/redislock does, when no key has an expiry. It makes one
// attempt; a Redis error is returned as it is, and an unexpected reply as
// [ErrUnexpectedReply]. A nil Lock returns [ErrLockNotHeld].
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) { return (*handle)(l).ttl(ctx) }

// Refresh extends the lock to expire ttl from now, when every key of it is
// still held with its token; otherwise it changes nothing and returns
// [ErrNotObtained] at once (a lost lock is not retried). Transient Redis
// errors are retried according to opt.RetryStrategy (default [NoRetry]; the
// other fields of opt are ignored), until the context's deadline or,
// without one, ttl after the call began; when the context ends first the
// error matches both [ErrNotObtained] and ctx.Err(). A ttl below one
// millisecond returns [ErrInvalidTTL] before anything is sent. A successful
// Refresh renews the lease a keep-alive starts from or follows; one that
// returns ErrNotObtained marks the lock lost: a running keep-alive ends
// with [ErrLockLost], and [Lock.KeepAlive] refuses to start.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration, opt *Options) error {
	return (*handle)(l).refresh(ctx, ttl, opt)
}

// Release deletes every key of the lock that is still held with its token.
// It returns [ErrLockNotHeld] when some key had expired or been taken by
// another: the keys that were still ours are deleted all the same, and the
// others are left to their holders. A lock obtained with [WaitForRelease],
// or attached, hands each key that has a waiter over to the one that has
// waited longest instead of deleting it.
//
// It first stops the lock's keep-alive, if any, as [KeepAlive.Stop] does
// (blocking 100 ms at most), so that no refresh starts after the release.
// After Release the Lock cannot be kept alive again.
//
// When ctx has already ended (a deferred Release in a cancelled request),
// Release still runs, with ctx's values but without its cancellation,
// bounded by a timeout of its own of 5 seconds. It makes one attempt; a
// Redis error is returned as it is, and the keys then expire by their TTL.
// Resent by go-redis after a lost reply, it may return [ErrLockNotHeld]
// though it deleted the keys (docs/failover.md). Either way the lock is no
// longer held.
func (l *Lock) Release(ctx context.Context) error { return (*handle)(l).release(ctx) }

// KeepAlive starts refreshing the lock to ttl in the background, as
// [Lock.Refresh] does, while the work it protects runs; see [KeepAlive] for
// what the handle does and when it ends. It sends nothing and blocks only
// as said under ErrKeepAliveRunning below. Refresh calls on the Lock
// meanwhile are harmless: the keep-alive follows the lease they set.
//
// Errors, with nothing started:
//   - [ErrInvalidTTL]: ttl below one millisecond.
//   - [ErrInvalidOption]: a negative option, a Margin not below ttl, or an
//     Interval not below ttl-Margin.
//   - [ErrNilClient]: the Lock has no Redis client.
//   - [ErrLockNotHeld]: a nil or released Lock, or one whose lease is not
//     known valid now (from [Client.Attach] and not refreshed since, or run
//     out on the local clock) until a successful [Lock.Refresh].
//   - an error matching [ErrLockLost] and [ErrNotObtained]: the last
//     refresh (a [Lock.Refresh] or a keep-alive's) found a key gone or held
//     by another token.
//   - [ErrKeepAliveRunning]: another keep-alive of the Lock is running. One
//     that has ended (lost or stopped) is replaced, after waiting for its
//     goroutine to exit, 100 ms at most as in [KeepAlive.Stop].
func (l *Lock) KeepAlive(ttl time.Duration, opt *KeepAliveOptions) (*KeepAlive, error) {
	return (*handle)(l).keepAlive(ttl, opt)
}

// lockKind is the kind of a Lock (and of a Leadership's lock).
type lockKind struct{}

func (lockKind) public(h *handle) Handle { return (*Lock)(h) }

func (lockKind) refreshCall(h *handle, ms int64) call {
	return call{op: opRefresh, script: refreshScript, keys: h.keys, args: []any{h.tokenArg(), ms}, compare: true, ms: ms}
}

func (lockKind) ttlCall(h *handle) call {
	return call{op: opTTL, script: ttlScript, keys: h.keys, args: h.tokenArgs()}
}

// releaseCall hands the keys over to their waiters when the lock was
// obtained with WaitForRelease, or attached, and deletes them otherwise.
func (lockKind) releaseCall(h *handle) call {
	if h.wait != nil {
		if c, ok := h.wait.releaseCall(h); ok {
			if h.wait.ifAllowed {
				del := deleteCall(h)
				c.denied = &del
			}
			return c
		}
	}
	return deleteCall(h)
}

// deleteCall deletes the keys of h that are still its own; one key with a
// generated token runs delete_one.lua, which compares only the owner prefix.
func deleteCall(h *handle) call {
	if owner := h.args.Owner(); owner != nil && len(h.keys) == 1 {
		args := h.argBuf[4:5:5] // the owner, after a plain first attempt (client.go)
		if args[0] != any(owner) {
			args = []any{owner}
		}
		return call{op: opRelease, script: deleteOne, keys: h.keys, args: args, compare: true, units: 1}
	}
	return call{op: opRelease, script: deleteScript, keys: h.keys, args: h.tokenArgs(), compare: true, units: len(h.keys)}
}
