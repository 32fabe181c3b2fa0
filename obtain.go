package redislock

import (
	"context"
	"time"

	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/retry"
	"github.com/redislock/redislock/internal/script"
)

// An acquisition is one obtain call of any primitive, as the shared
// [Client.acquire] runs it: the handle it fills, the attempt it sends,
// and the primitive's part of a wait for [WaitForRelease]. The primitive
// checks its input and builds it; acquire observes it, retries or waits,
// and records the lease.
type acquisition struct {
	h        *handle
	ttl      time.Duration
	strategy RetryStrategy
	minHold  time.Duration // Options.MinHold
	kind     Kind          // for the hooks
	name     string        // the hooks' key, for the kinds that have one name
	// inCall: the acquisition is part of an obtain call that its caller
	// observes (a Campaign's rounds), as obs, which may be nil.
	inCall bool
	obs    *observation

	// attempt is one attempt of a polling strategy; a first attempt that
	// is plain may be sent as one (call.plain), later ones never are.
	attempt call
	// held reads an attempt's reply: obtained (the reply is then the
	// fence token), or not; an error ends the call. Nil: obtained when
	// the reply is at least 0.
	held func(reply int64) (obtained bool, err error)

	// wait is the primitive's part of a wait for WaitForRelease (Keys,
	// Obtain, CallKeys, CallArgs, PollArgs, Leave, Shared, ID,
	// Registered, Requeue); acquire fills in the rest. handsOver:
	// the handle's release then hands its keys over (h.wait).
	wait      handoff.Request
	handsOver bool

	// confirm, when set, runs after the keys were obtained and before
	// the call reports its end (MinReplicas); its error fails the call.
	confirm func(ctx context.Context) error
	// failed, when set, runs when the call fails, and returns its error.
	failed func(ctx context.Context, err error, waited bool) error
}

// acquire runs a: attempts as a.strategy says (through the retry loop, or
// the handoff engine for WaitForRelease on a backend that can block), the
// lease recorded from the attempt that took the keys, and the hooks told
// of the call's start, attempts and end. It returns the call's error.
func (c *Client) acquire(ctx context.Context, a *acquisition) error {
	h := a.h
	own := !a.inCall
	if own {
		h.obs = c.observe(a.kind, a.name, h.keys, a.ttl)
		ctx = h.obs.obtainStart(ctx)
	} else {
		h.obs = a.obs
	}
	plan, waiting := retry.PlanOf(a.strategy)
	waiting = waiting && h.be.redis() != nil
	if h.obs != nil || waiting {
		h.setToken() // a hook or a wait sees it
	}
	var err error
	if waiting {
		err = c.wait(ctx, a, plan)
	} else {
		err = c.poll(ctx, a)
	}
	if err != nil {
		err = typed(ctx, h.be.redis(), a.attempt.keys, a.attempt.needs, err)
	}
	if err == nil && a.confirm != nil {
		err = a.confirm(ctx)
	}
	if err == nil && a.minHold > 0 {
		hold := time.Now().Add(a.minHold)
		h.hold = &hold
	}
	if err != nil && a.failed != nil {
		err = a.failed(ctx, err, waiting)
	}
	if own {
		h.obs.obtained(ctx, h.kind.public(h), err)
	}
	if err == nil {
		h.setToken()
	}
	return err
}

// poll is acquire's retry loop: attempts as a.strategy says, the first
// one plain when a.attempt is.
func (c *Client) poll(ctx context.Context, a *acquisition) error {
	h := a.h
	sent := time.Now() // the call's start is its first attempt's send time
	l := retry.Begin(ctx, sent, a.ttl, a.strategy, script.Transient)
	defer l.Stop()
	for call := a.attempt; ; call.plain, sent = false, time.Now() {
		reply, err := h.be.run(l.Context(), h, call)
		obtained, final := err == nil && reply >= 0, error(nil)
		if err == nil && a.held != nil {
			obtained, final = a.held(reply)
		}
		h.obs.attempt(l.Context(), obtained, err)
		switch {
		case final != nil:
			return final
		case obtained:
			h.fence = reply
			h.lease.Obtained(sent, a.ttl)
			return nil
		}
		if !l.Again(err) {
			return loopErr(l.Err())
		}
	}
}

// wait is acquire's wait for WaitForRelease, through the handoff engine.
// On success the handle has its fence token, its lease, and what its
// release needs to hand over.
func (c *Client) wait(ctx context.Context, a *acquisition, plan retry.Plan) error {
	h := a.h
	req := &waitRequest{Request: a.wait, plan: plan.Fallback}
	req.Client = h.be.redis()
	req.TTL = a.ttl
	req.Backoff = req.backoff
	req.MaxAttempts = plan.Attempts
	req.Transient = script.Transient
	req.Attempted = h.obs.attempted(ctx)
	out, err := c.registry.Wait(ctx, &req.Request)
	if out.Obtained {
		// A lease obtained at the end of a block counts from the block's
		// start: the script ran at some point after it.
		h.fence = out.Value
		h.lease.Obtained(out.Sent, a.ttl)
		if a.handsOver {
			req.waited = waited{companions: out.Companions, hint: &c.requeue, again: err == nil && out.Alone, ttl: a.ttl}
			h.wait = &req.waited
		}
	}
	if err == nil {
		return nil
	}
	return handoff.Failed(ctx, out, err, a.wait.Keys, ErrNotObtained, ErrUnexpectedReply, releaseTimeout, func(rctx context.Context) {
		if h.wait != nil {
			h.wait.hint = nil // given back, not released by the caller: no requeue
		}
		_, _, _ = h.releaseOnce(rctx)
	})
}

// waitRequest is the wait of one acquisition, with its fallback, which
// starts when the wait first needs it (most waits never do), and the
// waiting state of the handle it obtains (allocated with it).
type waitRequest struct {
	handoff.Request
	plan, fallback RetryStrategy
	waited         waited
}

func (r *waitRequest) backoff() time.Duration {
	if r.fallback == nil {
		r.fallback = retry.Start(r.plan)
	}
	return r.fallback.NextBackoff()
}

// replace releases h into the lease that a acquires in one script (a
// write lock downgraded to a read hold): h's keep-alive stops first, and
// the hooks see h's release around a's obtain call.
func (c *Client) replace(ctx context.Context, h *handle, a *acquisition) error {
	h.lease.Released()
	ctx, start := h.obs.releaseStart(ctx)
	err := c.acquire(ctx, a)
	h.obs.released(ctx, start, 0, err)
	return err
}

// observed runs one obtain call, observed as kind on name, made of rounds
// (a Campaign's): each calls round with the call's observation, which the
// obtains of the round report their attempts to, until it returns a
// handle or an error (neither: another round).
func (c *Client) observed(ctx context.Context, kind Kind, name string, ttl time.Duration, round func(context.Context, *observation) (Handle, error)) (Handle, error) {
	obs := c.observe(kind, name, nil, ttl)
	ctx = obs.obtainStart(ctx)
	for {
		got, err := round(ctx, obs)
		if got != nil || err != nil {
			obs.obtained(ctx, got, err)
			return got, err
		}
	}
}
