package redislock

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/redislock/redislock/internal/lease"
)

// Hook observes the locks of a [Client], and the other primitives made
// from it: each obtain call and its attempts, each release and refresh,
// and each handle that a keep-alive loses. Add one with [Client.AddHook];
// extra/redislockotel and extra/redislockprom are hooks that record
// metrics and traces. Embed [NopHook] to implement only the methods of
// interest.
//
// The events are passed by value; their Keys slice is the handle's own and
// must not be modified. The Start methods return the context that the
// operation then runs under (the scripts it sends, and the matching Done
// call), so a hook can start a span there: ctx itself, to change nothing
// (a nil return is taken as ctx), or a context derived from it, since its
// deadline and cancellation still bound the operation. The other methods
// must not block: they run on the caller's goroutine, between round trips,
// and [Hook.Lost] and the refreshes of a keep-alive run on the
// keep-alive's goroutine. A hook is called concurrently from every
// goroutine that uses the Client's handles, so it must be safe for
// concurrent use.
//
// Kind says which primitive an event is about, and Handle which handle.
// The Lock field is set for locks only: a hook written when only locks
// reported compiles and works as it did, and sees the other kinds with a
// nil Lock (check Kind to skip them). The primitives report through the
// same methods:
//
//   - [KindLock]: [Client.Obtain] and [Client.ObtainMulti] are the obtain
//     calls; [Lock.Release], [Lock.Refresh] and [Lock.KeepAlive] the rest.
//   - [KindSemaphore]: [Semaphore.Acquire] is the obtain call, and a
//     [Permit]'s Release, Refresh and KeepAlive the rest. Keys is the
//     semaphore's key.
//   - [KindRead] and [KindWrite]: [RWMutex.RLock] and [RWMutex.Lock] are
//     the obtain calls, and the [ReadLock]'s or [WriteLock]'s Release,
//     Refresh and KeepAlive the rest. [WriteLock.Downgrade] reports the
//     release of the write lock around the obtain call of the read hold
//     (one attempt). Keys is the RWMutex's name.
//   - [KindElection]: [Election.Campaign] (and [Election.Run]) is one
//     obtain call, however long it waits, whose attempts are those of its
//     obtains of the election key; [Leadership.Resign] is the release
//     (HandedOver 1 when a waiting campaigner was elected by it), the
//     leadership's keep-alive refreshes with KeepAlive set, and the loss of
//     the leadership is Lost. Keys is the election's name. A Campaign
//     elected whose keep-alive cannot start (its lease ran out while it
//     announced itself) reports its obtain call done, a release, and a new
//     obtain call for the campaign that goes on.
type Hook interface {
	// ObtainStart is called when an obtain call has checked its arguments
	// and is about to make its first attempt. Calls rejected for bad input
	// are not reported.
	ObtainStart(ctx context.Context, e ObtainEvent) context.Context
	// ObtainAttempt is called after each attempt of the call, with its
	// result.
	ObtainAttempt(ctx context.Context, e AttemptEvent)
	// ObtainDone is called once when the call returns, with its result.
	ObtainDone(ctx context.Context, e ObtainEvent)

	// ReleaseStart is called when a release ([Lock.Release] and the
	// others, see Kind) is about to send its script (after the
	// keep-alive, if any, was stopped).
	ReleaseStart(ctx context.Context, e ReleaseEvent) context.Context
	// ReleaseDone is called once when the release returns, with its
	// result.
	ReleaseDone(ctx context.Context, e ReleaseEvent)

	// RefreshStart is called when a Refresh call ([Lock.Refresh] and the
	// others) begins, and before each refresh that a keep-alive sends
	// ([RefreshEvent.KeepAlive]).
	RefreshStart(ctx context.Context, e RefreshEvent) context.Context
	// RefreshDone is called once when that refresh or call returns.
	RefreshDone(ctx context.Context, e RefreshEvent)

	// Lost is called once when a keep-alive ([Lock.KeepAlive] and the
	// others, and a [Leadership]'s) ends because its handle is lost, or
	// about to be; not when it is stopped. It
	// is called before [KeepAlive.Done] is closed. A refresh that was in
	// flight then may report its RefreshDone after it.
	Lost(e LostEvent)
}

// NopHook is a [Hook] that does nothing. Embed it in a hook that implements
// only some of the methods.
type NopHook struct{}

// ObtainStart returns ctx.
func (NopHook) ObtainStart(ctx context.Context, _ ObtainEvent) context.Context { return ctx }

// ObtainAttempt does nothing.
func (NopHook) ObtainAttempt(context.Context, AttemptEvent) {}

// ObtainDone does nothing.
func (NopHook) ObtainDone(context.Context, ObtainEvent) {}

// ReleaseStart returns ctx.
func (NopHook) ReleaseStart(ctx context.Context, _ ReleaseEvent) context.Context { return ctx }

// ReleaseDone does nothing.
func (NopHook) ReleaseDone(context.Context, ReleaseEvent) {}

// RefreshStart returns ctx.
func (NopHook) RefreshStart(ctx context.Context, _ RefreshEvent) context.Context { return ctx }

// RefreshDone does nothing.
func (NopHook) RefreshDone(context.Context, RefreshEvent) {}

// Lost does nothing.
func (NopHook) Lost(LostEvent) {}

// Kind is the primitive that an event is about.
type Kind uint8

// The kinds of primitive.
const (
	KindLock      Kind = iota + 1 // a [Lock]
	KindSemaphore                 // a [Permit] of a [Semaphore]
	KindRead                      // a [ReadLock] of an [RWMutex]
	KindWrite                     // a [WriteLock] of an [RWMutex]
	KindElection                  // a [Leadership] of an [Election]
)

// String returns "lock", "semaphore", "read", "write" or "election".
func (k Kind) String() string {
	switch k {
	case KindLock:
		return "lock"
	case KindSemaphore:
		return "semaphore"
	case KindRead:
		return "read"
	case KindWrite:
		return "write"
	case KindElection:
		return "election"
	}
	return "unknown"
}

// Handle is the handle an event is about, as its Kind says: a *[Lock]
// (KindLock), *[Permit] (KindSemaphore), *[ReadLock] (KindRead),
// *[WriteLock] (KindWrite) or *[Leadership] (KindElection). Its Token
// names the holder on Redis; switch on its type to reach the rest. A
// hook must not release or refresh it: that is its caller's business.
type Handle interface {
	Token() string
}

// Outcome is the result of an obtain call or of one attempt.
type Outcome uint8

// The outcomes of an obtain call or attempt.
const (
	// OutcomeObtained: the lock was taken.
	OutcomeObtained Outcome = iota + 1
	// OutcomeNotObtained: the lock is held by another; for a call, the
	// error matches [ErrNotObtained] (the strategy gave up, or the context
	// ended while waiting).
	OutcomeNotObtained
	// OutcomeError: Redis failed (for an attempt, possibly a transient
	// error that the call retries), or the call ended with another error.
	OutcomeError
)

// String returns "obtained", "not_obtained" or "error".
func (o Outcome) String() string {
	switch o {
	case OutcomeObtained:
		return "obtained"
	case OutcomeNotObtained:
		return "not_obtained"
	case OutcomeError:
		return "error"
	}
	return "unknown"
}

// WaitMode says how an obtain call waited for the lock.
type WaitMode uint8

// The ways of waiting.
const (
	// WaitNone: the first attempt decided; the call did not wait.
	WaitNone WaitMode = iota + 1
	// WaitPolled: the call slept between attempts.
	WaitPolled
	// WaitEvents: some attempt followed a block on Redis waiting for a
	// release ([WaitForRelease]).
	WaitEvents
)

// String returns "none", "poll" or "event".
func (w WaitMode) String() string {
	switch w {
	case WaitNone:
		return "none"
	case WaitPolled:
		return "poll"
	case WaitEvents:
		return "event"
	}
	return "unknown"
}

// LostReason says why a keep-alive lost its lock.
type LostReason uint8

// The reasons for losing a lock.
const (
	// LostGone: a refresh found a key gone (expired or deleted).
	LostGone LostReason = iota + 1
	// LostTaken: a refresh found a key held by another token (a lock,
	// a write lock or a leadership; permits and read holds are only ever
	// gone).
	LostTaken
	// LostExpired: the lease ran out on the local clock without a
	// successful refresh, while Redis failed, hung or was unreachable.
	LostExpired
	// LostMaxHold: [KeepAliveOptions.MaxHold] was reached.
	LostMaxHold
	// LostError: a refresh failed with an error that is not transient.
	LostError
)

// String returns "gone", "taken", "expired", "max_hold" or "error".
func (r LostReason) String() string {
	switch r {
	case LostGone:
		return "gone"
	case LostTaken:
		return "taken"
	case LostExpired:
		return "expired"
	case LostMaxHold:
		return "max_hold"
	case LostError:
		return "error"
	}
	return "unknown"
}

// ObtainEvent describes an obtain call ([Client.Obtain],
// [Client.ObtainMulti], and the others of [Hook]). ObtainStart sees the
// first three fields; ObtainDone sees them all.
type ObtainEvent struct {
	Kind Kind
	Keys []string      // the lock keys, in the caller's order (see [Hook] for the other kinds)
	TTL  time.Duration // as asked

	Lock       *Lock         // the lock obtained, or nil (always nil for kinds other than KindLock)
	Handle     Handle        // the handle obtained, of any kind, or nil
	Outcome    Outcome       // the call's result
	Err        error         // the error the call returns, or nil
	Attempts   int           // attempts made (scripts sent), at least 1
	Wait       WaitMode      // how the call waited
	HandedOver bool          // obtained with a grant: another holder's Release handed it over
	Duration   time.Duration // from ObtainStart to ObtainDone
}

// AttemptEvent describes one attempt of an obtain call.
type AttemptEvent struct {
	Kind Kind
	Keys []string

	Attempt    int     // 1 for the first
	Outcome    Outcome // OutcomeNotObtained: held by another
	Err        error   // the Redis error of an attempt with OutcomeError
	Blocked    bool    // sent after a block on Redis waiting for a release ([WaitForRelease])
	HandedOver bool    // obtained with the grant of a release
}

// ReleaseEvent describes a [Lock.Release] call, or a release of another
// kind (see [Hook]). ReleaseStart sees the first four fields; ReleaseDone
// sees them all.
type ReleaseEvent struct {
	Kind   Kind
	Keys   []string
	Lock   *Lock  // nil for kinds other than KindLock
	Handle Handle // the handle released, of any kind

	Err        error // the error Release returns, or nil
	HandedOver int   // keys handed over to a waiter instead of deleted
	// EndsHold is true for the first release of a handle obtained through
	// this Client, unless a [Hook.Lost] came first: each handle that was
	// reported obtained ends its hold once, by a release or a loss.
	EndsHold bool
	Held     time.Duration // from the obtain to now; 0 unless EndsHold
	Duration time.Duration // of the Release call
}

// RefreshEvent describes a Refresh call ([Lock.Refresh] and the others)
// or a keep-alive's refresh. RefreshStart sees every field but Err and
// Duration.
type RefreshEvent struct {
	Kind      Kind
	Keys      []string
	Lock      *Lock  // nil for kinds other than KindLock
	Handle    Handle // the handle refreshed, of any kind
	TTL       time.Duration
	KeepAlive bool // a refresh of a keep-alive ([Lock.KeepAlive] and the others), on its goroutine

	Err      error // nil, [ErrNotObtained] when the lock was lost, or a Redis error
	Duration time.Duration
}

// LostEvent describes a handle that a keep-alive lost.
type LostEvent struct {
	Kind   Kind
	Keys   []string
	Lock   *Lock  // nil for kinds other than KindLock
	Handle Handle // the handle lost, of any kind

	Reason   LostReason
	Err      error         // [KeepAlive.Err]
	EndsHold bool          // as for [ReleaseEvent.EndsHold]
	Held     time.Duration // from the obtain to now; 0 unless EndsHold
}

// AddHook adds h to the hooks of c: the obtain calls that start after it
// returns, and the locks they obtain (their releases, refreshes and
// keep-alives), report to it. Locks obtained before keep the hooks they
// were obtained with, so that each lock reports its whole life to the same
// hooks. Hooks are called in the order they were added. It is safe for
// concurrent use, also with calls in flight; add hooks before use all the
// same, or the first locks go unobserved. A nil h, or a nil c, is ignored.
//
// With no hook, observing costs a nil check per step and allocates nothing.
func (c *Client) AddHook(h Hook) {
	if c == nil || h == nil {
		return
	}
	for {
		old := c.hooks.Load()
		next := &hookList{}
		if old != nil {
			next.hooks = append(next.hooks, old.hooks...)
		}
		next.hooks = append(next.hooks, h)
		if c.hooks.CompareAndSwap(old, next) {
			return
		}
	}
}

// hookList is an immutable list of hooks: AddHook replaces it whole.
type hookList struct {
	hooks []Hook
}

// clientHooks is the Client's field that holds its hooks.
type clientHooks = atomic.Pointer[hookList]

// observation is what a handle with hooks records for them: a Lock, a
// Permit, a read or write hold, a leadership. A handle without hooks has
// none (a nil pointer), so its hot path checks one pointer; every method
// of observation accepts a nil receiver and then does nothing.
type observation struct {
	hooks  []Hook
	kind   Kind
	keys   []string // the events' Keys
	lock   *Lock    // the events' Lock: the handle, for KindLock only
	handle Handle   // the events' Handle, once the obtain returned it
	ttl    time.Duration
	start  time.Time // the obtain call's start, then the handle's obtain

	// Written by the obtain call's goroutine only, before it returns.
	attempts   int
	blocked    bool // some attempt followed a block on Redis
	nextBlock  bool // the next attempt follows a block
	nextGrant  bool // that block moved a grant
	handedOver bool // obtained with a grant
	done       bool // ObtainDone was reported

	holding atomic.Bool // obtained, and its hold not yet ended
	keyBuf  [1]string   // keys' storage for the primitives' one name
}

// observe returns the observation of a handle of kind on key, for hooks,
// or nil when hooks has none.
func observe(hooks *clientHooks, kind Kind, key string, ttl time.Duration) *observation {
	if hooks == nil {
		return nil
	}
	list := hooks.Load()
	if list == nil {
		return nil
	}
	o := &observation{hooks: list.hooks, kind: kind, ttl: ttl}
	o.keyBuf[0] = key
	o.keys = o.keyBuf[:]
	return o
}

// observeObtain gives lock the hooks of c, if any, and reports the start
// of its obtain call for ttl; it returns the context for the call.
func (c *Client) observeObtain(ctx context.Context, lock *Lock, ttl time.Duration) context.Context {
	list := c.hooks.Load()
	if list == nil {
		return ctx
	}
	lock.obs = &observation{hooks: list.hooks, kind: KindLock, keys: lock.keys, lock: lock, handle: lock, ttl: ttl}
	return lock.obs.obtainStart(ctx)
}

// observeAttach gives an attached lock the hooks of c, if any: its
// releases and refreshes are reported, but it never counts as held.
func (c *Client) observeAttach(lock *Lock) {
	if list := c.hooks.Load(); list != nil {
		lock.obs = &observation{hooks: list.hooks, kind: KindLock, keys: lock.keys, lock: lock, handle: lock}
	}
}

// obtainStart reports the start of the obtain call; it returns the
// context for the call.
func (o *observation) obtainStart(ctx context.Context) context.Context {
	if o == nil {
		return ctx
	}
	o.start = time.Now()
	e := ObtainEvent{Kind: o.kind, Keys: o.keys, TTL: o.ttl}
	for _, h := range o.hooks {
		if next := h.ObtainStart(ctx, e); next != nil {
			ctx = next
		}
	}
	return ctx
}

// blockedNext records that the next attempt follows a block on Redis, and
// whether that block moved a grant to the waiter.
func (o *observation) blockedNext(granted bool) {
	if o != nil {
		o.nextBlock, o.nextGrant = true, granted
	}
}

// attempt reports an attempt: obtained, or not (err nil: held by another).
func (o *observation) attempt(ctx context.Context, obtained bool, err error) {
	if o == nil {
		return
	}
	o.attempts++
	e := AttemptEvent{Kind: o.kind, Keys: o.keys, Attempt: o.attempts, Err: err, Blocked: o.nextBlock}
	switch {
	case err != nil:
		e.Outcome = OutcomeError
	case obtained:
		e.Outcome = OutcomeObtained
		e.HandedOver = o.nextGrant
		o.handedOver = o.nextGrant
	default:
		e.Outcome = OutcomeNotObtained
	}
	o.blocked = o.blocked || o.nextBlock
	o.nextBlock, o.nextGrant = false, false
	for _, h := range o.hooks {
		h.ObtainAttempt(ctx, e)
	}
}

// obtained reports the end of the obtain call, which returns handle, or
// err (handle is then ignored). A call that ends with [ErrNotObtained], or
// with notHeld when it is not nil, has the outcome not obtained.
func (o *observation) obtained(ctx context.Context, handle Handle, err, notHeld error) {
	if o == nil {
		return
	}
	now := time.Now()
	e := ObtainEvent{
		Kind:     o.kind,
		Keys:     o.keys,
		TTL:      o.ttl,
		Err:      err,
		Attempts: o.attempts,
		Wait:     WaitNone,
		Duration: now.Sub(o.start),
	}
	switch {
	case err == nil:
		o.handle = handle
		e.Lock, e.Handle, e.Outcome, e.HandedOver = o.lock, handle, OutcomeObtained, o.handedOver
		o.start = now
		o.holding.Store(true)
	case errors.Is(err, ErrNotObtained), notHeld != nil && errors.Is(err, notHeld):
		e.Outcome = OutcomeNotObtained
	default:
		e.Outcome = OutcomeError
	}
	switch {
	case o.blocked:
		e.Wait = WaitEvents
	case o.attempts > 1:
		e.Wait = WaitPolled
	}
	o.done = true
	for _, h := range o.hooks {
		h.ObtainDone(ctx, e)
	}
}

// reported says whether the obtain call's end was reported (false without
// hooks).
func (o *observation) reported() bool { return o != nil && o.done }

// releaseStart reports the start of a release; it returns the context for
// it, and the time it started (zero without hooks).
func (o *observation) releaseStart(ctx context.Context) (context.Context, time.Time) {
	if o == nil {
		return ctx, time.Time{}
	}
	e := ReleaseEvent{Kind: o.kind, Keys: o.keys, Lock: o.lock, Handle: o.handle}
	for _, h := range o.hooks {
		if next := h.ReleaseStart(ctx, e); next != nil {
			ctx = next
		}
	}
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
	if o.holding.CompareAndSwap(true, false) {
		e.EndsHold, e.Held = true, now.Sub(o.start)
	}
	for _, h := range o.hooks {
		h.ReleaseDone(ctx, e)
	}
}

// refreshStart reports the start of a refresh to ttl; it returns the
// context for it, and the time it started (zero without hooks).
func (o *observation) refreshStart(ctx context.Context, ttl time.Duration, keepAlive bool) (context.Context, time.Time) {
	if o == nil {
		return ctx, time.Time{}
	}
	e := RefreshEvent{Kind: o.kind, Keys: o.keys, Lock: o.lock, Handle: o.handle, TTL: ttl, KeepAlive: keepAlive}
	for _, h := range o.hooks {
		if next := h.RefreshStart(ctx, e); next != nil {
			ctx = next
		}
	}
	return ctx, time.Now()
}

// refreshed reports the end of a refresh that began at start.
func (o *observation) refreshed(ctx context.Context, start time.Time, ttl time.Duration, keepAlive bool, err error) {
	if o == nil {
		return
	}
	e := RefreshEvent{Kind: o.kind, Keys: o.keys, Lock: o.lock, Handle: o.handle, TTL: ttl, KeepAlive: keepAlive, Err: err, Duration: time.Since(start)}
	for _, h := range o.hooks {
		h.RefreshDone(ctx, e)
	}
}

// hookedRefresh returns refresh, one refresh of a keep-alive to ttl,
// reporting to the hooks when there are some.
func (o *observation) hookedRefresh(ttl time.Duration, refresh func(context.Context) error) func(context.Context) error {
	if o == nil {
		return refresh
	}
	return func(ctx context.Context) error {
		ctx, start := o.refreshStart(ctx, ttl, true)
		err := refresh(ctx)
		reported := err
		if errors.Is(err, lease.ErrNotHeld) {
			reported = ErrNotObtained // the engine's word stays inside
		}
		o.refreshed(ctx, start, ttl, true, reported)
		return err
	}
}

// ended returns what a keep-alive calls when it ends, or nil without
// hooks.
func (o *observation) ended() func(lease.End, error) {
	if o == nil {
		return nil
	}
	return o.lost
}

// lost reports that a keep-alive ended as e says, with err, unless it was
// only stopped.
func (o *observation) lost(e lease.End, err error) {
	if o == nil || e.Reason == lease.Stopped {
		return
	}
	o.lostNow(lostReason(e), err)
}

// lostNow reports the loss of the handle for reason, with err.
func (o *observation) lostNow(reason LostReason, err error) {
	if o == nil {
		return
	}
	ev := LostEvent{Kind: o.kind, Keys: o.keys, Lock: o.lock, Handle: o.handle, Err: err, Reason: reason}
	if o.holding.CompareAndSwap(true, false) {
		ev.EndsHold, ev.Held = true, time.Since(o.start)
	}
	for _, h := range o.hooks {
		h.Lost(ev)
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
			o.blockedNext(obtained)
		}
		o.attempt(ctx, obtained, err)
	}
}

// The Lock's calls of its observation.

// hookAttempted returns what an event-driven wait calls after each
// attempt, or nil when the lock has no hooks. An attempt sent with a block
// that obtains the lock is reported as handed over: the engine does not
// tell a grant from a holder that expired during the block.
func (l *Lock) hookAttempted(ctx context.Context) func(obtained, blocked bool, err error) {
	return l.obs.attempted(ctx)
}

// hookAttempt reports an attempt: obtained, or not (err nil: held by
// another).
func (l *Lock) hookAttempt(ctx context.Context, obtained bool, err error) {
	l.obs.attempt(ctx, obtained, err)
}

// hookObtained reports the end of the obtain call, which returns err (and
// the lock when err is nil).
func (l *Lock) hookObtained(ctx context.Context, err error) {
	l.obs.obtained(ctx, l, err, nil)
}

// hookReleaseStart reports the start of a Release; it returns the context
// for it, and the time it started (zero without hooks).
func (l *Lock) hookReleaseStart(ctx context.Context) (context.Context, time.Time) {
	return l.obs.releaseStart(ctx)
}

// hookReleased reports the end of a Release that began at start, handed
// over handedOver keys and returns err.
func (l *Lock) hookReleased(ctx context.Context, start time.Time, handedOver int, err error) {
	l.obs.released(ctx, start, handedOver, err)
}

// hookRefreshStart reports the start of a refresh to ttl; it returns the
// context for it, and the time it started (zero without hooks).
func (l *Lock) hookRefreshStart(ctx context.Context, ttl time.Duration, keepAlive bool) (context.Context, time.Time) {
	return l.obs.refreshStart(ctx, ttl, keepAlive)
}

// hookRefreshed reports the end of a refresh that began at start.
func (l *Lock) hookRefreshed(ctx context.Context, start time.Time, ttl time.Duration, keepAlive bool, err error) {
	l.obs.refreshed(ctx, start, ttl, keepAlive, err)
}

// hookedRefresh returns refresh, one refresh of a keep-alive to ttl,
// reporting to the lock's hooks when it has some.
func (l *Lock) hookedRefresh(ttl time.Duration, refresh func(context.Context) error) func(context.Context) error {
	return l.obs.hookedRefresh(ttl, refresh)
}

// hookEnded returns what the lock's keep-alive calls when it ends, or nil
// when the lock has no hooks.
func (l *Lock) hookEnded() func(lease.End, error) { return l.obs.ended() }

// lostReason is the [LostReason] of a keep-alive that ended as e says.
func lostReason(e lease.End) LostReason {
	switch e.Reason {
	case lease.NotHeld:
		if errors.Is(e.Err, errTaken) {
			return LostTaken
		}
		return LostGone
	case lease.Expired:
		return LostExpired
	case lease.MaxHoldReached:
		return LostMaxHold
	}
	return LostError
}

// errTaken is the error of a keep-alive's refresh that found a key held by
// another token (the refresh script's reply -1). It matches
// [lease.ErrNotHeld], as a key found gone does, so the engine treats both
// alike; only the hooks tell them apart.
var errTaken error = takenError{}

type takenError struct{}

func (takenError) Error() string { return lease.ErrNotHeld.Error() + ": held by another token" }
func (takenError) Unwrap() error { return lease.ErrNotHeld }
