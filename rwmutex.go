package redislock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/keyslot"
	"github.com/redislock/redislock/internal/lease"
	"github.com/redislock/redislock/internal/script"
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
	client   RedisClient
	cluster  bool
	registry *handoff.Registry
	name     string
	// keys: W, R, H, Q, then the wait queues and wake-up lists of W and R
	// (WQ, RQ, WW, RW, see lua/rwmutex_lib.lua).
	keys  [8]string
	hooks *clientHooks // the Client's (hook.go)
}

// Indexes into RWMutex.keys.
const (
	rwWriter = iota
	rwReaders
	rwHolds
	rwWriters
	rwWriterQueue
	rwReaderQueue
	rwWriterWake
	rwReaderWake
)

// RWMutex returns the read-write lock called name. Its keys all share a
// hash slot and carry a marker, so that no lock, companion or other
// primitive shares them: when name has a hash tag ("{catalog}:rw") they are
// name followed by ":redislock:rw:" and a role ("writer", "readers", …);
// otherwise they are built on "{name}" and end with ":untagged"
// ("{catalog}:redislock:rw:writer:untagged"), so that "catalog" and
// "{catalog}" are two locks. The writer key holds a value of the same form
// as a lock's, so tools that show locks show the write lock. It sends
// nothing; an empty name makes every call return [ErrInvalidKey]. A nil
// Client gives an RWMutex whose calls return [ErrNilClient].
func (c *Client) RWMutex(name string) *RWMutex {
	rw := &RWMutex{name: name, registry: handoff.Default}
	if c != nil {
		rw.client, rw.cluster, rw.registry, rw.hooks = c.client, c.cluster, c.registry, &c.hooks
	}
	prefix, suffix := name+":redislock:rw:", ""
	if !keyslot.HasTag(name) {
		prefix, suffix = "{"+name+"}:redislock:rw:", ":untagged"
	}
	for i, role := range [...]string{"writer", "readers", "holds", "writers"} {
		rw.keys[i] = prefix + role + suffix
	}
	// The wait queues and wake-up lists of W and R, as the handoff engine
	// names them: every key has a hash tag (but for the empty name, which
	// no call accepts), so they exist.
	if companions, ok := handoff.Companions(rw.keys[:rwHolds]); ok {
		copy(rw.keys[rwWriterQueue:], companions[2:])
	}
	return rw
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
	return rw.keys[rwWriter]
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
	h, ctx, err := rw.acquire(ctx, ttl, opt, false)
	if err != nil {
		return nil, err
	}
	r := &ReadLock{h: h}
	h.obs.obtained(ctx, r, nil, nil)
	return r, nil
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
	h, ctx, err := rw.acquire(ctx, ttl, opt, true)
	if err != nil {
		return nil, err
	}
	w := &WriteLock{h: h}
	h.obs.obtained(ctx, w, nil, nil)
	return w, nil
}

// acquire runs the Lock (write) or RLock script through the retry loop,
// or through the handoff engine for [WaitForRelease]. On success the
// caller reports the obtain call's end to the hold's hooks, under the
// context acquire returns.
func (rw *RWMutex) acquire(ctx context.Context, ttl time.Duration, opt *Options, write bool) (*rwHold, context.Context, error) {
	if rw == nil {
		return nil, ctx, ErrNilClient
	}
	if err := checkCall(ctx, rw.client); err != nil {
		return nil, ctx, err
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, ctx, err
	}
	if rw.name == "" {
		return nil, ctx, fmt.Errorf("%w: empty RWMutex name", ErrInvalidKey)
	}
	fenceKey := opt.fenceKey()
	if fenceKey != "" {
		for _, k := range rw.keys {
			if k == fenceKey {
				return nil, ctx, fmt.Errorf("%w: fence key %q is a key of the RWMutex", ErrInvalidKey, k)
			}
		}
		if rw.cluster {
			if err := checkSlots(rw.keys[:1], fenceKey); err != nil {
				return nil, ctx, err
			}
		}
	}
	if opt.minReplicas() != 0 {
		return nil, ctx, fmt.Errorf("%w: MinReplicas is not supported by RWMutex", ErrInvalidOption)
	}
	token := opt.token()
	if token == "" {
		token = newToken()
	}
	h := &rwHold{rw: rw, token: token, tokenArg: token, metadata: opt.metadata()}
	run := rwRLockScript
	if write {
		run = rwLockScript
	}
	keys := make([]string, len(rw.keys), len(rw.keys)+1)
	copy(keys, rw.keys[:])
	fenced := argUnfenced
	if fenceKey != "" {
		keys = append(keys, fenceKey)
		fenced = argFenced
	}
	strategy := opt.retryStrategy()
	var reg any = int64(0)
	if _, once := strategy.(noRetry); !once {
		reg = ms
	}
	args := []any{h.tokenArg, h.metadata, ms, fenced, reg}
	kind := KindRead
	if write {
		kind = KindWrite
	}
	h.obs = observe(rw.hooks, kind, rw.name, ttl)
	ctx = h.obs.obtainStart(ctx)
	if plan, ok := planOf(strategy); ok {
		if err := rw.wait(ctx, h, ttl, plan, write, keys, args); err != nil {
			h.obs.obtained(ctx, nil, err, nil)
			return nil, ctx, err
		}
		return h, ctx, nil
	}
	registered := false
	err = retry(ctx, ttl, strategy, func(ctx context.Context) (bool, error) {
		// Set before the call: an attempt whose reply is lost may have
		// registered all the same.
		registered = reg != int64(0)
		sent := time.Now()
		reply, err := run.Run(ctx, rw.client, keys, args...).Int64()
		h.obs.attempt(ctx, err == nil && reply >= 0, err)
		switch {
		case err != nil:
			if refused := rw.refusal(err, token); refused != nil {
				return true, refused
			}
			return false, err
		case reply >= 0:
			h.fence = reply
			h.lease.Obtained(sent, ttl)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		if registered {
			rw.withdraw(ctx, token)
		}
		h.obs.obtained(ctx, nil, err, nil)
		return nil, ctx, err
	}
	return h, ctx, nil
}

// wait is acquire's wait for [WaitForRelease], through the handoff engine:
// the RWMutex's lock keys, for the engine, are W (writers wait on its
// queue and are handed the lock, W becoming a reservation for a grant) and
// R (readers wait on its queue, and are woken together when the writer
// they wait behind leaves). On success h has its fence token and lease.
func (rw *RWMutex) wait(ctx context.Context, h *rwHold, ttl time.Duration, plan waitPlan, write bool, keys []string, args []any) error {
	run := rwRLockScript
	if write {
		run = rwLockScript
	}
	fallback := startRetry(plan.fallback)
	out, err := rw.registry.Wait(ctx, &handoff.Request{
		Client:      rw.client,
		Keys:        rw.keys[rwWriter : rwReaders+1 : rwReaders+1],
		Obtain:      run,
		CallKeys:    keys,
		CallArgs:    args,
		Leave:       rwLeaveScript,
		TTL:         ttl,
		Backoff:     fallback.NextBackoff,
		MaxAttempts: plan.attempts,
		Transient:   script.Transient,
		Shared:      !write,
		Attempted:   h.obs.attempted(ctx),
	})
	if out.Obtained {
		h.fence = out.Value
		h.lease.Obtained(out.Sent, ttl)
	}
	if err == nil {
		return nil
	}
	// The engine polls where it cannot block, registering the token as a
	// polling waiter does: withdraw it.
	rw.withdraw(ctx, h.token)
	if refused := rw.refusal(err, h.token); refused != nil {
		return refused
	}
	return waitFailed(ctx, out, err, "wait of", rw.name, func(rctx context.Context) {
		if write {
			_, _ = (&WriteLock{h: h}).releaseOnce(rctx)
		} else {
			_, _ = (&ReadLock{h: h}).releaseOnce(rctx)
		}
	})
}

// The error replies of the RLock and Lock scripts that refuse the call
// (lua/rwmutex_lib.lua).
const (
	rwUpgradeReply      = "redislock: rw upgrade refused"
	rwHeldByCallerReply = "redislock: rw token holds the write lock"
)

// refusal translates an error reply of the RLock or Lock script that
// refuses the call into [ErrUpgrade] or [ErrInvalidToken]; nil for any
// other error.
func (rw *RWMutex) refusal(err error, token string) error {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return nil
	}
	switch msg := reply.Error(); {
	case strings.Contains(msg, rwUpgradeReply):
		return fmt.Errorf("%w: token %q has a read hold of %q", ErrUpgrade, token, rw.name)
	case strings.Contains(msg, rwHeldByCallerReply):
		return fmt.Errorf("%w: token %q holds the write lock of %q (downgrade it instead)", ErrInvalidToken, token, rw.name)
	}
	return nil
}

// withdraw takes back a polling waiter's registration after it gave up,
// so that a writer that stopped waiting does not hold readers back (and an
// admitted reader does not hold writers back) until the registration
// expires, and lets in whoever it held up. Best effort: on failure the
// registration expires by itself.
func (rw *RWMutex) withdraw(ctx context.Context, token string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = rwWithdrawScript.Run(ctx, rw.client, rw.keys[:], token, handoff.ReservationArg, handoff.RegistrationArg).Err() // it expires anyway
}

// rwHold is what a read hold and a write lock share: the identity of the
// holder and its lease.
type rwHold struct {
	rw       *RWMutex
	token    string
	tokenArg any
	metadata string
	fence    int64
	lease    lease.Lease
	obs      *observation // the Client's hooks, nil without (hook.go)
}

// refresh runs one refresh script (reply 1: renewed) through the retry
// loop, recording the outcome in the lease, as [Lock.Refresh] does.
func (h *rwHold) refresh(ctx context.Context, ttl time.Duration, opt *Options, run func(ctx context.Context, ms int64) (int64, error)) error {
	if err := checkCall(ctx, h.rw.client); err != nil {
		return err
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return err
	}
	leaseTTL := time.Duration(ms) * time.Millisecond
	ctx, start := h.obs.refreshStart(ctx, ttl, false)
	err = retry(ctx, ttl, opt.retryStrategy(), func(ctx context.Context) (bool, error) {
		sent := time.Now()
		h.lease.Sending(sent, leaseTTL)
		ok, err := run(ctx, ms)
		switch {
		case err != nil:
			return false, err
		case ok != 1:
			h.lease.Lost(sent)
			return true, ErrNotObtained
		}
		h.lease.Renewed(sent, leaseTTL)
		return true, nil
	})
	h.obs.refreshed(ctx, start, ttl, false, err)
	return err
}

// keepAlive starts the lease's keep-alive with the refresh script run,
// whose reply is 1 (extended), 0 (gone) or, for the write lock's
// refresh.lua, -1 (held by another token: reported to hooks as
// [LostTaken]).
func (h *rwHold) keepAlive(ttl time.Duration, opt *KeepAliveOptions, run func(ctx context.Context, ms int64) (int64, error)) (*KeepAlive, error) {
	if h.rw.client == nil {
		return nil, ErrNilClient
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	return keepLeaseReporting(&h.lease, time.Duration(ms)*time.Millisecond, opt, h.obs.hookedRefresh(ttl, func(ctx context.Context) error {
		ok, err := run(ctx, ms)
		switch {
		case err != nil:
			return err
		case ok == -1:
			return errTaken
		case ok != 1:
			return lease.ErrNotHeld
		}
		return nil
	}), h.obs.ended())
}

// release stops the keep-alive and runs the release script (reply 1:
// released), as [Lock.Release] does.
func (h *rwHold) release(ctx context.Context, run func(ctx context.Context) (int64, error)) error {
	if err := checkCall(ctx, h.rw.client); err != nil {
		return err
	}
	h.lease.Released()
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
	}
	ctx, start := h.obs.releaseStart(ctx)
	n, err := run(ctx)
	if err == nil && n != 1 {
		err = ErrLockNotHeld
	}
	h.obs.released(ctx, start, 0, err)
	return err
}

// ttl runs a TTL script (reply: milliseconds left, 0 when not held).
func (h *rwHold) ttl(ctx context.Context, run func(ctx context.Context) (any, error)) (time.Duration, error) {
	if err := checkCall(ctx, h.rw.client); err != nil {
		return 0, err
	}
	reply, err := run(ctx)
	if err != nil {
		return 0, err
	}
	ms, ok := reply.(int64)
	if !ok || ms < 0 {
		return 0, fmt.Errorf("%w: ttl of %q: %#v", ErrUnexpectedReply, h.rw.name, reply)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// ReadLock is a read hold of an [RWMutex], from [RWMutex.RLock] or
// [WriteLock.Downgrade]. It behaves as a [Lock]: its accessors read fields
// set at creation, each method runs one script, its lease guards itself,
// so it is safe for concurrent use, and every method accepts a nil
// *ReadLock.
type ReadLock struct {
	h *rwHold
}

// WriteLock is the write lock of an [RWMutex], from [RWMutex.Lock]. It
// behaves as a [Lock] (the writer key holds a lock's value): its accessors
// read fields set at creation, each method runs one script, its lease
// guards itself, so it is safe for concurrent use, and every method
// accepts a nil *WriteLock.
type WriteLock struct {
	h *rwHold
}

// RWMutex returns the lock this hold is of (nil for a nil ReadLock).
func (r *ReadLock) RWMutex() *RWMutex {
	if r == nil {
		return nil
	}
	return r.h.rw
}

// Token returns the token that identifies this hold ("" for a nil
// ReadLock).
func (r *ReadLock) Token() string {
	if r == nil {
		return ""
	}
	return r.h.token
}

// Metadata returns the metadata stored with the hold ("" for a nil
// ReadLock).
func (r *ReadLock) Metadata() string {
	if r == nil {
		return ""
	}
	return r.h.metadata
}

// FenceToken returns the fence token of the last write lock taken with the
// same [Options.FenceKey] before this hold (the write's own token after a
// [WriteLock.Downgrade]); 0 without a FenceKey, and for a nil ReadLock. A
// resource that has seen a write with a greater token should refuse what
// this reader read before it: see docs/rwmutex.md.
func (r *ReadLock) FenceToken() int64 {
	if r == nil {
		return 0
	}
	return r.h.fence
}

// TTL returns the time the hold has left, in whole milliseconds, or
// (0, nil) when it is no longer held. It makes one attempt, blocking for
// one round trip; a Redis error is returned as it is. A nil ReadLock
// returns [ErrLockNotHeld].
func (r *ReadLock) TTL(ctx context.Context) (time.Duration, error) {
	if r == nil {
		return 0, ErrLockNotHeld
	}
	h := r.h
	return h.ttl(ctx, func(ctx context.Context) (any, error) {
		return rwRTTLScript.Run(ctx, h.rw.client, h.rw.keys[rwReaders:rwReaders+1], h.tokenArg).Result()
	})
}

// Refresh extends the hold to expire ttl from now, when it is still held;
// otherwise it changes nothing and returns [ErrNotObtained] at once (an
// expired hold is not retried). Transient Redis errors are retried
// according to opt.RetryStrategy (default [NoRetry]), as for
// [Lock.Refresh], whose other errors and effect on a keep-alive it shares.
func (r *ReadLock) Refresh(ctx context.Context, ttl time.Duration, opt *Options) error {
	if r == nil {
		return ErrNotObtained
	}
	return r.h.refresh(ctx, ttl, opt, r.refreshOnce)
}

func (r *ReadLock) refreshOnce(ctx context.Context, ms int64) (int64, error) {
	h := r.h
	return rwRRefreshScript.Run(ctx, h.rw.client, h.rw.keys[rwReaders:rwHolds+1], h.tokenArg, ms).Int64()
}

// Release ends the hold. It returns [ErrLockNotHeld] when it had already
// expired. It first stops the hold's keep-alive, if any, and, when ctx has
// already ended, still runs with a timeout of its own, as [Lock.Release]
// does. A Redis error is returned as it is; the hold then expires at its
// TTL. A nil ReadLock returns ErrLockNotHeld.
func (r *ReadLock) Release(ctx context.Context) error {
	if r == nil {
		return ErrLockNotHeld
	}
	return r.h.release(ctx, r.releaseOnce)
}

// releaseOnce runs the read hold's release script (reply 1: released).
func (r *ReadLock) releaseOnce(ctx context.Context) (int64, error) {
	h := r.h
	return rwRUnlockScript.Run(ctx, h.rw.client, h.rw.keys[:], h.tokenArg, handoff.ReservationArg, handoff.RegistrationArg).Int64()
}

// KeepAlive keeps the hold alive in the background, refreshing it to ttl,
// exactly as [Lock.KeepAlive] does a lock, with the same errors.
func (r *ReadLock) KeepAlive(ttl time.Duration, opt *KeepAliveOptions) (*KeepAlive, error) {
	if r == nil {
		return nil, ErrLockNotHeld
	}
	return r.h.keepAlive(ttl, opt, r.refreshOnce)
}

// RWMutex returns the lock this is the write lock of (nil for a nil
// WriteLock).
func (w *WriteLock) RWMutex() *RWMutex {
	if w == nil {
		return nil
	}
	return w.h.rw
}

// Token returns the token that identifies this holder ("" for a nil
// WriteLock).
func (w *WriteLock) Token() string {
	if w == nil {
		return ""
	}
	return w.h.token
}

// Metadata returns the metadata stored with the lock ("" for a nil
// WriteLock).
func (w *WriteLock) Metadata() string {
	if w == nil {
		return ""
	}
	return w.h.metadata
}

// FenceToken returns the fencing token of this write acquisition: greater
// than every token issued before from the same [Options.FenceKey]. Pass it
// to the protected resource with each write. It is 0 without a FenceKey
// (and for a nil WriteLock).
func (w *WriteLock) FenceToken() int64 {
	if w == nil {
		return 0
	}
	return w.h.fence
}

// TTL returns the time the write lock has left, in whole milliseconds, or
// (0, nil) when it is no longer held; as [Lock.TTL]. A nil WriteLock
// returns [ErrLockNotHeld].
func (w *WriteLock) TTL(ctx context.Context) (time.Duration, error) {
	if w == nil {
		return 0, ErrLockNotHeld
	}
	h := w.h
	return h.ttl(ctx, func(ctx context.Context) (any, error) {
		return ttlScript.Run(ctx, h.rw.client, h.rw.keys[:1], h.tokenArg).Result()
	})
}

// Refresh extends the write lock to expire ttl from now, when it is still
// held; otherwise it changes nothing and returns [ErrNotObtained] at once.
// Errors, retries and the effect on a keep-alive are those of
// [Lock.Refresh].
func (w *WriteLock) Refresh(ctx context.Context, ttl time.Duration, opt *Options) error {
	if w == nil {
		return ErrNotObtained
	}
	return w.h.refresh(ctx, ttl, opt, w.refreshOnce)
}

func (w *WriteLock) refreshOnce(ctx context.Context, ms int64) (int64, error) {
	h := w.h
	return refreshScript.Run(ctx, h.rw.client, h.rw.keys[:1], h.tokenArg, ms).Int64()
}

// Release ends the write lock; the readers that waited behind it may enter
// at once. It returns [ErrLockNotHeld] when the lock had expired or been
// taken by another. It first stops the lock's keep-alive, if any, and,
// when ctx has already ended, still runs with a timeout of its own, as
// [Lock.Release] does. A Redis error is returned as it is; the lock then
// expires at its TTL. A nil WriteLock returns ErrLockNotHeld.
func (w *WriteLock) Release(ctx context.Context) error {
	if w == nil {
		return ErrLockNotHeld
	}
	return w.h.release(ctx, w.releaseOnce)
}

// releaseOnce runs the write lock's release script (reply 1: released).
func (w *WriteLock) releaseOnce(ctx context.Context) (int64, error) {
	h := w.h
	return rwUnlockScript.Run(ctx, h.rw.client, h.rw.keys[:], h.tokenArg, handoff.ReservationArg, handoff.RegistrationArg).Int64()
}

// KeepAlive keeps the write lock alive in the background, refreshing it
// to ttl, exactly as [Lock.KeepAlive] does a lock, with the same errors.
func (w *WriteLock) KeepAlive(ttl time.Duration, opt *KeepAliveOptions) (*KeepAlive, error) {
	if w == nil {
		return nil, ErrLockNotHeld
	}
	return w.h.keepAlive(ttl, opt, w.refreshOnce)
}

// Downgrade turns the write lock into a read hold of ttl, atomically: no
// writer can take the lock in between, and the readers that waited behind
// this writer enter with it. The read hold has the same token and
// metadata, and carries this write's fence token. The WriteLock is then
// released (its keep-alive, if any, is stopped first, as by
// [WriteLock.Release]); keep the returned ReadLock. It makes one attempt,
// blocking for one round trip. Errors: [ErrInvalidTTL] before anything is
// sent; [ErrLockNotHeld] when the write lock had expired or been taken by
// another (nothing changed); a Redis error as it is (the write lock may
// then be held or not: it expires at its TTL).
func (w *WriteLock) Downgrade(ctx context.Context, ttl time.Duration) (*ReadLock, error) {
	if w == nil {
		return nil, ErrLockNotHeld
	}
	h := w.h
	if err := checkCall(ctx, h.rw.client); err != nil {
		return nil, err
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	h.lease.Released()
	// Hooks see the write lock's release around the read hold's obtain.
	wctx, start := h.obs.releaseStart(ctx)
	obs := observe(h.rw.hooks, KindRead, h.rw.name, ttl)
	ctx = obs.obtainStart(wctx)
	sent := time.Now()
	fence, err := rwDowngradeScript.Run(ctx, h.rw.client, h.rw.keys[:], h.tokenArg, ms, h.metadata, handoff.RegistrationArg).Int64()
	obs.attempt(ctx, err == nil && fence >= 0, err)
	if err == nil && fence < 0 {
		err = ErrLockNotHeld
	}
	if err != nil {
		obs.obtained(ctx, nil, err, ErrLockNotHeld)
		h.obs.released(wctx, start, 0, err)
		return nil, err
	}
	r := &rwHold{rw: h.rw, token: h.token, tokenArg: h.tokenArg, metadata: h.metadata, fence: fence, obs: obs}
	r.lease.Obtained(sent, ttl)
	rl := &ReadLock{h: r}
	obs.obtained(ctx, rl, nil, nil)
	h.obs.released(wctx, start, 0, nil)
	return rl, nil
}
