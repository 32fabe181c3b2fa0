package redislock

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/lease"
	"github.com/redislock/redislock/internal/native"
	"github.com/redislock/redislock/internal/value"
)

// releaseTimeout bounds a Release whose context had already ended.
const releaseTimeout = 5 * time.Second

// handle is what every held lease is: a [Lock], a [Permit], a [ReadLock],
// a [WriteLock], the lock of a [Leadership] (docs/ARCHITECTURE.md). The
// public types are thin names over it (type Lock handle, …), so a nil
// *Lock is a nil *handle: every method accepts one.
type handle struct {
	be       backend      // where its commands go (backend.go); nil: ErrNilClient
	kind     kind         // what its primitive does differently
	keys     []string     // the keys its scripts take
	token    string       // set when the handle is shared (see setToken)
	metadata string       // as obtained
	fence    int64        // as obtained
	hold     *time.Time   // until when a release keeps the keys ([Options.MinHold]); nil: none
	kept     atomic.Bool  // released before hold: the keys are left to expire, no longer its to refresh or release
	obs      *observation // its hooks, nil without (observe.go)
	wait     *waited      // how its release hands over; nil: it deletes (waitforrelease.go)
	args     value.Args   // the obtain's generated token, TTL and fence tag
	keyBuf   [3]string    // keys' storage: one key (or a semaphore's two), a fence key
	argBuf   [7]any       // the token (see tokenArg), then the obtain's other arguments; written before the handle is shared

	// matched is the value a native compare last matched (backend.go,
	// internal/native), for the kinds whose keys hold a lock's value.
	matched atomic.Pointer[native.Value]

	// lease is the one record of the keys' expiry: set by the obtain,
	// renewed by Refresh and the keep-alive, ended by Release. Not known
	// for a handle from Attach until a Refresh succeeds.
	lease lease.Lease
}

// A kind is what a primitive gives the handle: its scripts and how to
// read their replies. Its methods build calls; the backend runs them.
type kind interface {
	// refreshCall extends the lease to ms; reply 1 held and extended, 0
	// gone, -1 held by another token (nothing changed unless 1).
	refreshCall(h *handle, ms int64) call
	// ttlCall reads the time left in ms, 0 when not held.
	ttlCall(h *handle) call
	// releaseCall releases the lease once; reply handed*(units+1) + ours
	// (see call.units): how many of its units were still its own, and how
	// many of those went to waiters.
	releaseCall(h *handle) call
	// public returns h as its primitive's handle type, for hooks.
	public(h *handle) Handle
}

// setToken makes the token the handle generated (in h.args) its token,
// once: a handle that nobody sees until it is returned gets its token as
// a string at the end.
func (h *handle) setToken() {
	if h.token == "" {
		h.token = h.args.Token()
	}
}

// tokenArg returns the token as the scripts take it, boxed once.
func (h *handle) tokenArg() any { return h.argBuf[0] }

// tokenArgs returns the arguments of the scripts that take the token alone.
func (h *handle) tokenArgs() []any { return h.argBuf[:1:1] }

func (h *handle) key() string {
	if h == nil || len(h.keys) == 0 {
		return ""
	}
	return h.keys[0]
}

func (h *handle) tok() string {
	if h == nil {
		return ""
	}
	return h.token
}

func (h *handle) meta() string {
	if h == nil {
		return ""
	}
	return h.metadata
}

func (h *handle) fenceToken() int64 {
	if h == nil {
		return 0
	}
	return h.fence
}

// check rejects a nil or zero handle and a nil context.
func (h *handle) check(ctx context.Context) error {
	switch {
	case ctx == nil:
		return ErrNilContext
	case h.be == nil:
		return ErrNilClient
	}
	return nil
}

// ttl is every handle's TTL: one read of the time left.
func (h *handle) ttl(ctx context.Context) (time.Duration, error) {
	if h == nil {
		return 0, ErrLockNotHeld
	}
	if err := h.check(ctx); err != nil {
		return 0, err
	}
	ms, err := h.be.run(ctx, h, h.kind.ttlCall(h))
	if err != nil {
		return 0, err
	}
	if ms < 0 {
		return 0, unexpectedReply(opTTL, h.keys, ms)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// refresh is every handle's Refresh: the retry loop around one refresh
// call, each outcome recorded in the lease.
func (h *handle) refresh(ctx context.Context, ttl time.Duration, opt *Options) error {
	if h == nil {
		return ErrNotObtained
	}
	if err := h.check(ctx); err != nil {
		return err
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return err
	}
	if h.kept.Load() {
		return ErrNotObtained // released: a refresh would keep the keys beyond their hold
	}
	leaseTTL := time.Duration(ms) * time.Millisecond
	ctx, start := h.obs.refreshStart(ctx, ttl, false)
	err = withRetry(ctx, ttl, opt.retryStrategy(), func(ctx context.Context) (bool, error) {
		send := func() (int64, error) { return h.be.run(ctx, h, h.kind.refreshCall(h, ms)) }
		held, err := h.lease.Refresh(leaseTTL, send)
		if err == nil && !held {
			return true, ErrNotObtained
		}
		return held, err
	})
	h.obs.refreshed(ctx, start, ttl, false, err)
	return err
}

// release is every handle's Release: the keep-alive stopped first, then
// one release, bounded by a timeout of its own when ctx has ended.
func (h *handle) release(ctx context.Context) error {
	if h == nil {
		return ErrLockNotHeld
	}
	if err := h.check(ctx); err != nil {
		return err
	}
	h.lease.Released()
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
	}
	ctx, start := h.obs.releaseStart(ctx)
	held, handed, err := h.releaseOnce(ctx)
	if err == nil && !held {
		err = ErrLockNotHeld
	}
	h.obs.released(ctx, start, handed, err)
	return err
}

// releaseOnce sends the release (see releasing) and reads its reply.
func (h *handle) releaseOnce(ctx context.Context) (held bool, handed int, err error) {
	c, ok := h.releasing()
	if !ok {
		return false, 0, nil // released before MinHold already: the keys are no longer its
	}
	var sent time.Time // read only for a release that can hand over (see waited.handedOver)
	if h.wait != nil {
		sent = time.Now()
	}
	r, err := h.be.run(ctx, h, c)
	return h.releaseReply(ctx, c, sent, r, err)
}

// releasing returns the call that releases h now (ok false once kept): a
// refresh to the rest of MinHold, which keeps the keys, or the kind's.
func (h *handle) releasing() (c call, ok bool) {
	if h.kept.Load() {
		return call{}, false
	}
	if h.hold != nil {
		// Rounded up to a whole millisecond: rounded down, the keys
		// could go up to 1 ms early.
		if left := time.Until(*h.hold); left > 0 {
			return h.kind.refreshCall(h, int64((left+time.Millisecond-1)/time.Millisecond)), true
		}
	}
	return h.kind.releaseCall(h), true
}

// releaseReply reads the reply r (or err) of c from releasing, sent at
// sent; a release that the server's ACL refused runs its fallback.
func (h *handle) releaseReply(ctx context.Context, c call, sent time.Time, r int64, err error) (held bool, handed int, _ error) {
	if c.op == opRefresh {
		if held = err == nil && r == 1; held {
			h.kept.Store(true)
		}
		return held, 0, err
	}
	if err != nil && c.denied != nil && handoff.DeniedByACL(err) {
		c = *c.denied
		r, err = h.be.run(ctx, h, c)
	}
	if err != nil {
		return false, 0, err
	}
	if r < 0 {
		return false, 0, unexpectedReply(opRelease, h.keys, r)
	}
	units := int64(max(c.units, 1))
	ours, n := r%(units+1), r/(units+1)
	if n > 0 && h.wait != nil {
		h.wait.handedOver(h, c, sent)
	}
	return ours == units, int(n), nil
}

// discard releases h as a clean-up (a Campaign that gave up), which the
// hooks do not see as a release; its error is ignored.
func (h *handle) discard(ctx context.Context) {
	h.obs = nil
	_ = h.release(ctx)
}

// keepAlive is every handle's KeepAlive.
func (h *handle) keepAlive(ttl time.Duration, opt *KeepAliveOptions) (*KeepAlive, error) {
	if h == nil {
		return nil, ErrLockNotHeld
	}
	if h.be == nil {
		return nil, ErrNilClient
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	refresh := func(ctx context.Context) (err error) {
		ctx, done := h.obs.refreshing(ctx, ttl)
		n, err := h.be.run(ctx, h, h.kind.refreshCall(h, ms))
		if err == nil {
			err = lease.Reply(n) // ErrTaken: only the hooks tell it from a key gone
		}
		if done != nil {
			done(err)
		}
		return err
	}
	return keepLease(&h.lease, time.Duration(ms)*time.Millisecond, opt, refresh, h.obs.ended())
}

// unexpectedReply is the error of a reply that a script never gives.
func unexpectedReply(o op, keys []string, reply any) error {
	return fmt.Errorf("%w: %s of %q: %#v", ErrUnexpectedReply, o, keys, reply)
}

// newToken returns a generated token: 16 random bytes from crypto/rand,
// base64url without padding (22 characters).
func newToken() string { return value.NewToken() }
