package redislock

import (
	"context"
	"errors"
	"time"

	"github.com/redislock/redislock/internal/lease"
	"github.com/redislock/redislock/internal/observe"
)

// observation is what a handle with hooks records for them: a Lock, a
// Permit, a read or write hold, a leadership. A handle without hooks has
// none (a nil pointer), so its hot path checks one pointer; every method
// of observation accepts a nil receiver and then does nothing.
type observation struct {
	hooks  []Hook
	kind   Kind
	keys   []string // the events' Keys
	lock   *Lock    // the events' Lock: the handle, for KindLock only, once the obtain returned it
	handle Handle   // the events' Handle, once the obtain returned it
	ttl    time.Duration
	hold   observe.Hold // the obtain call's start, then the hold's

	attempts observe.Attempts // the obtain call's, by its goroutine only
	keyBuf   [1]string        // keys' storage for the primitives' one name
}

// observe returns the observation of an obtain call of kind for ttl,
// for the Client's hooks, or nil when it has none. Its events name keys,
// or, when name is not empty, name alone.
func (c *Client) observe(kind Kind, name string, keys []string, ttl time.Duration) *observation {
	list := c.hooks.Load()
	if list == nil {
		return nil
	}
	o := &observation{hooks: list.hooks, kind: kind, keys: keys, ttl: ttl}
	if name != "" {
		o.keyBuf[0] = name
		o.keys = o.keyBuf[:]
	}
	return o
}

// obtainStart reports the start of the obtain call; it returns the
// context for the call.
func (o *observation) obtainStart(ctx context.Context) context.Context {
	if o == nil {
		return ctx
	}
	o.hold.Start = time.Now()
	e := ObtainEvent{Kind: o.kind, Keys: o.keys, TTL: o.ttl}
	return observe.Starting(ctx, o.hooks, func(h Hook, ctx context.Context) context.Context { return h.ObtainStart(ctx, e) })
}

// attempt reports an attempt: obtained, or not (err nil: held by another).
func (o *observation) attempt(ctx context.Context, obtained bool, err error) {
	if o == nil {
		return
	}
	a := o.attempts.Next(obtained && err == nil)
	e := AttemptEvent{Kind: o.kind, Keys: o.keys, Attempt: a.N, Err: err, Blocked: a.Blocked, HandedOver: a.HandedOver}
	e.Outcome = outcomes[observe.ResultOf(obtained, err)]
	observe.Each(o.hooks, func(h Hook) { h.ObtainAttempt(ctx, e) })
}

// outcomes are the Outcomes of observe's Results.
var outcomes = [...]Outcome{observe.Obtained: OutcomeObtained, observe.NotObtained: OutcomeNotObtained,
	observe.Failed: OutcomeError}

// obtained reports the end of the obtain call, which returns handle, or
// err (handle is then ignored). A call that ends with [ErrNotObtained], or
// with [ErrLockNotHeld] (a downgrade of a lost write lock), has the
// outcome not obtained.
func (o *observation) obtained(ctx context.Context, handle Handle, err error) {
	if o == nil {
		return
	}
	now := time.Now()
	e := ObtainEvent{
		Kind:     o.kind,
		Keys:     o.keys,
		TTL:      o.ttl,
		Err:      err,
		Attempts: o.attempts.N(),
		Wait:     waitModes[o.attempts.Wait()],
		Duration: now.Sub(o.hold.Start),
	}
	switch {
	case err == nil:
		o.handle = handle
		if o.kind == KindLock {
			o.lock, _ = handle.(*Lock)
		}
		e.Lock, e.Handle, e.Outcome, e.HandedOver = o.lock, handle, OutcomeObtained, o.attempts.HandedOver()
		o.hold.Begin(now)
	case errors.Is(err, ErrNotObtained), errors.Is(err, ErrLockNotHeld):
		e.Outcome = OutcomeNotObtained
	default:
		e.Outcome = OutcomeError
	}
	observe.Each(o.hooks, func(h Hook) { h.ObtainDone(ctx, e) })
}

// waitModes are the WaitModes of observe's Waits.
var waitModes = [...]WaitMode{observe.None: WaitNone, observe.Polled: WaitPolled, observe.Events: WaitEvents}

// releaseStart reports the start of a release; it returns the context for
// it, and the time it started (zero without hooks).
func (o *observation) releaseStart(ctx context.Context) (context.Context, time.Time) {
	if o == nil {
		return ctx, time.Time{}
	}
	e := ReleaseEvent{Kind: o.kind, Keys: o.keys, Lock: o.lock, Handle: o.handle}
	ctx = observe.Starting(ctx, o.hooks, func(h Hook, ctx context.Context) context.Context { return h.ReleaseStart(ctx, e) })
	return ctx, time.Now()
}

// released reports the end of a release that began at start, handed over
// handedOver keys and returns err.
func (o *observation) released(ctx context.Context, start time.Time, handedOver int, err error) {
	if o == nil {
		return
	}
	now := time.Now()
	e := ReleaseEvent{Kind: o.kind, Keys: o.keys, Lock: o.lock, Handle: o.handle, Err: err, HandedOver: handedOver, Duration: now.Sub(start)}
	e.Held, e.EndsHold = o.hold.End(now)
	observe.Each(o.hooks, func(h Hook) { h.ReleaseDone(ctx, e) })
}

// refreshStart reports the start of a refresh to ttl; it returns the
// context for it, and the time it started (zero without hooks).
func (o *observation) refreshStart(ctx context.Context, ttl time.Duration, keepAlive bool) (context.Context, time.Time) {
	if o == nil {
		return ctx, time.Time{}
	}
	e := RefreshEvent{Kind: o.kind, Keys: o.keys, Lock: o.lock, Handle: o.handle, TTL: ttl, KeepAlive: keepAlive}
	ctx = observe.Starting(ctx, o.hooks, func(h Hook, ctx context.Context) context.Context { return h.RefreshStart(ctx, e) })
	return ctx, time.Now()
}

// refreshed reports the end of a refresh that began at start.
func (o *observation) refreshed(ctx context.Context, start time.Time, ttl time.Duration, keepAlive bool, err error) {
	if o == nil {
		return
	}
	e := RefreshEvent{Kind: o.kind, Keys: o.keys, Lock: o.lock, Handle: o.handle, TTL: ttl, KeepAlive: keepAlive, Err: err, Duration: time.Since(start)}
	observe.Each(o.hooks, func(h Hook) { h.RefreshDone(ctx, e) })
}

// refreshing reports the start of a keep-alive's refresh to ttl; it
// returns its context and what reports its end (nil without hooks).
func (o *observation) refreshing(ctx context.Context, ttl time.Duration) (context.Context, func(error)) {
	if o == nil {
		return ctx, nil
	}
	ctx, start := o.refreshStart(ctx, ttl, true)
	return ctx, func(err error) {
		if errors.Is(err, lease.ErrNotHeld) {
			err = ErrNotObtained // the engine's word stays inside
		}
		o.refreshed(ctx, start, ttl, true, err)
	}
}

// ended returns what a keep-alive calls when it ends, or nil without
// hooks: it reports the loss of the handle, unless it was only stopped.
func (o *observation) ended() func(lease.End, error) {
	if o == nil {
		return nil
	}
	return func(end lease.End, err error) {
		if end.Reason == lease.Stopped {
			return
		}
		e := LostEvent{Kind: o.kind, Keys: o.keys, Lock: o.lock, Handle: o.handle, Err: err, Reason: lostReasons[end.Cause()]}
		e.Held, e.EndsHold = o.hold.End(time.Now())
		observe.Each(o.hooks, func(h Hook) { h.Lost(e) })
	}
}

// attempted returns what an event-driven wait ([handoff.Request]'s
// Attempted) calls after each attempt, or nil without hooks. An attempt
// sent with a block that obtains the handle is reported as handed over:
// the engine does not tell a grant from a holder that expired during the
// block.
func (o *observation) attempted(ctx context.Context) func(obtained, blocked bool, err error) {
	if o == nil {
		return nil
	}
	return func(obtained, blocked bool, err error) {
		if blocked {
			o.attempts.Block(obtained)
		}
		o.attempt(ctx, obtained, err)
	}
}

// lostReasons are the [LostReason]s of the lease's Causes.
var lostReasons = [...]LostReason{lease.CauseGone: LostGone, lease.CauseTaken: LostTaken,
	lease.CauseExpired: LostExpired, lease.CauseMaxHold: LostMaxHold, lease.CauseError: LostError}

// observeAttach gives an attached handle the hooks of c, if any: its
// releases and refreshes are reported, but it never counts as held.
func (c *Client) observeAttach(h *handle) {
	if h.obs = c.observe(KindLock, "", h.keys, 0); h.obs != nil {
		h.obs.lock = (*Lock)(h)
		h.obs.handle = h.obs.lock
	}
}
