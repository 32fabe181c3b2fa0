package redislock

import (
	"context"
	"time"

	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/semaphore"
)

// Permit is one permit of a [Semaphore], from [Semaphore.Acquire]: a lease
// like a [Lock], whose methods it has, meaning the same things. It is safe
// for concurrent use, and every method accepts a nil *Permit: it returns a
// zero value or an error, never panics.
type Permit handle

func (p *Permit) held() *handle { return (*handle)(p) }

// Key returns the semaphore's key ("" for a nil Permit).
func (p *Permit) Key() string { return (*handle)(p).key() }

// Token returns the permit's token ("" for a nil Permit).
func (p *Permit) Token() string { return (*handle)(p).tok() }

// Metadata returns the permit's metadata ("" for a nil Permit).
func (p *Permit) Metadata() string { return (*handle)(p).meta() }

// FenceToken returns the permit's fencing token: greater than every token
// issued before from the same [Options.FenceKey], by permits and locks
// alike. It is 0 without a FenceKey (and for a nil Permit).
func (p *Permit) FenceToken() int64 { return (*handle)(p).fenceToken() }

// TTL returns the time the permit has left, or (0, nil) when it is no
// longer live (expired or released), as [Lock.TTL] does, with its errors.
func (p *Permit) TTL(ctx context.Context) (time.Duration, error) { return (*handle)(p).ttl(ctx) }

// Refresh extends the permit to expire ttl from now, when it is still
// live, as [Lock.Refresh] does a lock, with its retries, errors (at once
// [ErrNotObtained] for a lost permit) and effect on a keep-alive.
func (p *Permit) Refresh(ctx context.Context, ttl time.Duration, opt *Options) error {
	return (*handle)(p).refresh(ctx, ttl, opt)
}

// Release gives the permit back; one acquired with [WaitForRelease] hands
// its slot to the semaphore's longest waiter, if any. It returns
// [ErrLockNotHeld] when the permit had expired (it no longer counted) or
// was released before, and never touches another permit; the rest is as
// for [Lock.Release].
func (p *Permit) Release(ctx context.Context) error { return (*handle)(p).release(ctx) }

// KeepAlive is [Lock.KeepAlive] for the permit, with the same errors.
func (p *Permit) KeepAlive(ttl time.Duration, opt *KeepAliveOptions) (*KeepAlive, error) {
	return (*handle)(p).keepAlive(ttl, opt)
}

// semNeeds is the server that the semaphore's scripts need.
const semNeeds = semaphore.Needs

// permitKind is the kind of a Permit (docs/semaphore.md, "Key layout").
type permitKind struct{}

func (permitKind) public(h *handle) Handle { return (*Permit)(h) }

func (permitKind) refreshCall(h *handle, ms int64) call {
	return call{op: opRefresh, script: semRefreshScript, keys: h.keys, args: []any{h.tokenArg(), ms}, needs: semNeeds}
}

func (permitKind) ttlCall(h *handle) call {
	return call{op: opTTL, script: semTTLScript, keys: h.keys[:1], args: h.tokenArgs(), ro: true, needs: semNeeds}
}

// releaseCall hands the slot over when the permit waited to be acquired.
func (permitKind) releaseCall(h *handle) call {
	c := call{op: opRelease, script: semReleaseScript, keys: h.keys, args: h.tokenArgs(), needs: semNeeds, units: 1}
	if h.wait != nil {
		q, _ := handoff.ReleaseKeys(h.wait.companions, h.keys[:1]) // line, liveness set: checked to exist
		c.keys = []string{h.keys[0], h.keys[1], q[1], q[2]}
		c.args = append(c.args, argFenced) // "1": hand the slot over
	}
	return c
}
