package redislock

import (
	"context"
	"time"

	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/semaphore"
)

// Permit is one permit of a [Semaphore], from [Semaphore.Acquire]. It is a
// lease like a [Lock], with the same methods, meaning the same things. Its
// accessors only read what was set when it was acquired, its methods each
// run one script, and its lease guards itself, so a Permit is safe for
// concurrent use. Every method accepts a nil *Permit: it returns a zero
// value or an error, never panics.
type Permit handle

func (p *Permit) held() *handle { return (*handle)(p) }

// Key returns the semaphore's key ("" for a nil Permit).
func (p *Permit) Key() string { return (*handle)(p).key() }

// Token returns the token that identifies this permit ("" for a nil
// Permit).
func (p *Permit) Token() string { return (*handle)(p).tok() }

// Metadata returns the metadata stored with the permit ("" for a nil
// Permit).
func (p *Permit) Metadata() string { return (*handle)(p).meta() }

// FenceToken returns the permit's fencing token: greater than every token
// issued before from the same [Options.FenceKey], by permits and locks
// alike. It is 0 without a FenceKey (and for a nil Permit).
func (p *Permit) FenceToken() int64 { return (*handle)(p).fenceToken() }

// TTL returns the time the permit has left, in whole milliseconds, or
// (0, nil) when it is no longer live (expired or released). It makes one
// attempt, a read-only script of one round trip; a Redis error is returned
// as it is, a reply the script never gives as [ErrUnexpectedReply]. A nil
// Permit returns [ErrLockNotHeld].
func (p *Permit) TTL(ctx context.Context) (time.Duration, error) { return (*handle)(p).ttl(ctx) }

// Refresh extends the permit to expire ttl from now, when it is still
// live; otherwise it changes nothing and returns [ErrNotObtained] at once
// (a lost permit is not retried: its slot may be someone else's by now).
// Transient Redis errors are retried according to opt.RetryStrategy
// (default [NoRetry]) as for [Lock.Refresh], whose contract it shares:
// context, [ErrInvalidTTL] before anything is sent, and the lease that
// [Permit.KeepAlive] follows. Only opt.RetryStrategy is used.
func (p *Permit) Refresh(ctx context.Context, ttl time.Duration, opt *Options) error {
	return (*handle)(p).refresh(ctx, ttl, opt)
}

// Release gives the permit back. A permit acquired with [WaitForRelease]
// hands its slot to the longest waiter of the semaphore, if one is
// registered (waiters of a permit released otherwise notice within about a
// second). It returns [ErrLockNotHeld] when the permit had expired (or was
// released before): an expired permit had stopped counting already, and no
// other permit is ever touched. It first stops the permit's keep-alive, if
// any, as [Lock.Release] does; after Release the Permit cannot be kept
// alive again. When ctx has already ended, Release still runs, with ctx's
// values but without its cancellation, bounded by a timeout of its own of 5
// seconds. It makes one attempt; a Redis error is returned as it is, and the
// permit then expires by its TTL.
func (p *Permit) Release(ctx context.Context) error { return (*handle)(p).release(ctx) }

// KeepAlive starts refreshing the permit to ttl in the background, so that
// it stays held while the work it protects runs. It is [Lock.KeepAlive]
// for a permit: the same [KeepAlive] handle, options, errors and loss
// signals (a refresh that finds the permit expired ends it with an error
// matching [ErrLockLost] and [ErrNotObtained]). Stop it with
// [KeepAlive.Stop], or with [Permit.Release], which stops it first.
func (p *Permit) KeepAlive(ttl time.Duration, opt *KeepAliveOptions) (*KeepAlive, error) {
	return (*handle)(p).keepAlive(ttl, opt)
}

// semNeeds is the server that the semaphore's scripts need.
const semNeeds = semaphore.Needs

// permitKind is the kind of a Permit: its token in the semaphore's sorted
// set, and its fence token and metadata in the companion hash.
type permitKind struct{}

func (permitKind) public(h *handle) Handle { return (*Permit)(h) }

func (permitKind) refreshCall(h *handle, ms int64) call {
	return call{op: opRefresh, script: semRefreshScript, keys: h.keys, args: []any{h.tokenArg, ms}, needs: semNeeds}
}

func (permitKind) ttlCall(h *handle) call {
	return call{op: opTTL, script: semTTLScript, keys: h.keys[:1], args: []any{h.tokenArg}, ro: true, needs: semNeeds}
}

// releaseCall hands the slot over when the permit waited to be acquired.
func (permitKind) releaseCall(h *handle) call {
	c := call{op: opRelease, script: semReleaseScript, keys: h.keys, args: []any{h.tokenArg}, needs: semNeeds, units: 1}
	if h.wait != nil {
		q, _ := handoff.ReleaseKeys(h.wait.companions, h.keys[:1]) // line, liveness set: checked to exist
		c.keys = []string{h.keys[0], h.keys[1], q[1], q[2]}
		c.args = append(c.args, argFenced) // "1": hand the slot over
	}
	return c
}
