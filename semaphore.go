package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/semaphore"
)

// Semaphore is a counting semaphore on one Redis key: at most a limit of
// permits are live at once, each a lease with a TTL of its own, like a
// [Lock]. Get one from [Client.Semaphore]. It holds no per-call state: copy
// it, share it or make a new one for each call, all the same. A permit
// whose TTL has passed no longer counts, from that millisecond on. Each
// caller gives its own limit: the count of live permits never exceeds the
// largest limit in use, and permits granted under a larger one are never
// revoked. docs/semaphore.md has its keys, scripts and waiting.
type Semaphore struct {
	c       *Client
	client  RedisClient
	key     string
	permits string // the companion hash; "" when key cannot have one
	limit   int
}

// Semaphore returns the semaphore on key that grants at most limit permits
// at once. It sends nothing and checks nothing: a bad key or a limit below
// one makes every call on it fail before anything is sent.
func (c *Client) Semaphore(key string, limit int) Semaphore {
	permits, _ := semaphore.PermitsKey(key) // "" when it has none: checked by each call
	if c == nil {
		return Semaphore{key: key, permits: permits, limit: limit}
	}
	return Semaphore{c: c, client: c.client, key: key, permits: permits, limit: limit}
}

// Key returns the semaphore's key.
func (s Semaphore) Key() string { return s.key }

// Limit returns the semaphore's limit, as given to [Client.Semaphore].
func (s Semaphore) Limit() int { return s.limit }

// check checks the semaphore's limit and keys, and the fence key with them.
// buf, of length 2, receives the semaphore's keys.
func (s Semaphore) check(buf []string, fenceKey string) error {
	if s.limit < 1 {
		return fmt.Errorf("%w: %d (at least 1)", ErrInvalidLimit, s.limit)
	}
	if msg := semaphore.CheckKey(s.key, s.permits); msg != "" {
		return fmt.Errorf("%w: %s", ErrInvalidKey, msg)
	}
	buf[0], buf[1] = s.key, s.permits
	return checkKeys(buf[:2], fenceKey, s.c.cluster)
}

// Acquire takes one permit for ttl (at least one millisecond; Redis counts
// whole milliseconds), when fewer than the semaphore's limit are live. A
// live permit of the same token (an explicit [Options.Token]) is taken
// again: the acquire is re-entrant and resets the TTL and metadata.
//
// When limit permits are live, Acquire waits and retries as
// [Client.ObtainMulti] does when a key is held (opt.RetryStrategy, default
// [NoRetry]); with [WaitForRelease] a release hands the slot to the longest
// waiter, across processes. Of opt, RetryStrategy, Metadata, Token,
// FenceKey and MinHold are used; a MinReplicas above zero fails with
// ErrInvalidOption.
//
// Errors, with no permit held by this call (but after an ambiguous network
// failure, one that expires after ttl): [ErrInvalidLimit], [ErrInvalidTTL],
// [ErrInvalidKey] (an empty key, a key with "}" but no hash tag, a fence
// key equal to the semaphore's keys), [*CrossSlotError] (on a Cluster, a
// fence key in another slot), [ErrInvalidToken] (an [Options.Token] that
// starts with "~"), [ErrInvalidOption], [ErrNilClient] and [ErrNilContext]
// before anything is sent; [ErrNotObtained] when limit permits are live and
// the strategy gave up, also matching ctx.Err() when the context (or the
// ttl-long wait) ended first; [ErrUnexpectedReply] and Redis errors as for
// [Client.ObtainMulti].
func (s Semaphore) Acquire(ctx context.Context, ttl time.Duration, opt *Options) (*Permit, error) {
	if err := checkCall(ctx, s.client); err != nil {
		return nil, err
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	fenceKey := opt.fenceKey()
	h := &handle{be: &s.c.one, kind: permitKind{}, metadata: opt.metadata()}
	if err := s.check(h.keyBuf[:2], fenceKey); err != nil {
		return nil, err
	}
	if opt.minReplicas() != 0 {
		return nil, fmt.Errorf("%w: MinReplicas is not supported by Semaphore.Acquire", ErrInvalidOption)
	}
	if err := checkMinHold(opt, true, ""); err != nil {
		return nil, err
	}
	if token := opt.token(); token == "" {
		h.argBuf[0] = h.args.NewToken()
	} else if msg := semaphore.CheckToken(token); msg != "" {
		return nil, fmt.Errorf("%w: %s", ErrInvalidToken, msg)
	} else {
		h.token, h.argBuf[0] = token, token
	}
	// Capped, so that nothing appends into the fence key's place.
	h.keys, h.keyBuf[2] = h.keyBuf[:2:2], fenceKey
	keys, fenced := h.keyBuf[:2], argUnfenced
	if fenceKey != "" {
		keys, fenced = h.keyBuf[:3], argFenced
	}
	h.argBuf = [7]any{h.tokenArg(), h.metadata, ms, int64(s.limit), fenced}
	args := h.argBuf[:5]
	err = s.c.acquire(ctx, &acquisition{
		h: h, ttl: ttl, strategy: opt.retryStrategy(), minHold: opt.minHold(), kind: KindSemaphore, name: s.key,
		attempt: call{op: opObtain, script: semAcquireScript, keys: keys, args: args, needs: semNeeds},
		held: func(n int64) (bool, error) {
			if n == -1 {
				return false, fmt.Errorf("%w: acquire of semaphore %q: %d", ErrUnexpectedReply, s.key, n)
			}
			return n >= 0, nil
		},
		wait:      handoff.Request{Keys: h.keyBuf[:1], Obtain: semAcquireScript, CallKeys: keys, CallArgs: args, Leave: semLeaveScript},
		handsOver: true,
	})
	if err != nil {
		return nil, err
	}
	return (*Permit)(h), nil
}

// PermitInfo is one live permit, as [Semaphore.Holders] reads it.
type PermitInfo struct {
	Token      string        // the holder's token
	Metadata   string        // the metadata it acquired with
	FenceToken int64         // its fence token, 0 without [Options.FenceKey]
	TTL        time.Duration // the time it had left when read (>= 1 ms)
}

// Holders returns the semaphore's live permits, the one that expires first
// first (none: an empty slice). It makes one attempt, which writes nothing;
// bad input gives the errors of [Semaphore.Acquire] before anything is
// sent, a Redis error is returned as it is, and a reply the script never
// gives as [ErrUnexpectedReply].
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
		return nil, typed(ctx, s.client, keys[:], semNeeds, err)
	}
	out, ok := semaphore.Holders[PermitInfo](reply)
	if !ok {
		return nil, fmt.Errorf("%w: holders of semaphore %q: %#v", ErrUnexpectedReply, s.key, reply)
	}
	return out, nil
}
