package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/retry"
	"github.com/redislock/redislock/internal/rwlock"
)

// RWMutex is a read-write lock on Redis: many read holds at once, or one
// write lock, never both. Get one with [Client.RWMutex]; two RWMutex values
// of the same name are the same lock. Its methods are safe for concurrent
// use.
//
// Writers are preferred, and the readers that waited behind a writer enter
// next, together, so neither side can starve the other ([RWMutex.RLock],
// [RWMutex.Lock]). A read hold is never upgraded to the write lock
// ([ErrUpgrade]); the write lock can be downgraded ([WriteLock.Downgrade]).
// docs/rwmutex.md has the keys, the scripts and what fence tokens mean.
type RWMutex struct {
	c    *Client // nil: every call returns ErrNilClient
	name string
	keys [8]string // indexed by rwlock.Writer, rwlock.Readers, …
}

// RWMutex returns the read-write lock called name: "catalog" and
// "{catalog}" are two locks, and neither shares a key with a lock or
// another primitive (docs/rwmutex.md, "Keys"). It sends nothing; an empty
// name makes every call return [ErrInvalidKey]. A nil Client gives an
// RWMutex whose calls return [ErrNilClient].
func (c *Client) RWMutex(name string) *RWMutex {
	return &RWMutex{c: c, name: name, keys: rwlock.Keys(name)}
}

// Name returns the name the RWMutex was made with ("" for a nil RWMutex).
func (rw *RWMutex) Name() string {
	if rw == nil {
		return ""
	}
	return rw.name
}

// WriterKey returns the key of the write lock ("" for a nil RWMutex).
func (rw *RWMutex) WriterKey() string {
	if rw == nil {
		return ""
	}
	return rw.keys[rwlock.Writer]
}

// RLock takes a read hold for ttl: it succeeds when no writer holds the
// lock and none is waiting (or when this caller waited behind the last
// writer), whatever the number of other readers. Otherwise it waits and
// retries as [Client.ObtainMulti] does (opt.RetryStrategy, default
// [NoRetry]), and the writer it waits behind lets it in before the next
// one. The hold expires on the server ttl after the attempt that took it,
// unless refreshed; its [ReadLock.FenceToken] is that of the last write
// lock taken with opt.FenceKey (0 without one).
//
// Errors, with no hold taken: [ErrNotObtained] when the strategy gave up,
// also matching ctx.Err() when the context ended first; [ErrInvalidTTL],
// [ErrInvalidKey] (empty name, a FenceKey that is one of the RWMutex's
// keys), [*CrossSlotError] (a FenceKey in another slot on a Cluster),
// [ErrInvalidOption] (MinReplicas or MinHold, which RWMutex does not
// support), [ErrNilClient] and [ErrNilContext] before anything is sent;
// [ErrInvalidToken] when opt.Token holds the write lock of this RWMutex
// (use [WriteLock.Downgrade]); [ErrUnexpectedReply] and Redis errors as
// for [Client.ObtainMulti].
func (rw *RWMutex) RLock(ctx context.Context, ttl time.Duration, opt *Options) (*ReadLock, error) {
	h, err := rw.acquire(ctx, ttl, opt, false)
	return (*ReadLock)(h), err
}

// Lock takes the write lock for ttl: it succeeds when no other writer
// holds it, no read hold is live, and no reader that waited behind the
// last writer is still to enter. Otherwise it waits as [RWMutex.RLock]
// does, new readers waiting behind it; with [WaitForRelease] writers are
// served in the order they came. With opt.FenceKey, its
// [WriteLock.FenceToken] is greater than every token issued before from
// that counter (by this RWMutex or by a [Lock]). The same token calling
// Lock again while it holds the write lock renews it and keeps its fence
// token.
//
// Errors, with the lock not taken: those of [RWMutex.RLock] (but
// ErrInvalidToken), and [ErrUpgrade] when opt.Token has a live read hold
// of this RWMutex.
func (rw *RWMutex) Lock(ctx context.Context, ttl time.Duration, opt *Options) (*WriteLock, error) {
	h, err := rw.acquire(ctx, ttl, opt, true)
	return (*WriteLock)(h), err
}

// acquire takes the write lock or a read hold (docs/rwmutex.md, "Waiting").
func (rw *RWMutex) acquire(ctx context.Context, ttl time.Duration, opt *Options, write bool) (*handle, error) {
	if rw == nil || rw.c == nil {
		return nil, ErrNilClient
	}
	if err := checkCall(ctx, rw.c.client); err != nil {
		return nil, err
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	fenceKey := opt.fenceKey()
	if msg := rwlock.Check(rw.name, rw.keys[:], fenceKey); msg != "" {
		return nil, fmt.Errorf("%w: %s", ErrInvalidKey, msg)
	}
	if fenceKey != "" && rw.c.cluster {
		if err := checkSlots(rw.keys[:1], fenceKey); err != nil {
			return nil, err
		}
	}
	if opt.minReplicas() != 0 {
		return nil, fmt.Errorf("%w: MinReplicas is not supported by RWMutex", ErrInvalidOption)
	}
	if err := checkMinHold(opt, false, "RWMutex"); err != nil {
		return nil, err
	}
	h := &handle{be: &rw.c.one, kind: (*readKind)(rw), keys: rw.keys[:], metadata: opt.metadata()}
	run, kind := rwRLockScript, KindRead
	if write {
		h.kind, run, kind = (*writeKind)(rw), rwLockScript, KindWrite
	}
	if token := opt.token(); token != "" {
		h.token, h.argBuf[0] = token, token
	} else {
		h.argBuf[0] = h.args.NewToken()
	}
	keys := append(make([]string, 0, len(rw.keys)+1), rw.keys[:]...)
	fenced := argUnfenced
	if fenceKey != "" {
		keys, fenced = append(keys, fenceKey), argFenced
	}
	strategy := opt.retryStrategy()
	reg := rwlock.Registration(!retry.IsNone(strategy)) // a polling waiter too
	h.argBuf = [7]any{h.tokenArg(), h.metadata, ms, fenced, reg}
	args := h.argBuf[:5]
	err = rw.c.acquire(ctx, &acquisition{
		h: h, ttl: ttl, strategy: strategy, kind: kind, name: rw.name,
		attempt: call{op: opObtain, script: run, keys: keys, args: args},
		wait: handoff.Request{Keys: rw.keys[rwlock.Writer : rwlock.Readers+1 : rwlock.Readers+1], Obtain: run, CallKeys: keys,
			CallArgs: args, Leave: rwLeaveScript, Shared: !write},
		failed: func(ctx context.Context, err error, waited bool) error {
			h.setToken() // a waiter registered its token: take it back
			if waited || reg != int64(0) {
				rwlock.Withdraw(ctx, rwWithdrawScript, rw.c.client, rw.keys[:], h.token) // best effort
			}
			switch r, msg := rwlock.Explain(err, h.token, rw.name); r {
			case rwlock.Upgrade:
				return fmt.Errorf("%w: %s", ErrUpgrade, msg)
			case rwlock.HeldByCaller:
				return fmt.Errorf("%w: %s", ErrInvalidToken, msg)
			}
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}
