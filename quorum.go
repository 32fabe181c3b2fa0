package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/quorum"
)

// Quorum obtains locks on N independent Redis or Valkey masters (N odd, at
// least 3; no replication between them), held while a majority hold their
// keys, so a minority of masters may fail, restart or be cut off. Its
// locks are [*Lock]s with their whole method set, each counting the
// majority: [Lock.KeepAlive] signals the loss when the majority goes, and
// with [Options.FenceKey] each [Lock.FenceToken] is greater than every
// token issued before it, whichever majority won, with masters restarting
// (docs/quorum.md says what that assumes). Make one with [NewQuorum]; it
// is safe for concurrent use.
type Quorum struct {
	c *Client
}

// QuorumOptions tunes [NewQuorum]; a nil *QuorumOptions means all defaults.
type QuorumOptions struct {
	// MaxTTL is the longest TTL a lock of the quorum may have; an obtain
	// with a longer one fails with [ErrInvalidTTL]. A master that lost its
	// data grants nothing for MaxTTL after it comes back: every Quorum of
	// the same masters must use the same MaxTTL (docs/quorum.md).
	// Default: 1 minute.
	MaxTTL time.Duration
}

// NewQuorum returns a Quorum over the masters behind clients, one go-redis
// client each (a *redis.Client of a standalone master). It sends nothing.
// Errors: [ErrInvalidOption] for an even number of clients or fewer than
// three, a client given twice, or a MaxTTL below 3 ms; [ErrNilClient] for
// a nil client.
func NewQuorum(clients []RedisClient, opt *QuorumOptions) (*Quorum, error) {
	nodes := make([]redis.Scripter, len(clients))
	for i, c := range clients {
		if checkCall(context.Background(), c) != nil {
			return nil, fmt.Errorf("%w: client %d of the quorum", ErrNilClient, i)
		}
		nodes[i] = c
	}
	maxTTL := time.Minute // QuorumOptions.MaxTTL's default
	if opt != nil && opt.MaxTTL != 0 {
		maxTTL = opt.MaxTTL
	}
	e, err := quorum.New(nodes, quorum.Config{MaxTTL: maxTTL})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return &Quorum{c: &Client{registry: handoff.Default, quorum: e}}, nil
}

// Obtain is [Quorum.ObtainMulti] with one key.
func (q *Quorum) Obtain(ctx context.Context, key string, ttl time.Duration, opt *Options) (*Lock, error) {
	return q.ObtainMulti(ctx, []string{key}, ttl, opt)
}

// ObtainMulti takes the lock on every key, or on none, on a majority of
// the masters, for ttl (at most [QuorumOptions.MaxTTL]), as
// [Client.ObtainMulti] does on one, with these differences. A failed
// attempt leaves nothing held. [WaitForRelease] polls, with its fallback.
// An obtain with the token of a lock still held is not re-entrant: it is
// not obtained. [Options.MinReplicas] fails with [ErrInvalidOption]. A
// master that does not answer delays each call until the client's
// timeouts end it (ReadTimeout, or the context's deadline with
// ContextTimeoutEnabled). A lock held by others on too many masters is
// [ErrNotObtained] alone; when failed masters could have made the
// difference, the error also wraps their errors (a *net.OpError, a
// redis.Error), and the retry strategy retries the transient ones.
func (q *Quorum) ObtainMulti(ctx context.Context, keys []string, ttl time.Duration, opt *Options) (*Lock, error) {
	if q == nil {
		return nil, ErrNilClient
	}
	return q.c.obtain(ctx, keys, ttl, opt, false, nil)
}

// AddHook adds h to the hooks of q, as [Client.AddHook] does.
func (q *Quorum) AddHook(h Hook) {
	if q != nil {
		q.c.AddHook(h)
	}
}

// quorumLease is the backend of one lease held on a quorum: the engine,
// and the tag of the acquisition that holds it (set by the obtain, before
// the handle is shared).
type quorumLease struct {
	e   *quorum.Engine
	tag string
}

func (q *quorumLease) redis() RedisClient { return nil }

// run sends c to every master through the engine and gives the reply the
// single backend's scripts would (docs/quorum.md, "The engine, for the
// root package").
func (q *quorumLease) run(ctx context.Context, h *handle, c call) (int64, error) {
	token := h.token
	if token == "" {
		token = h.args.Token()
	}
	switch c.op {
	case opObtain:
		fenceKey := ""
		if len(c.keys) > len(h.keys) {
			fenceKey = c.keys[len(h.keys)]
		}
		g, held, err := q.e.Take(ctx, quorum.Request{Keys: h.keys, Token: token, Metadata: h.metadata, TTL: time.Duration(c.ms) * time.Millisecond, FenceKey: fenceKey})
		switch {
		case held:
			return obtainHeld, nil
		case err != nil:
			// Not obtained, and why (transient, for the retry loop, unless
			// a master refused for good).
			return 0, fmt.Errorf("%w: %w", ErrNotObtained, err)
		}
		q.tag = g.Tag
		return g.Fence, nil
	case opRefresh:
		held, err := q.e.Renew(ctx, quorum.Hold{Keys: h.keys, Token: token, Tag: q.tag, Metadata: h.metadata, Fence: h.fence,
			ValidUntil: h.lease.ValidUntil(0)}, time.Duration(c.ms)*time.Millisecond)
		if held {
			return 1, nil
		}
		return 0, err
	case opRelease:
		if done, err := q.e.Released(ctx, h.keys, token, q.tag); !done {
			return 0, err
		}
		return int64(max(c.units, 1)), nil
	}
	d, err := q.e.HeldTTL(ctx, h.keys, token, q.tag)
	return d.Milliseconds(), err
}
