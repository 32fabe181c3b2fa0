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
// write lock, never both. Get one with [Client.RWMutex]; it holds only the
// client and the names of its keys, so one value may be shared by any
// number of goroutines, and two RWMutex values of the same name are the
// same lock. Its methods are safe for concurrent use.
//
// Writers are preferred: once a writer waits (with a retry strategy other
// than [NoRetry]), new readers wait behind it, so a stream of readers
// cannot starve a writer. The readers that waited behind a writer enter
// together when it leaves, before any other writer, so writers cannot
// starve readers either. Each read hold expires by itself, on the server,
// at its TTL. A read hold is never upgraded to the write lock
// ([ErrUpgrade]); the write lock can be downgraded to a read hold
// ([WriteLock.Downgrade]). See docs/rwmutex.md for the keys, the scripts
// and what fence tokens mean here.
type RWMutex struct {
	c    *Client // nil: every call returns ErrNilClient
	name string
	keys [8]string // indexed by rwlock.Writer, rwlock.Readers, …
}

// RWMutex returns the read-write lock called name. Its keys all share a
// hash slot and carry a marker, so that no lock, companion or other
// primitive shares them; "catalog" and "{catalog}" are two locks (see
// docs/rwmutex.md for the keys). The writer key holds a value of the same
// form as a lock's, so tools that show locks show the write lock. It sends
// nothing; an empty name makes every call return [ErrInvalidKey]. A nil
// Client gives an RWMutex whose calls return [ErrNilClient].
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

// WriterKey returns the key that holds the write lock while it is held
// ("" for a nil RWMutex).
func (rw *RWMutex) WriterKey() string {
	if rw == nil {
		return ""
	}
	return rw.keys[rwlock.Writer]
}

// RLock takes a read hold for ttl: it succeeds when no writer holds the
// lock and none is waiting (or when this caller waited behind the last
// writer), whatever the number of other readers. Otherwise it retries
// according to opt.RetryStrategy (default [NoRetry]: one attempt), until
// the context's deadline or, without one, ttl after the call began; while
// it retries it is registered as a waiting reader, so that the writer it
// waits behind lets it in before the next one. With [WaitForRelease] it
// waits for that writer's release, which lets in every reader that waited
// behind it together.
//
// The hold expires on the server exactly ttl after the attempt that took
// it, unless refreshed ([ReadLock.Refresh], [ReadLock.KeepAlive]). Its
// [ReadLock.FenceToken] is the fence token of the last write lock taken
// with opt.FenceKey (0 without one).
//
// Errors, with no hold taken: [ErrNotObtained] when the strategy gave up,
// also matching ctx.Err() when the context ended first; [ErrInvalidTTL],
// [ErrInvalidKey] (empty name, a FenceKey that is one of the RWMutex's
// keys), [*CrossSlotError] (a FenceKey in another slot on a Cluster),
// [ErrInvalidOption] (MinReplicas, which RWMutex does not support),
// [ErrNilClient] and [ErrNilContext] before anything is sent;
// [ErrInvalidToken] when opt.Token holds the write lock of this RWMutex
// (use [WriteLock.Downgrade]); a Redis error that is not transient as it
// is.
func (rw *RWMutex) RLock(ctx context.Context, ttl time.Duration, opt *Options) (*ReadLock, error) {
	h, err := rw.acquire(ctx, ttl, opt, false)
	return (*ReadLock)(h), err
}

// Lock takes the write lock for ttl: it succeeds when no other writer
// holds it, no read hold is live, and no reader that waited behind the
// last writer is still to enter. Otherwise it retries according to
// opt.RetryStrategy (default [NoRetry]: one attempt), until the context's
// deadline or, without one, ttl after the call began; while it retries it
// is registered as a waiting writer, and new readers wait behind it. With
// [WaitForRelease] the writers wait in line: the last reader to leave, or
// the writer before, hands the lock to the one that has waited longest.
//
// With opt.FenceKey, the lock's [WriteLock.FenceToken] is greater than
// every token issued before from that counter (by this RWMutex or by a
// [Lock] with the same FenceKey). The same token calling Lock again while
// it holds the write lock renews it and keeps its fence token.
//
// Errors, with the lock not taken: those of [RWMutex.RLock], except that
// [ErrUpgrade] is returned when opt.Token has a live read hold of this
// RWMutex.
func (rw *RWMutex) Lock(ctx context.Context, ttl time.Duration, opt *Options) (*WriteLock, error) {
	h, err := rw.acquire(ctx, ttl, opt, true)
	return (*WriteLock)(h), err
}

// acquire takes the write lock (write) or a read hold (docs/rwmutex.md,
// "Waiting").
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
		h.token, h.tokenArg = token, token
	} else {
		h.tokenArg = h.args.NewToken()
	}
	keys := append(make([]string, 0, len(rw.keys)+1), rw.keys[:]...)
	fenced := argUnfenced
	if fenceKey != "" {
		keys, fenced = append(keys, fenceKey), argFenced
	}
	strategy := opt.retryStrategy()
	reg := rwlock.Registration(!retry.IsNone(strategy)) // a polling waiter too
	h.argBuf = [8]any{h.tokenArg, h.metadata, ms, fenced, reg}
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
