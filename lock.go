package redislock

import (
	"context"
	"sync"
	"time"
)

// releaseTimeout bounds a Release whose context had already ended.
const releaseTimeout = 5 * time.Second

// Lock is a lock obtained by [Client.Obtain] or [Client.ObtainMulti], or a
// handle on one from [Client.Attach]. Its accessors only read fields set at
// creation, its methods each run one script on Redis, and the state of its
// lease and keep-alive is guarded by a mutex, so a Lock is safe for
// concurrent use. Every method accepts a nil *Lock: it returns a zero value
// or an error, never panics.
type Lock struct {
	client   RedisClient
	keys     []string
	token    string
	tokenArg any // token, boxed once for every script call
	metadata string
	fence    int64
	keyBuf   [2]string // keys' storage for one key and a fence key
	handover *handover // with WaitForRelease: how Release hands the keys over (waiter.go)

	// ttl and sent describe the lease as obtained: the key cannot expire
	// before sent+ttl (sent is read before the script was sent, on the
	// monotonic clock). Zero for a Lock built without obtaining it.
	// Refreshes renew them under mu (see keepalive.go).
	ttl  time.Duration
	sent time.Time

	mu        sync.Mutex
	released  bool       // Release was called: no new lease or keep-alive
	keepAlive *KeepAlive // the latest, stopped by Release
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
// keys. It returns (0, nil) when the lock is no longer held (expired, or
// some key taken by another), and a negative duration in the odd case that
// someone removed the keys' expiry. It makes one attempt, blocking for one
// round trip; the Redis error is returned as it is. A nil Lock returns
// [ErrLockNotHeld].
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	if l == nil {
		return 0, ErrLockNotHeld
	}
	if err := checkCall(ctx, l.client); err != nil {
		return 0, err
	}
	ms, err := ttlScript.Run(ctx, l.client, l.keys, l.tokenArg).Int64()
	if err != nil {
		return 0, err
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
// anything is sent. Only opt.RetryStrategy is used. A successful Refresh
// renews the lease that [Lock.KeepAlive] starts from.
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
	lease := time.Duration(ms) * time.Millisecond
	return retry(ctx, ttl, opt.retryStrategy(), func(ctx context.Context) (bool, error) {
		sent := time.Now()
		l.leaseSending(sent, lease)
		ok, err := refreshScript.Run(ctx, l.client, l.keys, l.tokenArg, ms).Int64()
		switch {
		case err != nil:
			return false, err
		case ok != 1:
			return true, ErrNotObtained
		}
		l.leaseRenewed(sent, lease)
		return true, nil
	})
}

// Release deletes every key of the lock that is still held with its token,
// in one script. It returns [ErrLockNotHeld] when some key had expired or
// been taken by another: the keys that were still ours are deleted all the
// same, and the others are left to their holders. A lock obtained with
// [WaitForRelease] hands each key that has a waiter over to the one that
// has waited longest instead of deleting it, in the same script.
//
// It first stops the lock's keep-alive ([Lock.KeepAlive]), if any, and
// waits for its goroutine to exit (see [KeepAlive.Stop]), so that no
// refresh runs after the release; the keep-alive's Err is then
// [ErrKeepAliveStopped], unless it had lost the lock before. After Release
// the Lock cannot be kept alive again.
//
// When ctx has already ended (a deferred Release in a cancelled request),
// Release still runs, with ctx's values but without its cancellation,
// bounded by a timeout of its own of 5 seconds. It makes one attempt; a
// Redis error is returned as it is, and the keys then expire by their TTL.
func (l *Lock) Release(ctx context.Context) error {
	if l == nil {
		return ErrLockNotHeld
	}
	if err := checkCall(ctx, l.client); err != nil {
		return err
	}
	l.stopKeepAlive()
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
	}
	n, err := l.runRelease(ctx)
	if err != nil {
		return err
	}
	if int(n) != len(l.keys) {
		return ErrLockNotHeld
	}
	return nil
}
