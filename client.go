package redislock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/quorum"
	"github.com/redislock/redislock/internal/retry"
)

// RedisClient is the part of a go-redis client that redislock uses: running
// Lua scripts. *redis.Client, *redis.ClusterClient, *redis.Ring, the client
// of redis.NewFailoverClient and every redis.UniversalClient satisfy it.
type RedisClient interface {
	redis.Scripter
}

// Client obtains locks through one Redis client. It is safe for concurrent
// use and cheap to create. The waits of [WaitForRelease] through one
// go-redis client share one blocked connection per key, whichever Client
// they use (the package's one piece of shared state, empty while nobody
// waits; docs/waiting.md). A Client's own state is its hooks
// ([Client.AddHook]), what it learnt of the server's commands ([New]), the
// key that its last Release handed over to a waiter, whether its last
// obtain of one key found it held, and Locks that failed obtains built and
// never returned, which later obtains reuse.
type Client struct {
	client   RedisClient
	cluster  bool
	registry *handoff.Registry
	hooks    clientHooks    // see hook.go
	one      single         // the backend of its locks (backend.go)
	quorum   *quorum.Engine // instead, a Quorum's: each lock's backend is a quorumLease (quorum.go)

	// requeue is the key its last release handed over (waitforrelease.go).
	requeue handoff.Hint
	// spare holds the handles that failed obtains built and nobody saw
	// (no hooks, no waiting): the next obtain reuses one, so that an
	// obtain that fails allocates nothing of its own.
	spare sync.Pool
}

// New returns a Client that runs its scripts through client. When client is
// a *redis.ClusterClient, multi-key locks and fence keys are checked for a
// common hash slot before anything is sent. A nil client makes every call
// return [ErrNilClient].
//
// On a server that compares values itself (Valkey 8.1+, Redis 8.4+), its
// locks of one key are refreshed, and released when they hand nothing over
// to a waiter of [WaitForRelease], with one plain command instead of a
// script (docs/acl-tls.md says which). The first such call asks the server
// once which it has (one more round trip, in that call); a server that
// refuses one later makes the Client run scripts from then on, as does a
// client that is only a redis.Scripter. Keep one Client per go-redis
// client, not one per lock.
func New(client RedisClient) *Client {
	return newClient(client, true)
}

// newClient returns a Client; without natives, one that runs scripts only
// (the shortcuts', which would otherwise ask the server at every Lock).
func newClient(client RedisClient, natives bool) *Client {
	_, cluster := client.(*redis.ClusterClient)
	c := &Client{client: client, cluster: cluster, registry: handoff.Default}
	c.one.init(client, natives)
	return c
}

// Obtain is a shortcut for New(client).Obtain(ctx, key, ttl, opt), except
// that the Lock it returns always runs scripts: its Client, made for this
// one call, does not ask the server for native commands (see [New]).
func Obtain(ctx context.Context, client RedisClient, key string, ttl time.Duration, opt *Options) (*Lock, error) {
	return newClient(client, false).Obtain(ctx, key, ttl, opt)
}

// ObtainMulti is a shortcut for New(client).ObtainMulti(ctx, keys, ttl,
// opt); its Lock always runs scripts, as [Obtain]'s does.
func ObtainMulti(ctx context.Context, client RedisClient, keys []string, ttl time.Duration, opt *Options) (*Lock, error) {
	return newClient(client, false).ObtainMulti(ctx, keys, ttl, opt)
}

// Obtain takes the lock on key for ttl. It is ObtainMulti with one key; see
// there for the errors and the waiting.
func (c *Client) Obtain(ctx context.Context, key string, ttl time.Duration, opt *Options) (*Lock, error) {
	return c.ObtainMulti(ctx, []string{key}, ttl, opt)
}

// ObtainMulti takes the lock on every key, or on none, for ttl (at least one
// millisecond; Redis counts whole milliseconds). Each attempt is one round
// trip: one Lua script, or a plain SET … NX for the first attempt on one
// key without fence key or token of the caller's, by a Client from [New]
// whose last such attempt did not find its key held. A key already held
// with the same token (an explicit [Options.Token]) counts as free: the
// obtain is re-entrant and resets the TTL and metadata.
//
// When some key is held by another token, ObtainMulti follows
// opt.RetryStrategy (default [NoRetry]), blocking the calling goroutine
// between attempts. Waiting ends at the context's deadline or, when the
// context has none, ttl after the call began. Transient Redis errors (lost
// connections, LOADING, READONLY during a failover, …) are retried the same
// way; any other error ends the call at once. With [WaitForRelease] (alone
// or inside [LimitRetry], [Jitter], [FullJitter]) the waiting is
// event-driven: a Release hands the lock over.
//
// Errors:
//   - [ErrInvalidTTL], [ErrInvalidKey], [*CrossSlotError] ([ErrCrossSlot]),
//     [ErrInvalidOption] (a negative [Options.MinReplicas] or
//     [Options.ReplicaTimeout]), [ErrUnsupportedClient] (MinReplicas with a
//     client that cannot run WAIT on the obtain's connection),
//     [ErrNilClient], [ErrNilContext]: bad input, reported before anything
//     is sent to Redis.
//   - [ErrNotObtained]: the lock is held by another and the strategy gave up.
//   - an error matching both [ErrNotObtained] and ctx.Err(): the context
//     ended (or the TTL-long wait ran out) before the lock was obtained.
//   - [*ReplicaError] ([ErrNotReplicated]): with [Options.MinReplicas], the
//     lock was taken but fewer replicas acknowledged it within
//     [Options.ReplicaTimeout]; it has been released again.
//   - [ErrUnexpectedReply]: Redis answered with a reply the script never
//     gives.
//   - the Redis error: a final error, or the last transient one when the
//     strategy gave up while Redis kept failing.
//
// On error no key is left held by this call, except after an ambiguous
// network failure (the script ran but its reply was lost): the keys then
// expire after ttl, or a retry with the same token takes them back.
//
// keys is not retained: the Lock keeps its own copy.
func (c *Client) ObtainMulti(ctx context.Context, keys []string, ttl time.Duration, opt *Options) (*Lock, error) {
	return c.obtain(ctx, keys, ttl, opt, false, nil)
}

// obtain is ObtainMulti. With inCall, it is a round of a Campaign, whose
// observation campaign (nil without hooks) its attempts are reported to.
func (c *Client) obtain(ctx context.Context, keys []string, ttl time.Duration, opt *Options, inCall bool, campaign *observation) (*Lock, error) {
	if c == nil {
		return nil, ErrNilClient
	}
	if c.quorum == nil {
		if err := checkCall(ctx, c.client); err != nil {
			return nil, err
		}
	} else if ctx == nil {
		return nil, ErrNilContext
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	if c.quorum != nil && time.Duration(ms)*time.Millisecond > c.quorum.MaxTTL() {
		return nil, fmt.Errorf("%w: %v is above the quorum's MaxTTL of %v", ErrInvalidTTL, ttl, c.quorum.MaxTTL())
	}
	fenceKey := opt.fenceKey()
	if err := checkKeys(keys, fenceKey, c.cluster); err != nil {
		return nil, err
	}
	if c.quorum != nil && opt.minReplicas() != 0 {
		return nil, fmt.Errorf("%w: MinReplicas is not supported by a Quorum", ErrInvalidOption)
	}
	if err := checkReplicas(c.client, opt); err != nil {
		return nil, err
	}
	if err := checkMinHold(opt, true, ""); err != nil {
		return nil, err
	}

	// The handle stores the script's keys (inline for one key) and its
	// arguments, which then cost no allocation to box (internal/value).
	h, _ := c.spare.Get().(*handle)
	if h == nil {
		h = new(handle)
	} else {
		*h = handle{}
	}
	h.be, h.kind, h.metadata = &c.one, lockKind{}, opt.metadata()
	if c.quorum != nil {
		h.be = &quorumLease{e: c.quorum}
	}
	token := opt.token()
	var tokenArg any = token
	if token != "" {
		h.token = token
	} else {
		tokenArg = h.args.NewToken()
	}
	ttlArg := h.args.TTL(ms)
	scriptKeys := h.keyBuf[:0]
	if len(keys) >= len(h.keyBuf) {
		scriptKeys = make([]string, 0, len(keys)+1)
	}
	scriptKeys = append(scriptKeys, keys...)
	// Capped, so that nothing appends into the fence key's place.
	h.keys = scriptKeys[:len(keys):len(keys)]
	fenced := argUnfenced
	if fenceKey != "" {
		scriptKeys = append(scriptKeys, fenceKey)
		fenced = h.args.Fence(fenceKey)
	}
	h.argBuf = [7]any{tokenArg, h.metadata, ttlArg, fenced, ""}
	args := h.argBuf[:5] // the fifth only for a wait
	// The first attempt on one key with a generated token is plain
	// (backend.go), unless it waits; its arguments follow the script's four.
	_, waiting := retry.PlanOf(opt.retryStrategy())
	plain := len(keys) == 1 && token == "" && !waiting
	if plain {
		h.argBuf[4], h.argBuf[5], h.argBuf[6] = h.args.Owner(), h.args.Rest(h.metadata, fenceKey != ""), ttlArg
	}
	a := acquisition{
		h: h, ttl: ttl, strategy: opt.retryStrategy(), minHold: opt.minHold(), kind: KindLock, inCall: inCall, obs: campaign,
		attempt: call{op: opObtain, script: obtainScript, keys: scriptKeys, args: args[:4:4], plain: plain, ms: ms},
		held:    func(reply int64) (bool, error) { return reply != obtainHeld && reply >= 0, nil },
		wait: handoff.Request{Keys: h.keys, Obtain: obtainScript, CallKeys: scriptKeys, CallArgs: args[:4:4],
			PollArgs: args, Leave: leaveScript},
		handsOver: true,
	}
	if waiting && len(keys) == 1 {
		a.wait.ID, a.wait.Registered, a.wait.Requeue = c.requeue.Take(keys[0])
	}
	if other, id, ok := c.requeue.Stale(keys[0]); ok {
		handoff.Withdraw(ctx, leaveScript, c.client, other, id) // best effort: registered by its last release, for another key
	}
	if opt.minReplicas() > 0 {
		a.confirm = func(ctx context.Context) error {
			return confirmReplicas(ctx, (*Lock)(h), opt, scriptKeys, tokenArg, h.metadata, ttlArg, fenced)
		}
	}
	seen := inCall || c.hooks.Load() != nil || waiting || opt.minReplicas() > 0
	if err := c.acquire(ctx, &a); err != nil {
		if !seen {
			c.spare.Put(h)
		}
		return nil, err
	}
	return (*Lock)(h), nil
}
