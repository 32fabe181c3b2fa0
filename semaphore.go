package redislock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/keyslot"
	"github.com/redislock/redislock/internal/lease"
	"github.com/redislock/redislock/internal/script"
)

// permitsSuffix names a semaphore's permit hash, the companion of its key
// (see [Semaphore]).
const (
	permitsSuffix   = ":redislock:permits"
	permitsUntagged = ":untagged"
)

// Semaphore is a counting semaphore on one Redis key: at most a limit of
// permits are live at once, each a lease with a TTL of its own, like a
// [Lock]. Get one from [Client.Semaphore]. It is a small value that holds
// no per-call state: copy it, share it, keep it or make a new one for each
// call, all the same.
//
// The key is a sorted set of the permits' tokens, scored by when each
// expires on the server's clock; its companion, a hash of each permit's
// fence token and metadata, is "<key>:redislock:permits" for a key with a
// hash tag and "{<key>}:redislock:permits:untagged" for one without, so
// both are in the key's hash slot. A permit whose TTL has passed no longer
// counts, from that millisecond on, for every caller; both keys expire by
// themselves with the last live permit.
//
// Limits: each caller gives its own. A permit is granted only while fewer
// than the caller's limit are live, so the count of live permits never
// exceeds the largest limit in use; a caller with a smaller limit waits
// until the count falls below its own. Permits granted under a larger
// limit are never revoked.
type Semaphore struct {
	client   RedisClient
	cluster  bool
	registry *handoff.Registry
	key      string
	permits  string // the companion hash; "" when key cannot have one
	limit    int
	hooks    *clientHooks // the Client's (hook.go)
}

// Semaphore returns the semaphore on key that grants at most limit permits
// at once. It sends nothing and checks nothing: a bad key or a limit below
// one makes every call on it fail before anything is sent.
func (c *Client) Semaphore(key string, limit int) Semaphore {
	permits, _ := permitsKey(key) // "" when it has none: checked by each call
	if c == nil {
		return Semaphore{key: key, permits: permits, limit: limit}
	}
	return Semaphore{client: c.client, cluster: c.cluster, registry: c.registry, key: key, permits: permits, limit: limit, hooks: &c.hooks}
}

// Key returns the semaphore's key.
func (s Semaphore) Key() string { return s.key }

// Limit returns the semaphore's limit, as given to [Client.Semaphore].
func (s Semaphore) Limit() int { return s.limit }

// permitsKey returns the companion hash of key; ok is false when key has no
// hash tag but contains "}", so that no companion can share its slot.
func permitsKey(key string) (string, bool) {
	if keyslot.HasTag(key) {
		return key + permitsSuffix, true
	}
	if strings.IndexByte(key, '}') >= 0 {
		return "", false
	}
	return "{" + key + "}" + permitsSuffix + permitsUntagged, true
}

// check checks the semaphore's limit and keys, and the fence key with them.
// buf, of length 2, receives the semaphore's keys.
func (s Semaphore) check(buf []string, fenceKey string) error {
	if s.limit < 1 {
		return fmt.Errorf("%w: %d (at least 1)", ErrInvalidLimit, s.limit)
	}
	if s.key == "" {
		return fmt.Errorf("%w: the semaphore key is empty", ErrInvalidKey)
	}
	if s.permits == "" {
		return fmt.Errorf("%w: semaphore key %q has a \"}\" but no hash tag: give it one, like \"{%s}\"", ErrInvalidKey, s.key, strings.ReplaceAll(s.key, "}", ""))
	}
	buf[0], buf[1] = s.key, s.permits
	return checkKeys(buf[:2], fenceKey, s.cluster)
}

// reservationMark starts the sorted-set member of a slot reserved for a
// woken waiter (semaphore_lib.lua); no permit's token may start with it.
const reservationMark = "~"

// Acquire takes one permit for ttl (at least one millisecond; Redis counts
// whole milliseconds), when fewer than the semaphore's limit are live. Each
// attempt is one Lua script, one round trip, O(log n) in the number of
// permits (plus the pruning of permits that expired since the last call).
// A live permit of the same token (an explicit [Options.Token]) is taken
// again: the acquire is re-entrant and resets the TTL and metadata.
//
// When limit permits are live, Acquire follows opt.RetryStrategy (default
// [NoRetry]), blocking the calling goroutine between attempts, until the
// context's deadline or, when the context has none, ttl after the call
// began. Transient Redis errors are retried the same way. With
// [WaitForRelease] (alone or inside [LimitRetry] or a jitter, as for
// [Client.Obtain]) it waits for a permit to be released instead: the
// [Permit.Release] of a permit acquired with it hands its slot to the
// caller that has waited longest, across processes, and wakes no other;
// a waiter woken for a slot that its own limit does not let it take
// passes it on and waits on. Of opt, RetryStrategy, Metadata, Token and
// FenceKey are used; a MinReplicas above zero fails with
// ErrInvalidOption.
//
// Errors:
//   - [ErrInvalidLimit], [ErrInvalidTTL], [ErrInvalidKey] (an empty key, a
//     key with "}" but no hash tag, a fence key equal to the semaphore's
//     keys), [*CrossSlotError] (on a Cluster, a fence key in another slot),
//     [ErrInvalidToken] (an [Options.Token] that starts with "~"),
//     [ErrInvalidOption], [ErrNilClient], [ErrNilContext]: bad input,
//     reported before anything is sent to Redis.
//   - [ErrNotObtained]: limit permits are live and the strategy gave up.
//   - an error matching both ErrNotObtained and ctx.Err(): the context
//     ended (or the TTL-long wait ran out) first.
//   - [ErrUnexpectedReply], or the Redis error, as for [Client.Obtain].
//
// On error no permit is left held by this call, except after an ambiguous
// network failure: the permit then expires after ttl.
func (s Semaphore) Acquire(ctx context.Context, ttl time.Duration, opt *Options) (*Permit, error) {
	if err := checkCall(ctx, s.client); err != nil {
		return nil, err
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	fenceKey := opt.fenceKey()
	p := &Permit{client: s.client, metadata: opt.metadata()}
	if err := s.check(p.keyBuf[:2], fenceKey); err != nil {
		return nil, err
	}
	if opt.minReplicas() != 0 {
		return nil, fmt.Errorf("%w: MinReplicas is not supported by Semaphore.Acquire", ErrInvalidOption)
	}
	token := opt.token()
	if token == "" {
		token = newToken()
	} else if strings.HasPrefix(token, reservationMark) {
		return nil, fmt.Errorf("%w: a permit's token may not start with %q, which marks a slot reserved for a woken waiter", ErrInvalidToken, reservationMark)
	}
	p.token, p.tokenArg = token, token
	// The keys live in the Permit: the semaphore's two, capped so that
	// nothing appends into the fence key's place, then the fence key.
	p.keys = p.keyBuf[:2:2]
	keys := p.keyBuf[:2]
	fenced := argUnfenced
	if fenceKey != "" {
		p.keyBuf[2] = fenceKey
		keys = p.keyBuf[:3]
		fenced = argFenced
	}
	limit := int64(s.limit)
	p.obs = observe(s.hooks, KindSemaphore, s.key, ttl)
	ctx = p.obs.obtainStart(ctx)
	if plan, ok := planOf(opt.retryStrategy()); ok { // WaitForRelease, alone or wrapped
		err = s.acquireWaiting(ctx, p, ttl, plan, keys, []any{p.tokenArg, p.metadata, ms, limit, fenced})
		p.obs.obtained(ctx, p, err, nil)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	err = retry(ctx, ttl, opt.retryStrategy(), func(ctx context.Context) (bool, error) {
		sent := time.Now()
		reply, err := semAcquireScript.Run(ctx, s.client, keys, p.tokenArg, p.metadata, ms, limit, fenced).Result()
		n, ok := reply.(int64)
		p.obs.attempt(ctx, err == nil && ok && n >= 0, err)
		if err != nil {
			return false, err
		}
		switch {
		case !ok || n == -1:
			return true, fmt.Errorf("%w: acquire of semaphore %q: %#v", ErrUnexpectedReply, s.key, reply)
		case n < 0:
			return false, nil
		}
		p.fence = n
		p.lease.Obtained(sent, ttl)
		return true, nil
	})
	p.obs.obtained(ctx, p, err, nil)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// acquireWaiting is Acquire's wait for [WaitForRelease], through the
// handoff engine as [Client.ObtainMulti]'s: p has its keys, token and
// metadata; keys and args are the acquire script's. On success p has its
// fence token, lease start, and a Release that hands over.
func (s Semaphore) acquireWaiting(ctx context.Context, p *Permit, ttl time.Duration, plan waitPlan, keys []string, args []any) error {
	fallback := startRetry(plan.fallback)
	out, err := s.registry.Wait(ctx, &handoff.Request{
		Client:      s.client,
		Keys:        p.keyBuf[:1],
		Obtain:      semAcquireScript,
		CallKeys:    keys,
		CallArgs:    args,
		Leave:       semLeaveScript,
		TTL:         ttl,
		Backoff:     fallback.NextBackoff,
		MaxAttempts: plan.attempts,
		Transient:   script.Transient,
		Attempted:   p.obs.attempted(ctx),
	})
	if out.Obtained {
		// A permit obtained at the end of a block counts its lease from
		// the block's start: the script ran at some point after it.
		p.fence, p.handover = out.Value, true
		p.lease.Obtained(out.Sent, ttl)
	}
	if err == nil {
		return nil
	}
	return waitFailed(ctx, out, err, "acquire of semaphore", s.key, func(rctx context.Context) {
		_, _, _ = p.runRelease(rctx)
	})
}

// PermitInfo describes one live permit of a semaphore, as [Semaphore.Holders]
// reads it.
type PermitInfo struct {
	Token      string        // the holder's token
	Metadata   string        // the metadata it acquired with
	FenceToken int64         // its fence token, 0 without [Options.FenceKey]
	TTL        time.Duration // the time it had left when read (>= 1 ms)
}

// Holders returns the semaphore's live permits, the one that expires first
// first. It makes one attempt, a read-only script of one round trip that
// writes nothing (O(log n + h) for h holders); bad input gives the errors of
// [Semaphore.Acquire] before anything is sent, a Redis error is returned as
// it is, and a reply the script never gives as [ErrUnexpectedReply]. An
// empty semaphore gives an empty slice and no error.
func (s Semaphore) Holders(ctx context.Context) ([]PermitInfo, error) {
	if err := checkCall(ctx, s.client); err != nil {
		return nil, err
	}
	var keys [2]string
	if err := s.check(keys[:], ""); err != nil {
		return nil, err
	}
	reply, err := semHoldersScript.RunRO(ctx, s.client, keys[:]).Result()
	if err != nil {
		return nil, err
	}
	bad := func() error {
		return fmt.Errorf("%w: holders of semaphore %q: %#v", ErrUnexpectedReply, s.key, reply)
	}
	arr, ok := reply.([]any)
	if !ok || len(arr)%3 != 0 {
		return nil, bad()
	}
	out := make([]PermitInfo, 0, len(arr)/3)
	for i := 0; i < len(arr); i += 3 {
		token, ok1 := arr[i].(string)
		ms, ok2 := arr[i+1].(int64)
		value, ok3 := arr[i+2].(string)
		if !ok1 || !ok2 || !ok3 {
			return nil, bad()
		}
		fence, meta := parsePermitValue(value)
		out = append(out, PermitInfo{Token: token, Metadata: meta, FenceToken: fence, TTL: time.Duration(ms) * time.Millisecond})
	}
	return out, nil
}

// parsePermitValue splits a permit hash value "<fence>[/<tag>]:<metadata>".
func parsePermitValue(v string) (fence int64, metadata string) {
	f, meta, ok := strings.Cut(v, ":")
	if !ok {
		return 0, ""
	}
	f, _, _ = strings.Cut(f, "/")
	n, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		return 0, meta
	}
	return n, meta
}

// Permit is one permit of a [Semaphore], from [Semaphore.Acquire]. It is a
// lease like a [Lock], with the same methods, meaning the same things. Its
// accessors only read fields set at creation, its methods each run one
// script, and its lease guards itself, so a Permit is safe for concurrent
// use. Every method accepts a nil *Permit: it returns a zero value or an
// error, never panics.
type Permit struct {
	client   RedisClient
	keys     []string  // the semaphore key and its permit hash
	keyBuf   [3]string // keys' storage, and the fence key's
	token    string
	tokenArg any
	metadata string
	fence    int64
	obs      *observation // the Client's hooks, nil without (hook.go)
	handover bool         // acquired with WaitForRelease: Release hands the slot over

	// lease is the one record of the permit's expiry, as for Lock.
	lease lease.Lease
}

// Key returns the semaphore's key ("" for a nil Permit).
func (p *Permit) Key() string {
	if p == nil {
		return ""
	}
	return p.keys[0]
}

// Token returns the token that identifies this permit ("" for a nil
// Permit).
func (p *Permit) Token() string {
	if p == nil {
		return ""
	}
	return p.token
}

// Metadata returns the metadata stored with the permit ("" for a nil
// Permit).
func (p *Permit) Metadata() string {
	if p == nil {
		return ""
	}
	return p.metadata
}

// FenceToken returns the permit's fencing token: greater than every token
// issued before from the same [Options.FenceKey], by permits and locks
// alike. It is 0 without a FenceKey (and for a nil Permit).
func (p *Permit) FenceToken() int64 {
	if p == nil {
		return 0
	}
	return p.fence
}

// TTL returns the time the permit has left, in whole milliseconds, or
// (0, nil) when it is no longer live (expired or released). It makes one
// attempt, a read-only script of one round trip; a Redis error is returned
// as it is, a reply the script never gives as [ErrUnexpectedReply]. A nil
// Permit returns [ErrLockNotHeld].
func (p *Permit) TTL(ctx context.Context) (time.Duration, error) {
	if p == nil {
		return 0, ErrLockNotHeld
	}
	if err := checkCall(ctx, p.client); err != nil {
		return 0, err
	}
	reply, err := semTTLScript.RunRO(ctx, p.client, p.keys[:1], p.tokenArg).Result()
	if err != nil {
		return 0, err
	}
	ms, ok := reply.(int64)
	if !ok || ms < 0 {
		return 0, fmt.Errorf("%w: ttl of permit of %q: %#v", ErrUnexpectedReply, p.keys[0], reply)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Refresh extends the permit to expire ttl from now, when it is still
// live; otherwise it changes nothing and returns [ErrNotObtained] at once
// (a lost permit is not retried: its slot may be someone else's by now).
// Transient Redis errors are retried according to opt.RetryStrategy
// (default [NoRetry]) as for [Lock.Refresh], whose contract it shares:
// context, [ErrInvalidTTL] before anything is sent, and the lease that
// [Permit.KeepAlive] follows. Only opt.RetryStrategy is used.
func (p *Permit) Refresh(ctx context.Context, ttl time.Duration, opt *Options) error {
	if p == nil {
		return ErrNotObtained
	}
	if err := checkCall(ctx, p.client); err != nil {
		return err
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return err
	}
	leaseTTL := time.Duration(ms) * time.Millisecond
	ctx, start := p.obs.refreshStart(ctx, ttl, false)
	err = retry(ctx, ttl, opt.retryStrategy(), func(ctx context.Context) (bool, error) {
		sent := time.Now()
		p.lease.Sending(sent, leaseTTL)
		ok, err := semRefreshScript.Run(ctx, p.client, p.keys, p.tokenArg, ms).Int64()
		switch {
		case err != nil:
			return false, err
		case ok != 1:
			p.lease.Lost(sent)
			return true, ErrNotObtained
		}
		p.lease.Renewed(sent, leaseTTL)
		return true, nil
	})
	p.obs.refreshed(ctx, start, ttl, false, err)
	return err
}

// Release gives the permit back, in one script, O(log n). A permit
// acquired with [WaitForRelease] hands its slot to the longest waiter of
// the semaphore, if one is registered (waiters of a permit released
// otherwise notice within about a second). It returns
// [ErrLockNotHeld] when the permit had expired (or was released before):
// an expired permit had stopped counting already, and no other permit is
// ever touched. It first stops the permit's keep-alive, if any, as
// [Lock.Release] does; after Release the Permit cannot be kept alive
// again. When ctx has already ended, Release still runs, with ctx's values
// but without its cancellation, bounded by a timeout of its own of 5
// seconds. It makes one attempt; a Redis error is returned as it is, and
// the permit then expires by its TTL.
func (p *Permit) Release(ctx context.Context) error {
	if p == nil {
		return ErrLockNotHeld
	}
	if err := checkCall(ctx, p.client); err != nil {
		return err
	}
	p.lease.Released()
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
	}
	ctx, start := p.obs.releaseStart(ctx)
	ours, handed, err := p.runRelease(ctx)
	if err == nil && ours != 1 {
		err = ErrLockNotHeld
	}
	p.obs.released(ctx, start, int(handed), err)
	return err
}

// runRelease runs semaphore_release.lua for p, handing its slot over when
// p was acquired with WaitForRelease. It returns 1 when the permit was
// live, and how many slots went to waiters.
func (p *Permit) runRelease(ctx context.Context) (ours, handed int64, err error) {
	if !p.handover {
		ours, err = semReleaseScript.Run(ctx, p.client, p.keys, p.tokenArg).Int64()
		return ours, 0, err
	}
	c, _ := handoff.Companions(p.keys[:1]) // the key was checked to have them
	keys := [4]string{p.keys[0], p.keys[1], c[1], c[2]}
	r, err := semReleaseScript.Run(ctx, p.client, keys[:], p.tokenArg, handoff.ReservationArg).Int64()
	if err != nil {
		return 0, 0, err
	}
	// handed * 2 + ours (semaphore_release.lua).
	if r < 0 {
		return 0, 0, fmt.Errorf("%w: release of permit of %q: %v", ErrUnexpectedReply, p.keys[0], r)
	}
	return r % 2, r / 2, nil
}

// KeepAlive starts refreshing the permit to ttl in the background, so that
// it stays held while the work it protects runs. It is [Lock.KeepAlive]
// for a permit: the same [KeepAlive] handle, options, errors and loss
// signals (a refresh that finds the permit expired ends it with an error
// matching [ErrLockLost] and [ErrNotObtained]). Stop it with
// [KeepAlive.Stop], or with [Permit.Release], which stops it first.
func (p *Permit) KeepAlive(ttl time.Duration, opt *KeepAliveOptions) (*KeepAlive, error) {
	if p == nil {
		return nil, ErrLockNotHeld
	}
	if p.client == nil {
		return nil, ErrNilClient
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	return keepLeaseReporting(&p.lease, time.Duration(ms)*time.Millisecond, opt, p.obs.hookedRefresh(ttl, func(ctx context.Context) error {
		ok, err := semRefreshScript.Run(ctx, p.client, p.keys, p.tokenArg, ms).Int64()
		switch {
		case err != nil:
			return err
		case ok != 1:
			return lease.ErrNotHeld
		}
		return nil
	}), p.obs.ended())
}
