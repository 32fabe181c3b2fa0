package redislock

import (
	"context"
	"errors"
	"time"

	"github.com/redislock/redislock/internal/rwlock"
	"github.com/redislock/redislock/internal/script"
)

// ReadLock is a read hold of an [RWMutex], from [RWMutex.RLock] or
// [WriteLock.Downgrade]: a lease like a [Lock], whose methods it has. It is
// safe for concurrent use, and every method accepts a nil *ReadLock.
type ReadLock handle

// WriteLock is the write lock of an [RWMutex], from [RWMutex.Lock]: a lease
// like a [Lock], safe for concurrent use and nil-safe, as a [ReadLock] is.
type WriteLock handle

func (r *ReadLock) held() *handle  { return (*handle)(r) }
func (w *WriteLock) held() *handle { return (*handle)(w) }

// RWMutex returns the lock this hold is of (nil for a nil ReadLock).
func (r *ReadLock) RWMutex() *RWMutex {
	if r == nil {
		return nil
	}
	return (*RWMutex)(r.kind.(*readKind))
}

// Token returns the hold's token ("" for a nil ReadLock).
func (r *ReadLock) Token() string { return (*handle)(r).tok() }

// Metadata returns the hold's metadata ("" for a nil ReadLock).
func (r *ReadLock) Metadata() string { return (*handle)(r).meta() }

// FenceToken returns the fence token of the last write lock taken with the
// same [Options.FenceKey] before this hold (the write's own token after a
// [WriteLock.Downgrade]); 0 without a FenceKey, and for a nil ReadLock.
func (r *ReadLock) FenceToken() int64 { return (*handle)(r).fenceToken() }

// TTL returns the time the hold has left, or (0, nil) when it is no
// longer held, as [Lock.TTL] does, with its errors.
func (r *ReadLock) TTL(ctx context.Context) (time.Duration, error) { return (*handle)(r).ttl(ctx) }

// Refresh extends the hold to expire ttl from now, as [Lock.Refresh] does
// a lock, with its retries, errors and effect on a keep-alive.
func (r *ReadLock) Refresh(ctx context.Context, ttl time.Duration, opt *Options) error {
	return (*handle)(r).refresh(ctx, ttl, opt)
}

// Release ends the hold. It returns [ErrLockNotHeld] when the hold had
// expired or was released before; the rest is as for [Lock.Release].
func (r *ReadLock) Release(ctx context.Context) error { return (*handle)(r).release(ctx) }

// KeepAlive is [Lock.KeepAlive] for the hold, with the same errors.
func (r *ReadLock) KeepAlive(ttl time.Duration, opt *KeepAliveOptions) (*KeepAlive, error) {
	return (*handle)(r).keepAlive(ttl, opt)
}

// RWMutex returns the RWMutex it is the write lock of (nil for a nil one).
func (w *WriteLock) RWMutex() *RWMutex {
	if w == nil {
		return nil
	}
	return (*RWMutex)(w.kind.(*writeKind))
}

// Token returns the write lock's token ("" for a nil WriteLock).
func (w *WriteLock) Token() string { return (*handle)(w).tok() }

// Metadata returns the write lock's metadata ("" for a nil WriteLock).
func (w *WriteLock) Metadata() string { return (*handle)(w).meta() }

// FenceToken returns the fencing token of this write acquisition, as
// [Lock.FenceToken] does: 0 without a FenceKey (and for a nil WriteLock).
func (w *WriteLock) FenceToken() int64 { return (*handle)(w).fenceToken() }

// TTL returns the time the write lock has left, or (0, nil) when it is no
// longer held, as [Lock.TTL] does, with its errors.
func (w *WriteLock) TTL(ctx context.Context) (time.Duration, error) { return (*handle)(w).ttl(ctx) }

// Refresh extends the write lock to expire ttl from now, as [Lock.Refresh]
// does a lock, with its retries, errors and effect on a keep-alive.
func (w *WriteLock) Refresh(ctx context.Context, ttl time.Duration, opt *Options) error {
	return (*handle)(w).refresh(ctx, ttl, opt)
}

// Release ends the write lock; the readers that waited behind it may enter
// at once. It returns [ErrLockNotHeld] when the lock had expired or been
// taken by another; the rest is as for [Lock.Release].
func (w *WriteLock) Release(ctx context.Context) error { return (*handle)(w).release(ctx) }

// KeepAlive is [Lock.KeepAlive] for the write lock, with the same errors.
func (w *WriteLock) KeepAlive(ttl time.Duration, opt *KeepAliveOptions) (*KeepAlive, error) {
	return (*handle)(w).keepAlive(ttl, opt)
}

// Downgrade turns the write lock into a read hold of ttl, atomically: no
// writer can take the lock in between, and the readers that waited behind
// this writer enter with it. The read hold has the write lock's token,
// metadata and fence token; the WriteLock is released (its keep-alive
// stopped first, as by [WriteLock.Release]). It makes one attempt.
// Errors: [ErrInvalidTTL] and [ErrNilContext] before anything is sent;
// [ErrLockNotHeld] for a nil WriteLock or one that had expired or been
// taken by another (nothing changed); a Redis error as it is (the write
// lock may then be held or not: it expires at its TTL).
func (w *WriteLock) Downgrade(ctx context.Context, ttl time.Duration) (*ReadLock, error) {
	if w == nil {
		return nil, ErrLockNotHeld
	}
	h, rw := (*handle)(w), w.RWMutex()
	if err := h.check(ctx); err != nil {
		return nil, err
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	r := &handle{be: h.be, kind: (*readKind)(rw), keys: h.keys, token: h.token, argBuf: [7]any{h.tokenArg()}, metadata: h.metadata}
	err = rw.c.replace(ctx, h, &acquisition{
		h: r, ttl: ttl, strategy: NoRetry(), kind: KindRead, name: rw.name,
		attempt: call{op: opObtain, script: rwDowngradeScript, keys: h.keys,
			args: []any{h.tokenArg(), ms, h.metadata}},
		failed: func(_ context.Context, err error, _ bool) error {
			if errors.Is(err, ErrNotObtained) {
				return ErrLockNotHeld // the write lock was gone: nothing changed
			}
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	return (*ReadLock)(r), nil
}

// readKind and writeKind, the kinds of an RWMutex's holds, use its keys.
type (
	readKind  RWMutex
	writeKind RWMutex
)

func (k *readKind) public(h *handle) Handle  { return (*ReadLock)(h) }
func (k *writeKind) public(h *handle) Handle { return (*WriteLock)(h) }

func (k *readKind) refreshCall(h *handle, ms int64) call {
	return call{op: opRefresh, script: rwRRefreshScript, keys: k.keys[rwlock.Readers : rwlock.Holds+1], args: []any{h.tokenArg(), ms}}
}

func (k *writeKind) refreshCall(h *handle, ms int64) call {
	return call{op: opRefresh, script: refreshScript, keys: k.keys[:1], args: []any{h.tokenArg(), ms}}
}

func (k *readKind) ttlCall(h *handle) call {
	return call{op: opTTL, script: rwRTTLScript, keys: k.keys[rwlock.Readers : rwlock.Readers+1], args: h.tokenArgs()}
}

func (k *writeKind) ttlCall(h *handle) call {
	return call{op: opTTL, script: ttlScript, keys: k.keys[:1], args: h.tokenArgs()}
}

func (k *readKind) releaseCall(h *handle) call  { return rwRelease(h, rwRUnlockScript) }
func (k *writeKind) releaseCall(h *handle) call { return rwRelease(h, rwUnlockScript) }

// rwRelease is a hold's release (reply 1: released), on all its keys.
func rwRelease(h *handle, s *script.Script) call {
	return call{op: opRelease, script: s, keys: h.keys, args: h.tokenArgs(), units: 1}
}
