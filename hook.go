package redislock

import (
	"context"
	"sync/atomic"
)

// Hook observes what the handles of a [Client] do: each obtain call and
// its attempts, each release and refresh, each loss that a keep-alive
// signals. Add one with [Client.AddHook]; embed [NopHook] to implement
// only some methods. docs/observability.md lists what each primitive
// reports; extra/redislockotel and extra/redislockprom are hooks.
//
// Events are passed by value; their Keys (a lock's keys, or the name of
// another primitive) must not be modified. A Start method returns the
// context the operation then runs under (ctx, or one derived from it; nil
// means ctx). The other methods must not block: they run on the caller's
// goroutine, and a keep-alive's on its own. A hook is called from every
// goroutine that uses the handles: it must be safe for concurrent use.
//
// A hook cannot delay or undo what it observes (see Lost), and a panic in
// a hook is recovered and dropped, as if it had returned (a Start method's
// context is then the one it was given).
type Hook interface {
	// ObtainStart is called when an obtain call has checked its arguments
	// and is about to make its first attempt. Calls rejected for bad input
	// are not reported.
	ObtainStart(ctx context.Context, e ObtainEvent) context.Context
	// ObtainAttempt is called after each attempt of the call, with its result.
	ObtainAttempt(ctx context.Context, e AttemptEvent)
	// ObtainDone is called once when the call returns, with its result.
	ObtainDone(ctx context.Context, e ObtainEvent)

	// ReleaseStart is called when a release ([Lock.Release] and the
	// others) is about to be sent, after the keep-alive, if any, stopped.
	ReleaseStart(ctx context.Context, e ReleaseEvent) context.Context
	// ReleaseDone is called once when the release returns, with its result.
	ReleaseDone(ctx context.Context, e ReleaseEvent)

	// RefreshStart is called when a Refresh call ([Lock.Refresh] and the
	// others) begins, and before each refresh that a keep-alive sends
	// ([RefreshEvent.KeepAlive]).
	RefreshStart(ctx context.Context, e RefreshEvent) context.Context
	// RefreshDone is called once when that refresh or call returns.
	RefreshDone(ctx context.Context, e RefreshEvent)

	// Lost is called once when a keep-alive ([Lock.KeepAlive] and the
	// others, a [Leadership]'s too) ends because its handle is lost, or
	// about to be; not when it is stopped. It is called after [KeepAlive.Done]
	// is closed and the keep-alive's contexts are cancelled; a refresh in
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
func (k Kind) String() string { return name(k, "lock", "semaphore", "read", "write", "election") }

// Handle is the handle an event is about, of the type that its Kind names.
// Its Token names the holder on Redis; switch on its type to reach the
// rest. A hook must not release or refresh it: that is its caller's
// business.
type Handle interface {
	Token() string
}

// AddHook adds h to the hooks of c: the obtain calls that start after it
// returns, and the locks they obtain (their releases, refreshes and
// keep-alives), report to it; locks obtained before keep the hooks they
// were obtained with (docs/observability.md). Hooks are called in the
// order they were added. It is safe for concurrent use, also with calls in
// flight. A nil h, or a nil c, is ignored.
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

type clientHooks = atomic.Pointer[hookList]
